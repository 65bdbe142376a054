package trace_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// zeros is endless input (/dev/zero) that counts what was read from it.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	if z.n > 64<<20 {
		return 0, errors.New("read past 64 MiB: the reader does not stop")
	}
	return len(p), nil
}

// endless is an endless line without a line break, of text.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '7'
	}
	e.n += int64(len(p))
	if e.n > 64<<20 {
		return 0, errors.New("read past 64 MiB")
	}
	return len(p), nil
}

func TestReadEndlessOrBinary(t *testing.T) {
	z := &zeros{}
	_, err := trace.Read(z, "/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "/dev/zero line 1: holds a NUL byte: expected text (is this a binary file?)") {
		t.Errorf("/dev/zero: %v", err)
	}
	if z.n > 2*trace.MaxLine {
		t.Errorf("read %d bytes of /dev/zero before giving up, want at most %d", z.n, 2*trace.MaxLine)
	}
	e := &endless{}
	_, err = trace.Read(io.MultiReader(strings.NewReader("t_s,power_w\n0,1\n"), e), "x.csv")
	if err == nil || !strings.Contains(err.Error(), "x.csv line 3: is longer than 1 MiB: expected rows of a trace (is the input endless?)") {
		t.Errorf("endless line: %v", err)
	}
	if e.n > 2*trace.MaxLine {
		t.Errorf("read %d bytes of an endless line, want at most %d", e.n, 2*trace.MaxLine)
	}
	// A quoted field that never closes, one short line at a time.
	var b strings.Builder
	b.WriteString("t_s,power_w,note\n0,1,\"")
	for b.Len() < trace.MaxLine+100 {
		b.WriteString("more text\n")
	}
	if _, err := trace.Read(strings.NewReader(b.String()), "q.csv"); err == nil || !strings.Contains(err.Error(), "q.csv line 2: is longer than 1 MiB") {
		t.Errorf("endless quoted field: %v", err)
	}
	bin := "t_s,power_w\n0,1\n0.1,\x002\n"
	if _, err := trace.Read(strings.NewReader(bin), "b.csv"); err == nil || !strings.Contains(err.Error(), "b.csv line 3: holds a NUL byte") {
		t.Errorf("NUL byte: %v", err)
	}
}

func TestReadRefusesImplausibleValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"t_s,power_w\n0,100\n0.1,-50\n", `line 3: power_w "-50" is a negative power`},
		{"t_s,power_w\n0,100\n0.1,5001\n", `line 3: power_w "5001" is beyond any GPU board's physical range`},
		{"t_s,power_w\n0,100\n0.1,1e308\n", `line 3: power_w "1e308" is beyond`},
		{"t_s,gpu,channel,power_w,value,unit,driver_t_us\n0,0,power.instant,,-3,W,\n", `line 2: value "-3" is a negative power`},
		{"t_s,gpu,channel,power_w,value,unit,driver_t_us\n0,0,board,,-3,W,\n", `line 2: value "-3" is a negative power`},
		{"t_s,gpu,channel,power_w,value,unit,driver_t_us\n0,0,energy.total,,1e300,J,\n", `line 2: value "1e300" is not an energy counter reading`},
		{"t_s,gpu,channel,power_w,value,unit,driver_t_us\n0,0,temp.gpu,,1e300,degC,\n", `line 2: value "1e300" is out of range`},
		{"timestamp, index, power.draw [W]\n2024/11/03 01:00:00.000, 0, 100 W\n2024/11/03 01:00:00.100, 0, -300 W\n", `line 3: power.draw [W] "-300 W" is a negative power`},
		{"timestamp, index, power.draw [mW]\n2024/11/03 01:00:00.000, 0, 100000\n2024/11/03 01:00:00.100, 0, 9000000\n", `line 3: power.draw [mW] "9000000" is beyond`},
	} {
		_, err := trace.Read(strings.NewReader(tc.in), "in")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
		var pe *trace.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: %T is not a ParseError (exit 2)", tc.in, err)
		}
	}
	// 0 W and the largest plausible power read.
	if tr, err := trace.Read(strings.NewReader("t_s,power_w\n0,0\n0.1,5000\n"), "ok"); err != nil || len(tr.Samples) != 2 {
		t.Errorf("0 and 5000 W: %v", err)
	}
}

func TestReadWarnsUnsorted(t *testing.T) {
	tr, err := trace.Read(strings.NewReader("t_s,power_w\n0,1\n0.2,2\n0.1,3\n0.3,4\n0.05,5\n"), "u.csv")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(tr.Samples); i++ {
		if tr.Samples[i].T < tr.Samples[i-1].T {
			t.Fatalf("not sorted: %v", tr.Samples)
		}
	}
	if len(tr.Warnings) != 1 || tr.Warnings[0].Code != trace.CodeUnsorted ||
		tr.Warnings[0].Message != "the rows are not in time order: line 4 (t = 0.1 s) comes after line 3 (t = 0.2 s), 2 row(s) in all go back in time; the samples were sorted by time" {
		t.Errorf("warnings %v", tr.Warnings)
	}
	tr, err = trace.Read(strings.NewReader("t_s,power_w\n0,1\n0.1,2\n0.1,3\n"), "s.csv")
	// In order; the equal times with different values are named (issue 29), not as unsorted.
	if err != nil || len(tr.Warnings) != 1 || tr.Warnings[0].Code != trace.CodeDuplicateTime {
		t.Errorf("sorted input (equal times): %v %v", err, tr.Warnings)
	}
}

func smiLog(starts []time.Time, n int, step time.Duration) string {
	var b strings.Builder
	b.WriteString("timestamp, index, power.draw [W]\n")
	for _, t0 := range starts {
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "%s, 0, 100.00 W\n", t0.Add(time.Duration(i)*step).Format("2006/01/02 15:04:05.000"))
		}
	}
	return b.String()
}

func TestReadSMIDaylightSaving(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no zone data:", err)
	}
	defer trace.SetSMIZone(ny)()
	// Fall back (2024-11-03, 02:00 EDT → 01:00 EST): 01:59:00-01:59:59.9 then 01:00:00-01:00:59.9.
	in := smiLog([]time.Time{time.Date(2024, 11, 3, 1, 59, 0, 0, time.UTC), time.Date(2024, 11, 3, 1, 0, 0, 0, time.UTC)}, 600, 100*time.Millisecond)
	tr, err := trace.ReadSMI(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Samples[len(tr.Samples)-1].T
	if last != 119900*time.Millisecond {
		t.Errorf("last sample at %v, want 1m59.9s", last)
	}
	for i := 1; i < len(tr.Samples); i++ {
		if d := tr.Samples[i].T - tr.Samples[i-1].T; d != 100*time.Millisecond {
			t.Fatalf("step %v at %d", d, i)
		}
	}
	if len(tr.Warnings) != 1 || tr.Warnings[0].Code != trace.CodeClockBack || !strings.Contains(tr.Warnings[0].Message, "line 602: the local time goes back") {
		t.Errorf("warnings %v", tr.Warnings)
	}
	// Spring forward (2024-03-10, 02:00 EST → 03:00 EDT): no warning, no hole.
	in = smiLog([]time.Time{time.Date(2024, 3, 10, 1, 59, 0, 0, time.UTC), time.Date(2024, 3, 10, 3, 0, 0, 0, time.UTC)}, 600, 100*time.Millisecond)
	if tr, err = trace.ReadSMI(strings.NewReader(in)); err != nil || len(tr.Warnings) != 0 || tr.Samples[len(tr.Samples)-1].T != 119900*time.Millisecond {
		t.Errorf("spring forward: %v %v %v", err, tr.Warnings, tr.Samples[len(tr.Samples)-1].T)
	}
	// A clock set back by 5 minutes (no zone change): sorted, with a warning naming the row.
	in = smiLog([]time.Time{time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC), time.Date(2024, 6, 1, 11, 56, 0, 0, time.UTC)}, 10, time.Second)
	if tr, err = trace.ReadSMI(strings.NewReader(in)); err != nil || len(tr.Warnings) != 1 || tr.Warnings[0].Code != trace.CodeUnsorted ||
		!strings.Contains(tr.Warnings[0].Message, "line 12 (t = -240 s) comes after line 11 (t = 9 s)") {
		t.Errorf("clock set back: %v %v", err, tr.Warnings)
	}
}

func TestGaps(t *testing.T) {
	var s []trace.Sample
	add := func(t time.Duration) { s = append(s, trace.Sample{T: t, Value: 1}) }
	for i := 0; i <= 100; i++ {
		add(time.Duration(i) * 100 * time.Millisecond)
	}
	for i := 0; i <= 100; i++ {
		add(1000*time.Second + time.Duration(i)*100*time.Millisecond)
	}
	// Jitter up to 1 s beyond the usual interval is no gap.
	add(1010*time.Second + 1100*time.Millisecond)
	gaps, usual := trace.Gaps(s)
	if usual != 100*time.Millisecond || len(gaps) != 1 || gaps[0].From != 10*time.Second || gaps[0].To != 1000*time.Second {
		t.Errorf("gaps %v usual %v", gaps, usual)
	}
	if g, u := trace.Gaps(s[:2]); g != nil || u != 0 {
		t.Errorf("two readings: %v %v", g, u)
	}
}

// A sidecar with a figure no recording has is refused naming the field.
func TestReadMetaRefusesImplausible(t *testing.T) {
	base := `{"format":"gpuwatt-trace/1","gpuwatt_version":"x","host":"h","device":"nvml","start":"2026-01-01T00:00:00Z","duration_s":%s,"poll":{"mode":"adaptive"},` +
		`"gpus":[{"index":0,"name":"g","uuid":"u","power_limit_w":%s}],"marks":[{"t_s":%s,"name":"m"}],` +
		`"channels":[{"gpu":0,"name":"power.usage","quantity":"power","unit":"W","description":"d","stats":{"polls":1,"samples":1,"repeats":0,"errors":0,"update_period_s":%s,"poll_interval_s":0,"call_latency_s":0,"missed_updates_estimate":0}}],"incomplete":false}`
	ok := []string{"1", "700", "0.5", "0.1"}
	for i, tc := range []struct{ v, want string }{
		{"-1", `field "duration_s" is -1`},
		{"1e308", `field "gpus[0].power_limit_w" is 1e+308: expected 0 to 5000 W`},
		{"1e300", `field "marks[0].t_s" is 1e+300`},
		{"1e300", `field "channels[0].stats.update_period_s" is 1e+300: expected seconds from 0 to 1e6`},
	} {
		args := append([]string(nil), ok...)
		args[i] = tc.v
		_, err := trace.ReadMeta(strings.NewReader(fmt.Sprintf(base, args[0], args[1], args[2], args[3])))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.want, err, tc.want)
		}
	}
	if _, err := trace.ReadMeta(strings.NewReader(fmt.Sprintf(base, ok[0], ok[1], ok[2], ok[3]))); err != nil {
		t.Errorf("a plausible sidecar: %v", err)
	}
}

// A channel's unit given only after a row of it: that row is checked by the unit too.
func TestReadUnitGivenLate(t *testing.T) {
	_, err := trace.ReadCSV(strings.NewReader("t_s,channel,power_w,value,unit\n0,foo,,-5,\n0.1,foo,,3,W\n"))
	if err == nil || !strings.Contains(err.Error(), `line 2: gpu 0 channel "foo": the value -5 at t = 0 s is a negative power`) || !strings.Contains(err.Error(), "its unit W is given on line 3") {
		t.Errorf("%v", err)
	}
}
