package trace_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// benchTrace is n samples of 4 channels of one GPU, as a Sampler records them.
func benchTrace(n int) *trace.Trace {
	tr := &trace.Trace{Samples: make([]trace.Sample, 0, n)}
	names := []string{"power.instant", "power.average", "energy.total", "clock.sm"}
	for i := 0; i < n; i++ {
		t := time.Duration(i) * 250 * time.Microsecond
		v := 300 + float64(i%997)*0.25
		var drv int64
		ch := names[i%len(names)]
		switch ch {
		case "energy.total":
			v = 1e6 + float64(i)*0.075
		case "clock.sm":
			v = 1980e6
		case "power.instant":
			drv = 1795000000000000 + int64(t/time.Microsecond)
		}
		tr.Samples = append(tr.Samples, trace.Sample{T: t, Channel: ch, Value: v, DriverUS: drv})
	}
	return tr
}

func BenchmarkReadCSV(b *testing.B) {
	const n = 1 << 20
	var buf bytes.Buffer
	if err := trace.WriteCSV(&buf, benchTrace(n)); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		tr, err := trace.ReadCSV(bytes.NewReader(data))
		if err != nil || len(tr.Samples) != n {
			b.Fatal(err, len(tr.Samples))
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkWriteCSV(b *testing.B) {
	const n = 1 << 20
	tr := benchTrace(n)
	b.ReportAllocs()
	for b.Loop() {
		if err := trace.WriteCSV(io.Discard, tr); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkReadSMI(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("timestamp, index, power.draw [W], power.draw.instant [W], clocks.sm [MHz], temperature.gpu, pstate, clocks_event_reasons.active\n")
	const rows = 100000
	t0 := time.Date(2026, 11, 21, 10, 23, 45, 0, time.Local)
	for i := 0; i < rows; i++ {
		ts := t0.Add(time.Duration(i) * 10 * time.Millisecond).Format("2006/01/02 15:04:05.000")
		buf.WriteString(ts + ", 0, 250.50 W, 301.25 W, 1980 MHz, 45, P0, 0x0000000000000004\n")
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := trace.ReadSMI(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(6*rows*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkIntegrate(b *testing.B) {
	const n = 1 << 20
	s := make([]trace.Sample, n)
	for i := range s {
		s[i] = trace.Sample{T: time.Duration(i)*time.Millisecond + time.Duration(i%7)*time.Microsecond, Value: 300 + float64(i%13)}
	}
	from, to := s[0].T+500*time.Microsecond, s[n-1].T-500*time.Microsecond
	for b.Loop() {
		in := trace.Integrate(s, from, to)
		if in.Samples != n-2 {
			b.Fatal(in.Samples)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
