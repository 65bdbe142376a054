package trace_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// fullTrace is a trace with a channel of every quantity on two GPUs, driver timestamps,
// equal times, and metadata in every field.
func fullTrace() *trace.Trace {
	chans := []trace.Channel{
		{GPU: 0, Name: "power.instant", Quantity: trace.QPower, Unit: "W", Description: "instant board power", Source: "nvmlDeviceGetFieldValues(POWER_INSTANT)",
			Stats: &trace.ChannelStats{Polls: 100, Samples: 10, Repeats: 90, UpdatePeriod: 0.1, PollInterval: 0.01, CallLatency: 2e-5, Missed: 1}},
		{GPU: 0, Name: "power.samples", Quantity: trace.QPower, Unit: "W", Description: "buffered", Buffered: true},
		{GPU: 0, Name: "energy.total", Quantity: trace.QEnergy, Unit: "J", Description: "counter", Cumulative: true},
		{GPU: 0, Name: "clock.sm", Quantity: trace.QFrequency, Unit: "Hz", Description: "SM clock"},
		{GPU: 0, Name: "temp.gpu", Quantity: trace.QTemperature, Unit: "degC", Description: "die"},
		{GPU: 0, Name: "util.gpu", Quantity: trace.QUtilization, Unit: "%", Description: "util"},
		{GPU: 0, Name: "pstate", Quantity: trace.QState, Unit: "pstate", Description: "P-state"},
		{GPU: 0, Name: "throttle.reasons", Quantity: trace.QReasons, Unit: "mask", Description: "reasons"},
		{GPU: 1, Name: "power.instant", Quantity: trace.QPower, Unit: "W", Description: "instant board power"},
		{GPU: 1, Name: `odd, "quoted" name`, Quantity: trace.QPower, Unit: "W", Description: "a name that needs quoting"},
	}
	var samples []trace.Sample
	add := func(t time.Duration, gpu int, ch string, v float64, drv int64) {
		samples = append(samples, trace.Sample{T: t, GPU: gpu, Channel: ch, Value: v, DriverUS: drv})
	}
	add(0, 0, "power.instant", 61.25, 1795000000000000)
	add(0, 0, "energy.total", 1234567.891, 0)
	add(0, 0, "clock.sm", 1.98e9, 0)
	add(0, 0, "temp.gpu", 41, 0)
	add(0, 0, "util.gpu", 0, 0)
	add(0, 0, "pstate", 8, 0)
	add(0, 0, "throttle.reasons", 0x4, 0)
	add(0, 1, "power.instant", 70.1, 0)
	add(ms(0.001), 1, `odd, "quoted" name`, 1e-300, 0)
	add(ms(100.5), 0, "power.samples", 301.3333333333333, 1795000000100500)
	add(ms(100.5), 0, "power.samples", 302.5, 1795000000100501)
	add(ms(120), 0, "power.instant", 699.999, 1795000000120000)
	add(ms(120), 0, "energy.total", 1234600.5, 0)
	add(ms(250.75), 0, "throttle.reasons", 0x1004, 0)
	add(ms(250.75), 0, "pstate", 0, 0)
	add(time.Second, 1, "power.instant", 0.5, 0) // (a negative power is refused on reading)
	return &trace.Trace{
		Meta: trace.Meta{
			Format: trace.Format, Version: "v0.1.0", Host: "node7", Device: "nvml",
			DriverVersion: "580.65.06", NVMLVersion: "12.580.65.06",
			Command: []string{"gpuwatt", "measure", "--", "sleep", "1"},
			Start:   time.Date(2026, 11, 21, 10, 23, 45, 123456789, time.UTC), Duration: 1.5,
			Poll: trace.Poll{Mode: "fixed", Interval: 0.01},
			GPUs: []trace.GPU{
				{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-aaaa", PCIBusID: "00000000:3B:00.0", PowerLimitW: 700, DefaultPowerLimit: 700},
				{Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-bbbb"},
			},
			Channels:      chans,
			Unavailable:   []trace.Missing{{GPU: 1, Name: "energy.total", Reason: "not supported"}},
			Marks:         []trace.Mark{{T: 0.1, Name: "start"}, {T: 0.9, Name: "end"}},
			Incomplete:    true,
			IncompleteWhy: "interrupted",
			VirtualClock:  true, SamplerCPUSecs: 0.25,
		},
		Samples: samples,
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	want := fullTrace()
	dir := filepath.Join(t.TempDir(), "run")
	if err := trace.Save(dir, want); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "trace.csv"), filepath.Join(dir, "trace.json")} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			got, err := trace.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Meta, want.Meta) {
				t.Errorf("Meta differs:\ngot  %+v\nwant %+v", got.Meta, want.Meta)
			}
			if !reflect.DeepEqual(got.Samples, want.Samples) {
				t.Errorf("Samples differ:\ngot  %+v\nwant %+v", got.Samples, want.Samples)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("dir holds %d entries, want trace.csv and trace.json only", len(entries))
	}
}

// TestRoundToStored: a trace with a sampler's nanoseconds, rounded to what trace.csv
// stores, reads back from Save sample for sample (halves away from zero, both signs), so a
// figure computed before saving is the one computed on the saved trace.
func TestRoundToStored(t *testing.T) {
	want := fullTrace()
	ns := []time.Duration{-1500, -1499, -501, -500, -499, 0, 499, 500, 501, 1499, 1500, 123456789, 2*time.Second + 999999500}
	want.Samples = want.Samples[:0]
	for i, d := range ns {
		want.Samples = append(want.Samples, trace.Sample{T: d, GPU: 0, Channel: "power.instant", Value: float64(i)})
	}
	want.RoundToStored()
	for i, s := range want.Samples {
		if s.T%time.Microsecond != 0 {
			t.Errorf("%v rounds to %v: not whole µs", ns[i], s.T)
		}
		if d := s.T - ns[i]; d > 500 || d < -500 || (d == -500 && ns[i] > 0) || (d == 500 && ns[i] < 0) {
			t.Errorf("%v rounds to %v: not the nearest µs, halves away from zero", ns[i], s.T)
		}
	}
	dir := filepath.Join(t.TempDir(), "run")
	if err := trace.Save(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := trace.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Samples, want.Samples) {
		t.Errorf("saved and read back:\ngot  %v\nwant %v", got.Samples, want.Samples)
	}
}

func TestLoadCSVWithoutSidecar(t *testing.T) {
	src := fullTrace()
	var b bytes.Buffer
	if err := trace.WriteCSV(&b, src); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "run1.csv")
	os.WriteFile(p, b.Bytes(), 0o644)
	got, err := trace.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Samples, src.Samples) {
		t.Errorf("Samples differ")
	}
	// Rebuilt channels: every quantity and unit, found from the data.
	for _, c := range src.Meta.Channels {
		g, ok := got.Channel(c.GPU, c.Name)
		if !ok {
			t.Errorf("channel %d %s not rebuilt", c.GPU, c.Name)
			continue
		}
		if g.Quantity != c.Quantity || g.Unit != c.Unit || g.Cumulative != c.Cumulative {
			t.Errorf("channel %d %s rebuilt as %+v, want quantity %s unit %s", c.GPU, c.Name, g, c.Quantity, c.Unit)
		}
	}
	if len(got.Meta.GPUs) != 2 || got.Meta.Format != trace.Format || got.Meta.SourceFormat != "" {
		t.Errorf("meta = %+v", got.Meta)
	}

	// A sidecar beside it, with the same base name, is used.
	var m bytes.Buffer
	trace.WriteMeta(&m, trace.Meta{Host: "h", Channels: src.Meta.Channels[:1]})
	os.WriteFile(filepath.Join(filepath.Dir(p), "run1.json"), m.Bytes(), 0o644)
	got, err = trace.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Host != "h" || len(got.Meta.Channels) != len(src.Meta.Channels) || got.Meta.Channels[0].Description != "instant board power" {
		t.Errorf("with sidecar: meta = %+v", got.Meta)
	}
}

func TestWriteCSV(t *testing.T) {
	tr := &trace.Trace{
		Meta: trace.Meta{Channels: []trace.Channel{
			{GPU: 0, Name: "power.usage", Quantity: trace.QPower, Unit: "W"},
			{GPU: 1, Name: "custom", Quantity: trace.QTemperature}, // unit from the quantity
		}},
		Samples: []trace.Sample{
			{T: ms(2), Channel: "power.usage", Value: 250.5, DriverUS: 17},
			{T: ms(1), Channel: "clock.sm", Value: 1.98e9},              // not in Meta: unit from the name
			{T: ms(1), Channel: "throttle.x", Value: 4},                 // equal time: stays after clock.sm
			{T: 1499, GPU: 2, Channel: "energy.total", Value: 0.1},      // rounds to 1 µs
			{T: -1500, GPU: 1, Channel: "custom", Value: 21},            // rounds away from zero
			{T: 3 * time.Second, Channel: " spaced ", Value: 1},         // quoted
			{T: 4 * time.Second, Channel: "util.gpu", Value: 1.0 / 3.0}, // shortest exact
		},
	}
	want := `t_s,gpu,channel,power_w,value,unit,driver_t_us
-0.000002,1,custom,,21,degC,
0.000001,2,energy.total,,0.1,J,
0.001000,0,clock.sm,,1.98e+09,Hz,
0.001000,0,throttle.x,,4,mask,
0.002000,0,power.usage,250.5,250.5,W,17
3.000000,0," spaced ",,1,,
4.000000,0,util.gpu,,0.3333333333333333,%,
`
	var b bytes.Buffer
	if err := trace.WriteCSV(&b, tr); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if tr.Samples[0].Channel != "power.usage" {
		t.Error("WriteCSV reordered the caller's samples")
	}
	tr.Samples = append(tr.Samples, trace.Sample{Channel: "power.x", Value: nanValue()})
	if err := trace.WriteCSV(&b, tr); err == nil || !strings.Contains(err.Error(), "finite") {
		t.Errorf("NaN value: err = %v", err)
	}
}

func nanValue() float64 { z := 0.0; return z / z }

func TestReadCSVGeneric(t *testing.T) {
	in := "\xEF\xBB\xBF# exported by some tool\r\n" +
		"note,power_w , extra,T_S,gpu\r\n" +
		"start,100.5,x,0.000,0\r\n" +
		"\r\n" +
		",,y,0.050,0\r\n" + // no power: skipped
		"\"a, quoted\nnote\",101,z,0.1,1\r\n" +
		"late,99,,0.05,0\r\n" + // out of order: sorted
		" end , 102.25 , , 0.2 , 0 \r\n"
	tr, err := trace.ReadCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Sample{
		{T: 0, GPU: 0, Channel: "power", Value: 100.5},
		{T: ms(50), GPU: 0, Channel: "power", Value: 99},
		{T: ms(100), GPU: 1, Channel: "power", Value: 101},
		{T: ms(200), GPU: 0, Channel: "power", Value: 102.25},
	}
	if !reflect.DeepEqual(tr.Samples, want) {
		t.Errorf("samples\ngot  %+v\nwant %+v", tr.Samples, want)
	}
	if tr.Meta.SourceFormat != "csv" || len(tr.Meta.Channels) != 2 || tr.Meta.Channels[1].GPU != 1 ||
		tr.Meta.Channels[0].Quantity != trace.QPower || tr.Meta.Channels[0].Unit != "W" {
		t.Errorf("meta = %+v", tr.Meta)
	}
	if tr.Meta.Duration != 0.2 {
		t.Errorf("duration = %v", tr.Meta.Duration)
	}
}

func TestReadCSVChannelQuantity(t *testing.T) {
	in := "t_s,channel,power_w,value,unit\n" +
		"0,mystery,,1,\n" + // no unit, unknown name: no quantity
		"0,fan,,50,%\n" + // the unit decides
		"0,board,3,,\n" + // only power_w: power
		"1,fan,,55,\n" // an empty unit does not conflict
	tr, err := trace.ReadCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		q    trace.Quantity
		unit string
	}{{"mystery", "", ""}, {"fan", trace.QUtilization, "%"}, {"board", trace.QPower, "W"}} {
		c, ok := tr.Channel(0, tc.name)
		if !ok || c.Quantity != tc.q || c.Unit != tc.unit {
			t.Errorf("%s: got %+v, want quantity %q unit %q", tc.name, c, tc.q, tc.unit)
		}
	}
}

func TestReadCSVTimes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"1.5", 1500 * time.Millisecond},
		{"-0.0000015", -2 * time.Microsecond},
		{"0.0000014999", time.Microsecond},
		{".25", 250 * time.Millisecond},
		{"7.", 7 * time.Second},
		{"+3", 3 * time.Second},
		{"1e-3", time.Millisecond},
		{"9223372036.854775", 9223372036854775 * time.Microsecond},
	} {
		t.Run(tc.in, func(t *testing.T) {
			tr, err := trace.ReadCSV(strings.NewReader("t_s,power_w\n" + tc.in + ",1\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := tr.Samples[0].T; got != tc.want {
				t.Errorf("t_s %s read as %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

const (
	csvHdr = trace.CSVHeader + "\n"
	csvRow = "0.1,0,power.usage,100,100,W,\n"
)

var readErrorCases = []struct {
	name, in string
	line     int
	column   string
	want     string
}{
	{"empty", "", 0, "", "trace.csv: empty file: expected"},
	{"blank lines only", "\n \r\n\n", 0, "", "empty file"},
	{"unknown format", "a,b,c\n1,2,3\n", 1, "", `trace.csv line 1: unknown format (header "a,b,c"): expected`},
	{"no power_w", "# c\nt_s,value\n1,2\n", 2, "power_w", "trace.csv line 2: the header lacks power_w: expected a CSV header naming t_s and power_w"},
	{"duplicate column", "t_s,power_w,t_s\n", 1, "t_s", "names t_s twice"},
	{"t_s not a number", csvHdr + csvRow + csvRow + "abc,0,power.usage,1,1,W,\n", 4, "t_s", `trace.csv line 4: t_s "abc" is not a number`},
	{"t_s empty", csvHdr + ",0,power.usage,1,1,W,\n", 2, "t_s", "line 2: t_s is empty"},
	{"t_s NaN", csvHdr + "NaN,0,p,1,1,W,\n", 2, "t_s", `t_s "NaN" is not a finite number`},
	{"t_s too large", csvHdr + "1e300,0,p,1,1,W,\n", 2, "t_s", "is out of range"},
	{"t_s too large exact", csvHdr + "9223372037,0,p,1,1,W,\n", 2, "t_s", "is out of range"},
	{"power not a number", csvHdr + csvRow + "0.2,0,power.usage,12,5W,W,\n", 3, "value", `line 3: value "5W" is not a number`},
	{"power_w not a number", "power_w,t_s\n1 W,2\n", 2, "power_w", `line 2: power_w "1 W" is not a number`},
	{"power_w inf", "power_w,t_s\n+Inf,2\n", 2, "power_w", "is not a finite number"},
	{"power_w and value differ", csvHdr + "0.2,0,power.usage,12,13,W,\n", 2, "power_w", "differs from value"},
	{"bad gpu", csvHdr + "0.2,-1,power.usage,12,12,W,\n", 2, "gpu", `gpu "-1" is not a GPU index`},
	{"bad driver time", csvHdr + "0.2,0,power.usage,12,12,W,1.5\n", 2, "driver_t_us", `driver_t_us "1.5" is not a whole number`},
	{"too few fields", csvHdr + csvRow + "0.2,0,power.usage\n", 3, "", "line 3: 3 fields, but the header has 7"},
	{"unit conflict", csvHdr + csvRow + "0.2,0,power.usage,1,1,mW,\n", 3, "unit", `unit "mW" for gpu 0 channel "power.usage" differs from "W" on line 2`},
	{"unclosed quote", csvHdr + "0.2,0,\"power,1,1,W,\n", 2, "", "line 2: a quoted field is never closed"},
	{"text after quote", csvHdr + "0.2,0,\"power\"x,1,1,W,\n", 2, "", "text after a quoted field"},
	{"smi without timestamp", "index, power.draw [W]\n0, 1 W\n", 1, "timestamp", "the nvidia-smi header lacks timestamp"},
	{"smi bad time", "timestamp, power.draw [W]\nyesterday, 1 W\n", 2, "timestamp", `line 2: timestamp "yesterday" is not a time`},
	{"smi bad power", "timestamp, power.draw [W]\n2026/11/21 10:23:45.123, x W\n", 2, "power.draw [W]", `power.draw [W] "x W" is not a number: expected a number in W`},
	{"smi bad unit", "timestamp, clocks.sm [MHz]\n2026/11/21 10:23:45.123, 1 rpm\n", 2, "clocks.sm [MHz]", `has unit "rpm": expected a number in MHz`},
	// Bounded as the CSV reader bounds it: 1e17 MHz would be written as 1e+23 Hz, which
	// ReadCSV refuses (FuzzReadSMI).
	{"smi clock out of range", "timestamp, clocks.mem [MHz]\n2026/11/21 10:23:45.123, 1e17 MHz\n", 2, "clocks.mem [MHz]", "is out of range: expected a magnitude below 1e20"},
	{"smi bad pstate", "timestamp, pstate\n2026/11/21 10:23:45.123, Q0\n", 2, "pstate", "is not a performance state"},
	{"smi bad mask", "timestamp, clocks_event_reasons.active\n2026/11/21 10:23:45.123, 0xZZ\n", 2, "clocks_event_reasons.active", "is not a bit mask"},
	{"smi short row", "timestamp, index, power.draw [W]\n2026/11/21 10:23:45.123, 0\n2026/11/21 10:23:45.223, 0, 1 W\n", 2, "", "2 fields, but the header has 3"},
}

func TestReadErrors(t *testing.T) {
	for _, tc := range readErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trace.Read(strings.NewReader(tc.in), "trace.csv")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
			var pe *trace.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.Line != tc.line || pe.Column != tc.column || pe.Name != "trace.csv" {
				t.Errorf("ParseError{Name %q, Line %d, Column %q}, want {trace.csv, %d, %q}", pe.Name, pe.Line, pe.Column, tc.line, tc.column)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	csv := trace.CSVHeader + "\n0,0,power.usage,1,1,W,\n"
	for _, tc := range []struct {
		name string
		path func() string
		want string
	}{
		{"missing", func() string { return filepath.Join(dir, "nope") }, "no such file"},
		{"empty dir", func() string { os.Mkdir(filepath.Join(dir, "e"), 0o755); return filepath.Join(dir, "e") },
			"not a trace directory: expected trace.csv (or trace.csv.gz) and trace.json"},
		{"unknown format", func() string { return write("notes.txt", "hello world\n") }, "notes.txt line 1: unknown format"},
		{"sidecar of another format", func() string {
			write("v2/trace.json", `{"format": "gpuwatt-trace/2"}`)
			return filepath.Dir(write("v2/trace.csv", csv))
		}, `trace.json: format "gpuwatt-trace/2" is not supported: this gpuwatt reads "gpuwatt-trace/1"`},
		{"sidecar without format", func() string {
			write("nf/a.json", `{"host": "x"}`)
			return write("nf/a.csv", csv)
		}, `a.json: no "format" field`},
		{"sidecar without CSV", func() string {
			return write("nc/trace.json", `{"format": "gpuwatt-trace/1"}`)
		}, "a sidecar without its CSV: expected trace.csv beside it"},
		{"sidecar not JSON", func() string {
			write("nj/trace.json", `format: 1`)
			return filepath.Dir(write("nj/trace.csv", csv))
		}, "nj/trace.json: not valid JSON at byte 2"},
		{"sidecar bad JSON", func() string {
			write("bj/trace.json", `{"format": 1}`)
			return write("bj/trace.csv", csv)
		}, `trace.json: field "format" holds a JSON number: expected string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trace.Load(tc.path())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestReadQuoting(t *testing.T) {
	tr := &trace.Trace{Samples: []trace.Sample{
		{Channel: "a\r\nb", Value: 1},
		{Channel: `"`, Value: 2},
		{Channel: "\tx", Value: 3},
		{Channel: "#c", Value: 4},
		{Channel: "é,ü", Value: 5},
	}}
	var b bytes.Buffer
	if err := trace.WriteCSV(&b, tr); err != nil {
		t.Fatal(err)
	}
	got, err := trace.ReadCSV(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Samples, tr.Samples) {
		t.Errorf("got %+v, want %+v", got.Samples, tr.Samples)
	}
}

func TestReadLongLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	in := "t_s,power_w,junk\n1," + "2," + long + "\n2,3,\"" + long + "\n" + long + "\"\n"
	tr, err := trace.ReadCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Samples) != 2 || tr.Samples[1].Value != 3 {
		t.Errorf("samples = %+v", tr.Samples)
	}
}

// The example trace is written as WriteCSV writes it, so it doubles as a golden file.
func TestExampleIsCanonical(t *testing.T) {
	want, err := os.ReadFile("testdata/example/trace.csv")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Load("testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := trace.WriteCSV(&b, tr); err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("WriteCSV gives\n%s\nwant\n%s", b.String(), want)
	}
	var m bytes.Buffer
	if err := trace.WriteMeta(&m, tr.Meta); err != nil {
		t.Fatal(err)
	}
	wantMeta, _ := os.ReadFile("testdata/example/trace.json")
	if m.String() != string(wantMeta) {
		t.Errorf("WriteMeta gives\n%s\nwant\n%s", m.String(), wantMeta)
	}
}

// TestLoadGzipped: a trace whose CSV is gzipped (as results/ keeps them) loads as it is,
// from its directory, the .csv.gz itself or its sidecar, to the same trace; a .gz that is
// not gzip is an error naming it.
func TestLoadGzipped(t *testing.T) {
	want := fullTrace()
	dir := filepath.Join(t.TempDir(), "run")
	if err := trace.Save(dir, want); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "trace.csv")
	raw, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	if err := os.WriteFile(plain+".gz", z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(plain)
	for _, p := range []string{dir, plain + ".gz", filepath.Join(dir, "trace.json")} {
		for _, load := range []func(string) (*trace.Trace, error){trace.Load, trace.LoadCompact} {
			got, err := load(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if !reflect.DeepEqual(got.Meta, want.Meta) {
				t.Errorf("%s: Meta differs", p)
			}
			if n := len(got.Series(0, "power.samples")); n != 2 {
				t.Errorf("%s: %d power.samples readings, want 2", p, n)
			}
		}
	}
	if err := os.WriteFile(plain+".gz", raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := trace.Load(dir); err == nil || !strings.Contains(err.Error(), "trace.csv.gz") {
		t.Errorf("a .gz that is not gzip: %v, want an error naming it", err)
	}
}
