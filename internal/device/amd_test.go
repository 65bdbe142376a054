package device

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/amdsmi"
	"github.com/gpuwatt/gpuwatt/internal/amdsmi/amdsmitest"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestOpenAMD: --device amdsmi and auto open the AMD GPUs (the fake library's two); auto
// does not fall back to the sim for a library it refuses, it says why.
func TestOpenAMD(t *testing.T) {
	path := amdsmitest.Build(t)
	for _, dev := range []string{"amdsmi", "auto"} {
		var notice bytes.Buffer
		op, err := Open(Spec{Device: dev}, Options{NVMLPaths: noDriver, AMDSMIPaths: []string{path}, Notice: &notice})
		if err != nil {
			t.Fatalf("%s: %v", dev, err)
		}
		devs := op.System.Devices()
		if op.System.Name() != "amdsmi" || op.System.Simulated() || op.Fallback != nil || notice.Len() != 0 || len(devs) != 2 ||
			devs[1].Info().Index != 1 || devs[1].Info().Vendor != trace.VendorAMD {
			t.Errorf("%s: %s, %d GPUs, fallback %v, notice %q", dev, op.System.Name(), len(devs), op.Fallback, notice.String())
		}
		if err := NVIDIAOnly(devs[0], 0); !errors.Is(err, status.ErrInput) || !strings.Contains(err.Error(), "is an AMD GPU (AMD Instinct MI300X (fake))") {
			t.Errorf("NVIDIAOnly = %v", err)
		}
		if _, _, err := (Env{System: op.System, Clock: op.Clock}).KernelGPU(1); err == nil || !strings.Contains(err.Error(), "NVIDIA GPUs only") {
			t.Errorf("KernelGPU on an AMD GPU = %v", err)
		}
		op.System.Close()
	}
	ctl := amdsmitest.Control(t, path)
	ctl.SetVersion(0, 27, 0, 0)
	if _, err := Open(Spec{Device: "auto"}, Options{NVMLPaths: noDriver, AMDSMIPaths: []string{path}}); !errors.Is(err, amdsmi.ErrUnsupportedVersion) {
		t.Errorf("auto with an unknown libamd_smi version: %v, want ErrUnsupportedVersion (not the sim)", err)
	}
}
