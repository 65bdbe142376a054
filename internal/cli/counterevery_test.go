package cli

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestMeasureCounterEvery: --counter-every 100ms reads the sim's energy counter every
// 100 ms (by default the twin's, which costs nothing a call on a virtual clock, is read
// at an eighth of its update period; pokes at the command's start and end add a few
// reads), and the summary and the trace's sidecar say so:
// the asked-for interval and the one kept.
func TestMeasureCounterEvery(t *testing.T) {
	t.Parallel()
	a, _, stderr, ctx := testApp(t)
	out := filepath.Join(t.TempDir(), "run")
	if code := a.Main(ctx, []string{"measure", "--device", "sim:h200", "--counter-every", "100ms", "--out", out, "--", "fake", "4s", "0"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum measure.Summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	if sum.Poll.CounterEvery != 0.1 || len(sum.Sampler) != 1 {
		t.Fatalf("summary poll %+v, sampler %+v: want counter_every_s 0.1 and one GPU", sum.Poll, sum.Sampler)
	}
	if got := sum.Sampler[0].CounterReadEveryS; math.Abs(got-0.1) > 0.01 {
		t.Errorf("counter read every %.4f s, want 0.100", got)
	}
	tr, err := trace.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	ctr := tr.Readings(0, trace.ChEnergyTotal)
	for i := 1; i < ctr.Len(); i++ {
		// New values only: the sim's counter steps every 100 ms, read every 100 ms each
		// reading is one (a held one would leave a gap of 200 ms).
		if d := ctr.T[i] - ctr.T[i-1]; d > 210e6 {
			t.Errorf("readings %d and %d of the counter %v apart, want about 100 ms", i-1, i, d)
		}
	}
	if !strings.Contains(stderr.String(), "energy counter, GPU 0: read every 0.0") {
		t.Errorf("the text does not give the counter's read interval:\n%s", stderr)
	}
	for _, bad := range []string{"5ms", "2m", "-1s", "often"} {
		c, _, e, cctx := testApp(t)
		if code := c.Main(cctx, []string{"measure", "--device", "sim:h200", "--counter-every", bad, "--", "fake", "1s", "0"}); code != ExitUsage || !strings.Contains(e.String(), "--counter-every") || !strings.Contains(e.String(), strings.TrimPrefix(bad, "-")) {
			t.Errorf("--counter-every %s: exit %d, stderr %q: want %d and an error naming it", bad, code, e, ExitUsage)
		}
	}
}
