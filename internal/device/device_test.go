package device

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/nvml"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

// noDriver points the NVML search at a file that does not exist: no driver, whatever the
// machine has.
var (
	noDriver = []string{"/nonexistent/libnvidia-ml.so.1"}
	noAMD    = []string{"/nonexistent/libamd_smi.so"}
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "v100.json")
	if err := os.WriteFile(cfg, []byte(`{"preset": "v100", "gpus": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"preset": "v100", "no_such_key": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		spec       Spec
		wantName   string // "" : an error is wanted
		wantGPUs   int
		fallback   bool   // auto fell back: a notice on stderr
		usage      bool   // the error is a UsageError
		errHas     string // in the error
		noDriverEr bool   // the error is "no driver" (nvml asked for explicitly)
	}{
		{name: "auto without a driver", spec: Spec{Device: "auto"}, wantName: "sim:h100", wantGPUs: 1, fallback: true},
		{name: "empty is auto", spec: Spec{}, wantName: "sim:h100", wantGPUs: 1, fallback: true},
		{name: "sim", spec: Spec{Device: "sim"}, wantName: "sim:h100", wantGPUs: 1},
		{name: "sim:PRESET", spec: Spec{Device: "sim:v100"}, wantName: "sim:v100", wantGPUs: 1},
		{name: "upper case", spec: Spec{Device: " SIM:K20 "}, wantName: "sim:k20", wantGPUs: 1},
		{name: "sim-config", spec: Spec{Device: "sim", SimConfig: cfg}, wantName: "sim:v100", wantGPUs: 2},
		{name: "sim-config with auto", spec: Spec{SimConfig: cfg}, wantName: "sim:v100", wantGPUs: 2},
		{name: "sim-config agrees", spec: Spec{Device: "sim:v100", SimConfig: cfg}, wantName: "sim:v100", wantGPUs: 2},
		{name: "sim-config contradicts", spec: Spec{Device: "sim:h100", SimConfig: cfg}, usage: true, errHas: "contradicts"},
		{name: "sim-config missing", spec: Spec{Device: "sim", SimConfig: filepath.Join(dir, "nope.json")}, usage: true, errHas: "nope.json"},
		{name: "sim-config bad key", spec: Spec{Device: "sim", SimConfig: bad}, usage: true, errHas: "no_such_key"},
		{name: "sim-config with nvml", spec: Spec{Device: "nvml", SimConfig: cfg}, usage: true, errHas: "--sim-config"},
		{name: "bad value", spec: Spec{Device: "cuda"}, usage: true, errHas: `--device "cuda": want auto, nvml, amdsmi, sim or sim:PRESET (presets: h100, h200, a100, v100, k20, mi300x)`},
		{name: "bad preset", spec: Spec{Device: "sim:p100"}, usage: true, errHas: `unknown preset "p100" (presets: h100, h200, a100, v100, k20, mi300x)`},
		{name: "nvml without a driver", spec: Spec{Device: "nvml"}, noDriverEr: true},
		{name: "amdsmi without ROCm", spec: Spec{Device: "amdsmi"}, errHas: "no AMD GPU driver found: cannot load /nonexistent/libamd_smi.so"},
		{name: "sim-config with amdsmi", spec: Spec{Device: "amdsmi", SimConfig: cfg}, usage: true, errHas: "--sim-config"},
		{name: "sim:mi300x", spec: Spec{Device: "sim:mi300x"}, wantName: "sim:mi300x", wantGPUs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var notice bytes.Buffer
			op, err := Open(tc.spec, Options{NVMLPaths: noDriver, AMDSMIPaths: noAMD, Notice: &notice, Verb: "test", VirtualSim: true})
			if tc.wantName == "" {
				if err == nil {
					op.System.Close()
					t.Fatalf("opened %s, want an error", op.System.Name())
				}
				var u *UsageError
				if got := errors.As(err, &u); got != tc.usage {
					t.Errorf("error %q: usage error %v, want %v", err, got, tc.usage)
				}
				if !strings.Contains(err.Error(), tc.errHas) {
					t.Errorf("error %q does not say %q", err, tc.errHas)
				}
				if tc.noDriverEr && !errors.Is(err, nvml.ErrLibraryNotFound) {
					t.Errorf("error %q: want nvml.ErrLibraryNotFound", err)
				}
				if tc.usage && tc.spec.Validate() == nil && !strings.Contains(tc.name, "sim-config") {
					t.Errorf("Validate accepts %+v", tc.spec)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer op.System.Close()
			if got := op.System.Name(); got != tc.wantName {
				t.Errorf("name %q, want %q", got, tc.wantName)
			}
			if !op.System.Simulated() {
				t.Error("the sim system says it is not simulated")
			}
			if n := len(op.System.Devices()); n != tc.wantGPUs {
				t.Errorf("%d GPUs, want %d", n, tc.wantGPUs)
			}
			if !clock.IsVirtual(op.Clock) {
				t.Error("VirtualSim: the sim did not get a virtual clock")
			}
			if _, ok := op.System.Devices()[0].(gpu.Truth); !ok {
				t.Error("the sim device does not offer its truth (gpu.Truth)")
			}
			lines := strings.Count(notice.String(), "\n")
			if tc.fallback {
				if op.Fallback == nil || lines != 1 || !strings.HasPrefix(notice.String(), "gpuwatt test: ") || !strings.Contains(notice.String(), "using the sim device (sim:h100)") {
					t.Errorf("fallback %v, notice %q: want one line naming the sim device", op.Fallback, notice.String())
				}
			} else if op.Fallback != nil || lines != 0 {
				t.Errorf("fallback %v, notice %q: want none", op.Fallback, notice.String())
			}
		})
	}
}

func TestOpenClock(t *testing.T) {
	// Without VirtualSim the sim runs on a real clock (measure's real process); a given
	// clock is used as it is.
	op, err := Open(Spec{Device: "sim"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if clock.IsVirtual(op.Clock) {
		t.Error("the sim got a virtual clock without VirtualSim")
	}
	v := clock.NewVirtual(time.Time{})
	op, err = Open(Spec{Device: "sim:a100"}, Options{Clock: v, VirtualSim: true})
	if err != nil {
		t.Fatal(err)
	}
	if op.Clock != clock.Clock(v) {
		t.Error("the given clock was not used")
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec   Spec
		kind   Kind
		preset string
	}{
		{Spec{}, Auto, ""},
		{Spec{Device: "auto"}, Auto, ""},
		{Spec{Device: "nvml"}, NVML, ""},
		{Spec{Device: "gpu"}, NVML, ""},
		{Spec{Device: "sim"}, Sim, ""},
		{Spec{Device: "sim:h200"}, Sim, "h200"},
		{Spec{SimConfig: "x.json"}, Sim, ""},
	} {
		k, p, err := tc.spec.Parse()
		if err != nil || k != tc.kind || p != tc.preset {
			t.Errorf("%+v: %v %q %v, want %v %q", tc.spec, k, p, err, tc.kind, tc.preset)
		}
	}
}

func TestKernelGPU(t *testing.T) {
	op, err := Open(Spec{Device: "sim:h100"}, Options{VirtualSim: true})
	if err != nil {
		t.Fatal(err)
	}
	defer op.System.Close()
	env := Env{System: op.System, Clock: op.Clock}
	dev, exec, err := env.KernelGPU(0)
	if err != nil || dev == nil || exec == nil || exec.Props().SMs == 0 {
		t.Fatalf("GPU 0 of the sim: %v, %v, %v", dev, exec, err)
	}
	for _, idx := range []int{-1, 1, 7} {
		if _, _, err := env.KernelGPU(idx); !errors.Is(err, status.ErrInput) || !strings.Contains(err.Error(), "no such GPU") {
			t.Errorf("--gpu %d: error %v, want status.ErrInput naming it", idx, err)
		}
	}
	if _, _, err := (Env{}).KernelGPU(0); err == nil {
		t.Error("no system: want an error")
	}
}

// TestRealOnly: with Options.RealOnly, auto without a driver is a UsageError naming the
// libraries looked for (ErrNoRealGPU), never the sim; sim asked for still opens.
func TestRealOnly(t *testing.T) {
	_, err := Open(Spec{Device: "auto"}, Options{NVMLPaths: noDriver, AMDSMIPaths: noAMD, RealOnly: true})
	var u *UsageError
	if !errors.Is(err, ErrNoRealGPU) || !errors.As(err, &u) || !strings.Contains(err.Error(), noDriver[0]) || !strings.Contains(err.Error(), noAMD[0]) {
		t.Errorf("auto, RealOnly, no driver: %v", err)
	}
	op, err := Open(Spec{Device: "sim"}, Options{NVMLPaths: noDriver, AMDSMIPaths: noAMD, RealOnly: true, VirtualSim: true})
	if err != nil || !op.System.Simulated() {
		t.Fatalf("sim, RealOnly: %v", err)
	}
	op.System.Close()
}
