package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// What docs/README.md and `devices` say of the presets: every verb runs on h100, h200, a100 and
// v100; on k20 the three verbs that run gpuwatt's own kernels cannot (PTX for compute
// capability 7.0 and newer), and `devices` and the verbs say why. By default on h100 and
// k20 (one that runs them, the one that cannot); on every preset where the slow tests run
// (CI).
func TestPresetsRunTheKernelVerbs(t *testing.T) {
	t.Parallel()
	const why = `no PTX target known for sm_35 (gpuwatt generates PTX for compute capability 7.0 to 12.1: Volta and newer)`
	for _, preset := range testkit.Presets(t, []string{"h100", "h200", "a100", "v100", "k20"}, "h100", "k20") {
		dev := "sim:" + preset
		a, stdout, stderr, ctx := testApp(t)
		if code := a.Main(ctx, []string{"devices", "--device", dev, "--json"}); code != 0 {
			t.Fatalf("%s devices: exit %d: %s", dev, code, stderr)
		}
		var rep deviceReport
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.GPUs) != 1 {
			t.Fatalf("%s devices: %v", dev, err)
		}
		k20 := preset == "k20"
		if got := rep.GPUs[0].Kernels; k20 != (got != "") || k20 && !strings.Contains(got, "micro, archline and profile cannot run: ") || k20 && !strings.Contains(got, why) {
			t.Errorf("%s devices: kernels_unsupported %q", dev, got)
		}
		for _, verb := range [][]string{{"micro", "--only", "baseline,fp32.fma"}, {"archline", "--quick", "--precision", "fp32"}, {"profile"}} {
			a, _, stderr, ctx := testApp(t)
			code := a.Main(ctx, append(verb, "--device", dev, "--json", "--quiet"))
			switch {
			case k20 && (code == 0 || !strings.Contains(stderr.String(), why)):
				t.Errorf("%s %s: exit %d, stderr %q; want a failure naming %q", dev, verb[0], code, stderr, why)
			case !k20 && code != 0:
				t.Errorf("%s %s: exit %d: %s", dev, verb[0], code, stderr)
			}
		}
	}
}

// A sim config with a figure no GPU has is refused naming the key (exit 2), not printed as
// +Inf W and 7e306 °C.
func TestSimConfigImplausible(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "sim.json")
	if err := os.WriteFile(cfg, []byte(`{"preset":"h100","idle_w":1e308}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a, stdout, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"devices", "--sim-config", cfg}); code != ExitUsage || !strings.Contains(stderr.String(), "idle_w: 1e+308 W is beyond any GPU's") || strings.Contains(stdout.String(), "Inf") {
		t.Fatalf("exit %d, stderr %q, stdout %q: want 2 and idle_w named", code, stderr, stdout)
	}
}
