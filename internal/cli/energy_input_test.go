package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// writeCSV writes a t_s,power_w CSV of rows and returns its path.
func writeCSV(t *testing.T, name string, rows func(add func(ts, w float64))) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("t_s,power_w\n")
	rows(func(ts, w float64) { fmt.Fprintf(&b, "%.6f,%s\n", ts, fmtW(w)) })
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fmtW(w float64) string { return fmt.Sprint(w) }

// A 990 s hole in a 100 ms trace: the energy is kept (interpolated) but the coverage says
// how little was measured, a warning names the gap, and the interval says it leaves it out.
func TestEnergyGap(t *testing.T) {
	t.Parallel()
	p := writeCSV(t, "gap.csv", func(add func(ts, w float64)) {
		for i := 0; i <= 100; i++ {
			add(float64(i)/10, 100)
		}
		for i := 0; i <= 100; i++ {
			add(1000+float64(i)/10, 100)
		}
	})
	v := energyJSON(t, "--trace", p, "--sensor", "none")
	cov, _ := v["coverage"].(float64)
	// Measured: 0..10 s and 1000..1010 s, plus one usual interval (the reading after the gap).
	if want := 20.1 / 1010; math.Abs(cov-want) > 1e-3 {
		t.Errorf("coverage %v, want %.4f", cov, want)
	}
	if !near(v["covered_s"], 20.1, 1e-3) {
		t.Errorf("covered_s %v, want 20.1", v["covered_s"])
	}
	gaps, _ := v["gaps"].([]any)
	if len(gaps) != 1 {
		t.Fatalf("gaps %v, want one", v["gaps"])
	}
	g := gaps[0].(map[string]any)
	if g["from_s"] != 10.0 || g["to_s"] != 1000.0 {
		t.Errorf("gap %v, want 10 s to 1000 s", g)
	}
	warned := false
	for _, w := range v["warnings"].([]any) {
		m := w.(map[string]any)
		if m["code"] == "gap" && strings.Contains(m["message"].(string), "990 s, from 10 s to 1000 s") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning names the gap: %v", v["warnings"])
	}
	partial := false
	u, _ := v["uncertainty"].(map[string]any)
	comps, _ := u["components"].([]any)
	for _, c := range comps {
		m := c.(map[string]any)
		if m["name"] == "gaps" && m["known"] == false {
			partial = true
		}
	}
	if !partial || u["partial"] != true {
		t.Errorf("the interval does not say it leaves the gap out: %v", v["uncertainty"])
	}
}

// Rows out of time order are sorted, with a warning naming the first one.
func TestEnergyUnsorted(t *testing.T) {
	t.Parallel()
	p := writeCSV(t, "unsorted.csv", func(add func(ts, w float64)) {
		for i := 0; i < 50; i++ {
			ts := float64(i) / 10
			if i == 20 {
				ts = 1
			}
			add(ts, 100)
		}
	})
	v := energyJSON(t, "--trace", p)
	var msgs []string
	for _, w := range v["warnings"].([]any) {
		m := w.(map[string]any)
		if m["code"] == string(trace.CodeUnsorted) {
			msgs = append(msgs, m["message"].(string))
		}
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "line 22 (t = 1 s) comes after line 21 (t = 1.9 s)") {
		t.Errorf("warnings %v, want one naming line 22", v["warnings"])
	}
}

// Negative, implausible and overflowing power are refused with exit 2 naming the row; no
// Inf reaches any output.
func TestEnergyBadRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		w    float64
		want string
	}{
		{-50, `line 22: power_w "-50" is a negative power`},
		{-300, `line 22: power_w "-300" is a negative power`},
		{7e4, `line 22: power_w "70000" is beyond any GPU board's physical range`},
		{1e308, `line 22: power_w "1e+308" is beyond any GPU board's physical range`},
	} {
		p := writeCSV(t, "bad.csv", func(add func(ts, w float64)) {
			for i := 0; i < 50; i++ {
				w := 100.0
				if i == 20 {
					w = tc.w
				}
				add(float64(i)/10, w)
			}
		})
		for _, js := range [][]string{nil, {"--json"}} {
			a, stdout, stderr, ctx := testApp(t)
			code := a.Main(ctx, append(append([]string{"energy"}, js...), "--trace", p))
			if code != ExitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
				t.Errorf("%g W %v: exit %d, stderr %q, stdout %q; want exit 2 and %q", tc.w, js, code, stderr, stdout, tc.want)
			}
		}
	}
}

// An nvidia-smi log across a daylight-saving fall-back: local times without a zone go back
// an hour; read as the later instant, the energy is that of 2 minutes at 100 W.
func TestEnergySMIFallBack(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no zone data:", err)
	}
	old := time.Local // nvidia-smi writes local time; not parallel: it runs before the package's parallel tests
	time.Local = ny
	defer func() { time.Local = old }()
	var b strings.Builder
	b.WriteString("timestamp, index, power.draw [W]\n")
	for _, t0 := range []time.Time{time.Date(2024, 11, 3, 1, 59, 0, 0, time.UTC), time.Date(2024, 11, 3, 1, 0, 0, 0, time.UTC)} {
		for i := 0; i < 600; i++ {
			fmt.Fprintf(&b, "%s, 0, 100.00 W\n", t0.Add(time.Duration(i)*100*time.Millisecond).Format("2006/01/02 15:04:05.000"))
		}
	}
	p := filepath.Join(t.TempDir(), "smi.log")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	v := energyJSON(t, "--trace", p, "--sensor", "none")
	if !near(v["energy_j"], 100*119.9, 1e-6) || !near(v["duration_s"], 119.9, 1e-9) {
		t.Errorf("energy %v J over %v s, want %.0f J over 119.9 s", v["energy_j"], v["duration_s"], 100*119.9)
	}
	out, _ := json.Marshal(v["warnings"])
	if !strings.Contains(string(out), "line 602: the local time goes back") || !strings.Contains(string(out), "EST") {
		t.Errorf("warnings %s, want one naming line 602 and EST", out)
	}
}
