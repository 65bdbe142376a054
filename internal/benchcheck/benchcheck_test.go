package benchcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/cli"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/testkit"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// asCLI makes the test binary stand for gpuwatt itself, so that crosscheck.py can run
// `gpuwatt energy` without a build: the binary re-runs itself with this variable set.
const asCLI = "GPUWATT_BENCHCHECK_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// python returns python3's path, or skips t where there is none. It reads the scripts
// itself first: go test caches a passing result by the files the test process opened, and
// those python3 opens are not among them, so a changed script would not run the tests again.
func python(t *testing.T) string {
	t.Helper()
	for _, f := range scripts {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3: the bench scripts' tests need it")
	}
	return p
}

// noBytecode keeps python3 from writing __pycache__ into the source tree.
const noBytecode = "PYTHONDONTWRITEBYTECODE=1"

var scripts = []string{benchGPU + "/crosscheck.py", benchGPU + "/test_crosscheck.py", benchGPU + "/energy_poller.py", "../../bench/load/bursts.py",
	benchGPU + "/intervals_table.py", benchGPU + "/test_intervals_table.py", benchGPU + "/intervals_sim.py", "../../bench/load/shapes.py",
	benchGPU + "/tensor_gemm.py"}

const benchGPU = "../../bench/gpu"

// TestCrosscheckUnittest runs bench/gpu/test_crosscheck.py: the window alignment, the
// reference and the comparison on synthetic data with known answers.
func TestCrosscheckUnittest(t *testing.T) {
	testkit.Slow(t) // 12 s: python3's unittest of bench/gpu
	py := python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-s", benchGPU, "-p", "test_*.py")
	cmd.Env = append(os.Environ(), noBytecode)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OK") {
		t.Fatalf("python3 -m unittest did not say OK:\n%s", out)
	}
}

// burst is a load on the sim on its clock axis.
type burst struct{ start, length time.Duration }

// TestCrosscheckSim runs crosscheck.py end to end on the sim's H200: bursts of 690 W
// between idle gaps, recorded through the Sampler as `measure` would, and an independent
// log of the energy counter made as the poller makes it (a read every 3 ms, each call 2.5 ms
// long, logged with its bounds). The references it finds are checked against the sim's
// truth (the counter's gain × the true energy between the counter's updates), the figures
// it records against `gpuwatt energy` run here, and its clock check against the truth.
func TestCrosscheckSim(t *testing.T) {
	testkit.Slow(t) // 13 s: python3 and the sim
	py := python(t)
	bursts := []burst{
		{1500 * time.Millisecond, 200 * time.Millisecond},
		{3600 * time.Millisecond, time.Second},
		{6300 * time.Millisecond, 500 * time.Millisecond},
		{8630 * time.Millisecond, 100 * time.Millisecond},
	}
	const span = 10500 * time.Millisecond
	sm := simtest.Open(t, "h200")
	for _, b := range bursts {
		sm.Dev.AddLoad(b.start, b.start+b.length, 690)
	}
	tr := sm.Record(t, nil, sensor.Options{}, span)
	epoch := sm.Clock.Epoch()
	tr.Meta.Start, tr.Meta.Version = epoch, "test"
	dir := t.TempDir()
	mdir := filepath.Join(dir, "measure")
	if err := trace.Save(mdir, tr); err != nil {
		t.Fatal(err)
	}
	wall := func(d time.Duration) float64 { return float64(epoch.UnixNano())/1e9 + d.Seconds() }

	// The poller: the counter's published value at each call's midpoint.
	counter, ok := sm.Dev.Scheduled(trace.ChEnergyTotal)
	if !ok {
		t.Fatal("the sim has no scheduled energy counter")
	}
	var pb strings.Builder
	pb.WriteString("t_before_unix_s,t_after_unix_s,energy_mj\n")
	for c := 7 * time.Millisecond; c+2500*time.Microsecond < span; c += 3 * time.Millisecond {
		v := counter.ValueAt(counter.UpdateIndex(c + 1250*time.Microsecond))
		fmt.Fprintf(&pb, "%.6f,%.6f,%d\n", wall(c), wall(c+2500*time.Microsecond), int64(math.Round(1000*v)))
	}
	poller := filepath.Join(dir, "poller.csv")
	if err := os.WriteFile(poller, []byte(pb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var bb strings.Builder
	for i, b := range bursts {
		fmt.Fprintf(&bb, `{"name": "b%d", "length_s": %g, "start_unix_s": %.6f, "end_unix_s": %.6f}`+"\n",
			i, b.length.Seconds(), wall(b.start), wall(b.start+b.length))
	}
	bfile := filepath.Join(dir, "bursts.jsonl")
	if err := os.WriteFile(bfile, []byte(bb.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join(benchGPU, "crosscheck.py"), mdir, poller, bfile,
		"--gpuwatt", self, "--out", dir, "--jobs", "2")
	cmd.Env = append(os.Environ(), asCLI+"=1", noBytecode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	md, err := cmd.Output()
	if err != nil {
		t.Fatalf("crosscheck.py: %v\n%s", err, stderr.String())
	}
	var res result
	raw, err := os.ReadFile(filepath.Join(dir, "crosscheck.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if want := []string{"power.samples", "power.instant", "power.usage", "power.average"}; strings.Join(res.Channels, ",") != strings.Join(want, ",") {
		t.Errorf("channels %v, want the board's %v (no memory channel)", res.Channels, want)
	}
	// The Sampler stamps a new counter value midway between its calls (~12 ms apart here):
	// within half of that, plus the poller's 3 ms, of where the poller saw it appear.
	if c := res.Clock; c.Checked < 50 || !c.OK || math.Abs(c.Median) > 0.003 || c.Min < -0.01 || c.Max > 0.01 {
		t.Errorf("clock check %+v: want the trace's counter readings within 10 ms of the poller's, median near 0", c)
	}
	if res.Counter.UpdatePeriodS < 0.095 || res.Counter.UpdatePeriodS > 0.105 {
		t.Errorf("counter update period %.4f s, want the sim's 100 ms", res.Counter.UpdatePeriodS)
	}

	gain := sm.Cfg.Sensors[trace.ChEnergyTotal].Model.Gain
	seen := map[string]int{}
	for _, r := range res.Rows {
		if r.Error != "" {
			t.Errorf("%s %s: %s", r.Burst, r.Channel, r.Error)
			continue
		}
		// The window's edges are the counter's updates: the last at or before start − 0.15 s,
		// the first at or after end + 0.15 s; the reference is the gain × the true energy
		// between them, to the counter's mJ.
		b := bursts[int(r.Burst[1]-'0')]
		origin := float64(epoch.UnixNano()) / 1e9
		ka := counter.UpdateIndex(b.start - 150*time.Millisecond)
		kb := counter.UpdateIndex(b.start + b.length + 150*time.Millisecond)
		if counter.UpdateTime(kb) < b.start+b.length+150*time.Millisecond {
			kb++
		}
		ta, tb := counter.UpdateTime(ka), counter.UpdateTime(kb)
		if d := math.Abs(r.FromUnix - origin - ta.Seconds()); d > 0.003 {
			t.Errorf("%s: window starts %.4f s, the counter's update is at %.4f s", r.Burst, r.FromUnix-origin, ta.Seconds())
		}
		if d := math.Abs(r.ToUnix - origin - tb.Seconds()); d > 0.003 {
			t.Errorf("%s: window ends %.4f s, the counter's update is at %.4f s", r.Burst, r.ToUnix-origin, tb.Seconds())
		}
		truth := gain * sm.Dev.TrueEnergy(ta, tb).Joules()
		if math.Abs(r.RefJ-truth) > 0.003 {
			t.Errorf("%s: reference %.4f J, the counter's truth %.4f J", r.Burst, r.RefJ, truth)
		}
		if r.RefUJ <= 0 || r.RefUJ > 0.01*r.RefJ {
			t.Errorf("%s: reference uncertainty %.3f J of %.1f J: want the edges' few ms at idle", r.Burst, r.RefUJ, r.RefJ)
		}
		if math.Abs(r.ErrorPct-100*(r.EnergyJ-r.RefJ)/r.RefJ) > 1e-9 {
			t.Errorf("%s %s: error %.4f %% is not (corrected − reference)/reference", r.Burst, r.Channel, r.ErrorPct)
		}
		// On the sim, corrected figures of the two channels the issue names are within 2 %
		// of the counter for regions of 0.5 s and more; the raw 1 s average misses by far more.
		if (r.Channel == "power.samples" || r.Channel == "power.usage") && r.Length >= 0.5 && math.Abs(r.ErrorPct) > 2 {
			t.Errorf("%s %s: error %+.2f %%, want within 2 %% on the sim", r.Burst, r.Channel, r.ErrorPct)
		}
		if r.Channel == "power.usage" && r.RawErrorPct != nil && *r.RawErrorPct > -10 {
			t.Errorf("%s power.usage: raw error %+.1f %%: the 1 s average should miss a burst's window", r.Burst, *r.RawErrorPct)
		}
		if res.MethodFlag && r.Channel != "default" && r.Method != "inversion" {
			t.Errorf("%s %s: energy_method %q with --method inversion", r.Burst, r.Channel, r.Method)
		}
		seen[r.Channel]++
	}
	for _, ch := range append(res.Channels, "default") {
		if seen[ch] != len(bursts) {
			t.Errorf("%s: %d bursts compared, want %d", ch, seen[ch], len(bursts))
		}
	}

	// What the script recorded is what `gpuwatt energy` prints for that window.
	r := res.Rows[0]
	for _, x := range res.Rows {
		if x.Channel == "power.usage" && x.Burst == "b1" {
			r = x
		}
	}
	args := []string{"energy", "--trace", mdir, "--from", fmt.Sprintf("%.6fs", r.From), "--to", fmt.Sprintf("%.6fs", r.To),
		"--channel", r.Channel, "--gpu", "0", "--json"}
	if res.MethodFlag {
		args = append(args, "--method", "inversion")
	}
	var out, errb bytes.Buffer
	if code := cli.Main(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("gpuwatt %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	var rep struct {
		EnergyJ        float64 `json:"energy_j"`
		ChannelEnergyJ float64 `json:"channel_energy_j"`
		EnergyRawJ     float64 `json:"energy_raw_j"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	want := rep.ChannelEnergyJ
	if res.MethodFlag {
		want = rep.EnergyJ
	}
	if math.Abs(r.EnergyJ-want) > 1e-6 || r.RawJ == nil || math.Abs(*r.RawJ-rep.EnergyRawJ) > 1e-6 {
		t.Errorf("recorded %.6f J (raw %v), gpuwatt energy prints %.6f J (raw %.6f)", r.EnergyJ, r.RawJ, want, rep.EnergyRawJ)
	}
	for _, s := range []string{"### Summary: by channel and class of length", "| power.samples | >= 0.5 s | 2 |", "Clock check: "} {
		if !strings.Contains(string(md), s) {
			t.Errorf("crosscheck.py's Markdown lacks %q:\n%s", s, md)
		}
	}
	if t.Failed() {
		t.Logf("crosscheck.py printed:\n%s", md)
	}
}

// result is what the test reads of crosscheck.json.
type result struct {
	Channels   []string `json:"channels"`
	MethodFlag bool     `json:"method_flag"`
	Counter    struct {
		UpdatePeriodS float64 `json:"update_period_s"`
	} `json:"counter"`
	Clock struct {
		Checked int     `json:"checked"`
		Median  float64 `json:"median_s"`
		Min     float64 `json:"min_s"`
		Max     float64 `json:"max_s"`
		OK      bool    `json:"ok"`
	} `json:"clock_check"`
	Rows []struct {
		Burst       string   `json:"burst"`
		Channel     string   `json:"channel"`
		Length      float64  `json:"length_s"`
		Error       string   `json:"error"`
		From        float64  `json:"window_from_s"`
		To          float64  `json:"window_to_s"`
		FromUnix    float64  `json:"window_from_unix_s"`
		ToUnix      float64  `json:"window_to_unix_s"`
		RefJ        float64  `json:"reference_j"`
		RefUJ       float64  `json:"reference_uncertainty_j"`
		EnergyJ     float64  `json:"energy_j"`
		RawJ        *float64 `json:"raw_j"`
		ErrorPct    float64  `json:"error_pct"`
		RawErrorPct *float64 `json:"raw_error_pct"`
		Method      string   `json:"method"`
	} `json:"rows"`
}
