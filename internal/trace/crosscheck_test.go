package trace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestSMIWithoutIndex: an everyday two-GPU nvidia-smi log taken without an index column
// (each poll's two rows share a time) was read as one GPU, half its rows dropped as
// half-done values. The GPUs are told by their place among a time's rows, with a warning;
// a log whose times have different numbers of rows is refused with the reason.
func TestSMIWithoutIndex(t *testing.T) {
	var b strings.Builder
	b.WriteString("timestamp, power.draw [W]\n")
	for i := range 20 {
		ts := fmt.Sprintf("2026/11/24 10:00:%02d.%03d", i/10, (i%10)*100)
		fmt.Fprintf(&b, "%s, 100.00 W\n%s, 300.00 W\n", ts, ts)
	}
	tr, err := trace.ReadSMI(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Meta.GPUs) != 2 {
		t.Fatalf("%d GPUs, want 2", len(tr.Meta.GPUs))
	}
	for g, want := range []float64{100, 300} {
		r := tr.Readings(g, trace.ChPowerUsage)
		if len(r.V) != 20 || r.V[0] != want || r.V[19] != want {
			t.Errorf("GPU %d: %d readings %v, want 20 of %g W", g, len(r.V), r.V, want)
		}
	}
	if len(tr.Warnings) != 1 || tr.Warnings[0].Code != trace.CodeNoGPUColumn {
		t.Errorf("warnings %v", tr.Warnings)
	}
	bad := b.String() + "2026/11/24 10:00:05.000, 100.00 W\n2026/11/24 10:00:05.100, 100.00 W\n2026/11/24 10:00:05.100, 300.00 W\n"
	if _, err := trace.ReadSMI(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "cannot be told apart") {
		t.Errorf("times with 1 and 2 rows: %v", err)
	}
}

// TestCounterJumpNotUsed: an energy counter that jumps (16x the truth in one step) while
// the power channel reads 300 W is removed from the trace, named unavailable and warned
// of, so no figure comes from it.
func TestCounterJumpNotUsed(t *testing.T) {
	var b strings.Builder
	b.WriteString("t_s,gpu,channel,power_w,value,unit,driver_t_us\n")
	e := 1000.0
	for i := 0; i <= 100; i++ {
		ts := float64(i) / 10
		fmt.Fprintf(&b, "%.1f,0,power.usage,300,,,\n", ts)
		if i == 50 {
			e += 16 * 300 * 5 // one step of 16x the run's energy
		}
		fmt.Fprintf(&b, "%.1f,0,energy.total,,%.1f,J,\n", ts, e)
		e += 30
	}
	tr, err := trace.Read(strings.NewReader(b.String()), "jump.csv")
	if err != nil {
		t.Fatal(err)
	}
	if r := tr.Readings(0, trace.ChEnergyTotal); len(r.T) != 0 {
		t.Errorf("the counter kept: %d readings", len(r.T))
	}
	found := false
	for _, w := range tr.Warnings {
		found = found || w.Code == trace.CodeCounterJump && strings.Contains(w.Message, "not used")
	}
	if !found || len(tr.Meta.Unavailable) != 1 {
		t.Errorf("warnings %v, unavailable %v", tr.Warnings, tr.Meta.Unavailable)
	}
	// A counter that keeps pace with the power is kept.
	var c strings.Builder
	c.WriteString("t_s,gpu,channel,power_w,value,unit,driver_t_us\n")
	for i := 0; i <= 100; i++ {
		fmt.Fprintf(&c, "%.1f,0,power.usage,300,,,\n%.1f,0,energy.total,,%.1f,J,\n", float64(i)/10, float64(i)/10, 1000+30*float64(i))
	}
	tr, err = trace.Read(strings.NewReader(c.String()), "ok.csv")
	if err != nil || len(tr.Readings(0, trace.ChEnergyTotal).T) != 101 || len(tr.Warnings) != 0 {
		t.Errorf("a sound counter: %v, warnings %v", err, tr.Warnings)
	}
}

// TestTruncatedLastRow: a CSV whose last line has no line break (cut while written: "30"
// of "300") drops it with a warning instead of reading 30 W.
func TestTruncatedLastRow(t *testing.T) {
	tr, err := trace.Read(strings.NewReader("t_s,power_w\n0,300\n0.1,300\n0.2,30"), "cut.csv")
	if err != nil {
		t.Fatal(err)
	}
	r := tr.Readings(0, trace.ChPower)
	if len(r.V) != 2 || len(tr.Warnings) != 1 || tr.Warnings[0].Code != trace.CodeTruncatedRow {
		t.Errorf("readings %v, warnings %v", r.V, tr.Warnings)
	}
}

// TestSidecarQuantityChecked: a sidecar that calls a clock channel a power (its Hz
// integrated as W gave 251 kW) is refused, naming the field.
func TestSidecarQuantityChecked(t *testing.T) {
	dir := t.TempDir()
	csv := "t_s,gpu,channel,power_w,value,unit,driver_t_us\n0,0,power.usage,300,,,\n0.1,0,power.usage,300,,,\n0,0,clock.sm,,1.98e9,Hz,\n"
	meta := `{"format":"gpuwatt-trace/1","device":"x","start":"2026-11-24T10:00:00Z","duration_s":0.1,"gpus":[{"index":0}],
"channels":[{"gpu":0,"name":"power.usage","quantity":"power","unit":"W"},{"gpu":0,"name":"clock.sm","quantity":"power","unit":"W"}]}`
	os.WriteFile(filepath.Join(dir, "trace.csv"), []byte(csv), 0o600)
	os.WriteFile(filepath.Join(dir, "trace.json"), []byte(meta), 0o600)
	if _, err := trace.Load(dir); err == nil || !strings.Contains(err.Error(), `"channels[1].quantity"`) {
		t.Errorf("Load: %v", err)
	}
}

// TestCounterStuckWarned: an energy counter that holds one value for 15 s while the power
// channel reads 300 W is named (counter_stuck); one that counts is not.
func TestCounterStuckWarned(t *testing.T) {
	read := func(stuck bool) *trace.Trace {
		var b strings.Builder
		b.WriteString("t_s,gpu,channel,power_w,value,unit,driver_t_us\n")
		for i := 0; i <= 200; i++ {
			e := 1000 + 30*float64(i)
			if stuck && i > 50 {
				e = 1000 + 30*50
			}
			fmt.Fprintf(&b, "%.1f,0,power.usage,300,,,\n%.1f,0,energy.total,,%.1f,J,\n", float64(i)/10, float64(i)/10, e)
		}
		tr, err := trace.Read(strings.NewReader(b.String()), "stuck.csv")
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	warned := func(tr *trace.Trace) bool {
		for _, w := range tr.Warnings {
			if w.Code == trace.CodeCounterStuck && strings.Contains(w.Message, "holds 2500.0 J for 15.0 s") {
				return true
			}
		}
		return false
	}
	if tr := read(true); !warned(tr) {
		t.Errorf("a stuck counter: warnings %v", tr.Warnings)
	}
	if tr := read(false); len(tr.Warnings) != 0 {
		t.Errorf("a counting counter: warnings %v", tr.Warnings)
	}
}

// TestSidecarUnitAndValuesChecked: a sidecar whose unit contradicts its channel's quantity
// (power.usage in Hz) is refused naming the field; so is a channel whose readings lie
// beyond the range of the quantity its sidecar gives (a custom channel said to be a power
// reading 1.98e9).
func TestSidecarUnitAndValuesChecked(t *testing.T) {
	for _, tc := range []struct{ name, csv, channels, want string }{
		{"unit", "t_s,gpu,channel,power_w,value,unit,driver_t_us\n0,0,power.usage,300,,,\n0.1,0,power.usage,300,,,\n",
			`[{"gpu":0,"name":"power.usage","quantity":"power","unit":"Hz"}]`, `"channels[0].unit" is "Hz"`},
		{"values", "t_s,gpu,channel,power_w,value,unit,driver_t_us\n0,0,power.usage,300,,,\n0.1,0,power.usage,300,,,\n0,0,custom.x,,1.98e9,,\n",
			`[{"gpu":0,"name":"power.usage","quantity":"power","unit":"W"},{"gpu":0,"name":"custom.x","quantity":"power"}]`, "channel custom.x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			meta := `{"format":"gpuwatt-trace/1","device":"x","start":"2026-11-24T10:00:00Z","duration_s":0.1,"gpus":[{"index":0}],"channels":` + tc.channels + `}`
			os.WriteFile(filepath.Join(dir, "trace.csv"), []byte(tc.csv), 0o600)
			os.WriteFile(filepath.Join(dir, "trace.json"), []byte(meta), 0o600)
			if _, err := trace.Load(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v, want %q", err, tc.want)
			}
		})
	}
}
