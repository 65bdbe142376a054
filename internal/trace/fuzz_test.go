package trace_test

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// csvSeeds are the CSV inputs of the tests, plus a gpuwatt CSV of every quantity.
func csvSeeds(t testing.TB) []string {
	var b bytes.Buffer
	if err := trace.WriteCSV(&b, fullTrace()); err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("testdata/example/trace.csv")
	if err != nil {
		t.Fatal(err)
	}
	seeds := []string{
		b.String(),
		string(example),
		"t_s,power_w\n0,1\n0.1,2\n",
		"note,power_w , extra,T_S,gpu\r\n\"a, quoted\nnote\",101,z,0.1,1\r\n ,, , 0.2 , 0 \r\n",
		"t_s,channel,power_w,value,unit\n0,fan,,50,%\n0,board,3,,\n",
		"t_s,power_w\n1e-3,0x1p-2\n-0.0000005,.5\n",
	}
	for _, tc := range readErrorCases {
		seeds = append(seeds, tc.in)
	}
	return seeds
}

// sameAfterRoundTrip checks that tr's samples are sorted and read back unchanged through
// WriteCSV and ReadCSV.
func sameAfterRoundTrip(t *testing.T, tr *trace.Trace) {
	t.Helper()
	for i := 1; i < len(tr.Samples); i++ {
		if tr.Samples[i].T < tr.Samples[i-1].T {
			t.Fatalf("samples not sorted at %d", i)
		}
	}
	var b bytes.Buffer
	if err := trace.WriteCSV(&b, tr); err != nil {
		t.Fatalf("WriteCSV: %v", err)
	}
	again, err := trace.ReadCSV(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("ReadCSV of WriteCSV's output: %v\n%s", err, b.String())
	}
	if len(again.Samples) != len(tr.Samples) || len(tr.Samples) > 0 && !reflect.DeepEqual(again.Samples, tr.Samples) {
		t.Fatalf("round trip changed the samples:\nbefore %+v\nafter  %+v\ncsv:\n%s", tr.Samples, again.Samples, b.String())
	}
}

func FuzzReadCSV(f *testing.F) {
	for _, s := range csvSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := trace.ReadCSV(strings.NewReader(in))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		sameAfterRoundTrip(t, tr)
	})
}

func FuzzReadSMI(f *testing.F) {
	f.Add(smiWithUnits)
	f.Add(smiNoUnits)
	f.Add("timestamp, power.draw [W]\n2026/11/21 10:23:45.123, 100 W\ntimestamp, power.draw [W]\n2026/11/21 10:23:45.623, 0.5 kW\n2026/11/21 10:2")
	f.Add("timestamp, uuid, pstate, clocks_throttle_reasons.active\n2026-11-21T10:23:45.1234567Z, GPU-a, P2, 0xffffffffffffffff\n")
	for _, tc := range readErrorCases {
		if strings.Contains(tc.in, "timestamp") {
			f.Add(tc.in)
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := trace.ReadSMI(strings.NewReader(in))
		if err == nil {
			sameAfterRoundTrip(t, tr)
		} else if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error spans lines: %q", err)
		}
		// Detection must not panic on anything either.
		trace.Read(strings.NewReader(in), "fuzz")
	})
}

func FuzzReadMeta(f *testing.F) {
	example, err := os.ReadFile("testdata/example/trace.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example))
	f.Add(`{"format": "gpuwatt-trace/2"}`)
	f.Add(`{"format": 1}`)
	f.Fuzz(func(t *testing.T, in string) {
		m, err := trace.ReadMeta(strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := trace.WriteMeta(&b, m); err != nil {
			return // e.g. a time outside what JSON can write
		}
		again, err := trace.ReadMeta(&b)
		if err != nil {
			t.Fatalf("ReadMeta of WriteMeta's output: %v\n%s", err, b.String())
		}
		if !reflect.DeepEqual(normalizeMeta(again), normalizeMeta(m)) {
			t.Fatalf("round trip changed the meta:\nbefore %+v\nafter  %+v", m, again)
		}
	})
}

// normalizeMeta makes metas comparable: times by instant, empty slices as nil.
func normalizeMeta(m trace.Meta) trace.Meta {
	m.Start = m.Start.UTC()
	if len(m.Command) == 0 {
		m.Command = nil
	}
	if len(m.GPUs) == 0 {
		m.GPUs = nil
	}
	if len(m.Channels) == 0 {
		m.Channels = nil
	}
	if len(m.Unavailable) == 0 {
		m.Unavailable = nil
	}
	if len(m.Marks) == 0 {
		m.Marks = nil
	}
	return m
}
