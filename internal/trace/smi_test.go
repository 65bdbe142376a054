package trace_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// smiWithUnits is what `nvidia-smi --query-gpu=... --format=csv -lms 100` writes for two GPUs.
const smiWithUnits = `timestamp, index, name, uuid, pci.bus_id, power.draw [W], power.draw.instant [W], power.draw.average [W], clocks.sm [MHz], clocks.mem [MHz], temperature.gpu, utilization.gpu [%], pstate, clocks_event_reasons.active, enforced.power.limit [W], power.default_limit [W]
2026/11/21 10:23:45.123, 0, NVIDIA H100 80GB HBM3, GPU-aaaa, 00000000:3B:00.0, 250.50 W, 301.25 W, 249.00 W, 1980 MHz, 2619 MHz, 45, 97 %, P0, 0x0000000000000000, 700.00 W, 700.00 W
2026/11/21 10:23:45.125, 1, NVIDIA H100 80GB HBM3, GPU-bbbb, 00000000:5B:00.0, 69.80 W, [N/A], [N/A], 345 MHz, 2619 MHz, 31, 0 %, P8, 0x0000000000000001, 700.00 W, 700.00 W
2026/11/21 10:23:45.223, 0, NVIDIA H100 80GB HBM3, GPU-aaaa, 00000000:3B:00.0, 690.10 W, 702.00 W, 688.40 W, 1755 MHz, 2619 MHz, 46, 100 %, P0, 0x0000000000000004, 700.00 W, 700.00 W
2026/11/21 10:23:45.226, 1, NVIDIA H100 80GB HBM3, GPU-bbbb, 00000000:5B:00.0, [Unknown Error], [N/A], [N/A], 345 MHz, 2619 MHz, 31, 0 %, P8, 0x0000000000000001, 700.00 W, 700.00 W
`

// smiNoUnits is the same kind of log written with --format=csv,nounits and older field names.
const smiNoUnits = "timestamp, pci.bus_id, power.draw [W], clocks.current.sm [MHz], clocks.current.memory [MHz], utilization.memory [%], power.limit [W], clocks_throttle_reasons.active, fan.speed [%]\r\n" +
	"2026/11/21 23:59:59.900, 00000000:5B:00.0, 61.07, 210, 1593, 0, 300.00, 0x0000000000000004, 30\r\n" +
	"2026/11/21 23:59:59.900, 00000000:3B:00.0, 300.5, 1410, 1593, 12, 250.00, 0x0000000000000000, 30\r\n" +
	"2026/11/22 00:00:00.000, 00000000:5B:00.0, [Not Supported], [N/A], 1593, 1, 300.00, 0x0000000000001000, 31\r\n"

func TestReadSMI(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 23, 45, 123e6, time.Local)
	for _, tc := range []struct {
		name   string
		in     string
		start  time.Time
		series map[trace.Key][]float64 // values in time order
		times  map[trace.Key][]time.Duration
		gpus   []trace.GPU
		unav   []trace.Missing
	}{
		{
			name:  "units, two GPUs by index",
			in:    smiWithUnits,
			start: t0,
			series: map[trace.Key][]float64{
				{GPU: 0, Name: "power.usage"}:      {250.5, 690.1},
				{GPU: 1, Name: "power.usage"}:      {69.8},
				{GPU: 0, Name: "power.instant"}:    {301.25, 702},
				{GPU: 0, Name: "power.average"}:    {249, 688.4},
				{GPU: 0, Name: "clock.sm"}:         {1980e6, 1755e6},
				{GPU: 1, Name: "clock.mem"}:        {2619e6, 2619e6},
				{GPU: 0, Name: "temp.gpu"}:         {45, 46},
				{GPU: 0, Name: "util.gpu"}:         {97, 100},
				{GPU: 1, Name: "pstate"}:           {8, 8},
				{GPU: 0, Name: "throttle.reasons"}: {0, 4},
				{GPU: 1, Name: "power.limit"}:      {700, 700},
			},
			times: map[trace.Key][]time.Duration{
				{GPU: 0, Name: "power.usage"}: {0, ms(100)},
				{GPU: 1, Name: "power.usage"}: {ms(2)},
				{GPU: 1, Name: "clock.sm"}:    {ms(2), ms(103)},
			},
			gpus: []trace.GPU{
				{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-aaaa", PCIBusID: "00000000:3B:00.0", PowerLimitW: 700, DefaultPowerLimit: 700},
				{Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-bbbb", PCIBusID: "00000000:5B:00.0", PowerLimitW: 700, DefaultPowerLimit: 700},
			},
			unav: []trace.Missing{
				{GPU: 1, Name: "power.instant", Reason: "nvidia-smi gave [N/A]"},
				{GPU: 1, Name: "power.average", Reason: "nvidia-smi gave [N/A]"},
			},
		},
		{
			name:  "nounits, GPUs by bus id, across midnight",
			in:    smiNoUnits,
			start: time.Date(2026, 11, 21, 23, 59, 59, 900e6, time.Local),
			series: map[trace.Key][]float64{
				{GPU: 0, Name: "power.usage"}:      {61.07},
				{GPU: 1, Name: "power.usage"}:      {300.5},
				{GPU: 0, Name: "clock.sm"}:         {210e6},
				{GPU: 0, Name: "clock.mem"}:        {1593e6, 1593e6},
				{GPU: 1, Name: "util.mem"}:         {12},
				{GPU: 0, Name: "power.limit"}:      {300, 300},
				{GPU: 0, Name: "throttle.reasons"}: {4, 0x1000},
			},
			times: map[trace.Key][]time.Duration{
				{GPU: 0, Name: "clock.mem"}: {0, ms(100)},
			},
			gpus: []trace.GPU{
				{Index: 0, PCIBusID: "00000000:5B:00.0", PowerLimitW: 300},
				{Index: 1, PCIBusID: "00000000:3B:00.0", PowerLimitW: 250},
			},
		},
		{
			name:  "power only, no GPU column, repeated header, cut-short last line",
			in:    "timestamp, power.draw [W]\n2026/11/21 10:23:45.123, 100 W\ntimestamp, power.draw [W]\n2026/11/21 10:23:45.623, 0.5 kW\n2026/11/21 10:2",
			start: t0,
			series: map[trace.Key][]float64{
				{GPU: 0, Name: "power.usage"}: {100, 500},
			},
			times: map[trace.Key][]time.Duration{
				{GPU: 0, Name: "power.usage"}: {0, ms(500)},
			},
			gpus: []trace.GPU{{Index: 0}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := trace.Read(strings.NewReader(tc.in), "smi.log")
			if err != nil {
				t.Fatal(err)
			}
			if !tr.Meta.Start.Equal(tc.start) {
				t.Errorf("start = %v, want %v", tr.Meta.Start, tc.start)
			}
			if tr.Meta.SourceFormat != "nvidia-smi" || tr.Meta.Format != trace.Format {
				t.Errorf("format %q source %q", tr.Meta.Format, tr.Meta.SourceFormat)
			}
			for k, want := range tc.series {
				s := tr.Series(k.GPU, k.Name)
				var got []float64
				for _, x := range s {
					got = append(got, x.Value)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v: values %v, want %v", k, got, want)
				}
				c, ok := tr.Channel(k.GPU, k.Name)
				if !ok || c.Quantity != trace.QuantityOf(k.Name) || c.Unit != c.Quantity.Unit() || c.Description == "" {
					t.Errorf("%v: channel %+v", k, c)
				}
			}
			for k, want := range tc.times {
				var got []time.Duration
				for _, x := range tr.Series(k.GPU, k.Name) {
					got = append(got, x.T)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v: times %v, want %v", k, got, want)
				}
			}
			if !reflect.DeepEqual(tr.Meta.GPUs, tc.gpus) {
				t.Errorf("GPUs\ngot  %+v\nwant %+v", tr.Meta.GPUs, tc.gpus)
			}
			if !reflect.DeepEqual(tr.Meta.Unavailable, tc.unav) {
				t.Errorf("unavailable\ngot  %+v\nwant %+v", tr.Meta.Unavailable, tc.unav)
			}
			for i := 1; i < len(tr.Samples); i++ {
				if tr.Samples[i].T < tr.Samples[i-1].T {
					t.Fatalf("samples not sorted at %d", i)
				}
			}
			if _, ok := tr.Channel(0, "fan.speed"); ok {
				t.Error("unknown column became a channel")
			}
		})
	}
}

func TestReadSMITruncated(t *testing.T) {
	tr, err := trace.ReadSMI(strings.NewReader("timestamp, index, power.draw [W]\n2026/11/21 10:23:45.123, 0, 100 W\n2026/11/21 10:23:45.2"))
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Meta.Incomplete || !strings.Contains(tr.Meta.IncompleteWhy, "cut short") || len(tr.Samples) != 1 {
		t.Errorf("meta %+v, %d samples", tr.Meta, len(tr.Samples))
	}
}

func TestReadSMIOutOfRange(t *testing.T) {
	_, err := trace.ReadSMI(strings.NewReader("timestamp, power.draw [W]\n2026/11/21 10:23:45.123, 1e308 kW\n"))
	if err == nil || !strings.Contains(err.Error(), `line 2: power.draw [W] "1e308 kW" is out of range`) {
		t.Errorf("err = %v", err)
	}
	_, err = trace.ReadSMI(strings.NewReader("timestamp, power.draw [W]\n0001-01-01T00:00:00Z, 1\n9999-01-01T00:00:00Z, 1\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3: timestamp") || !strings.Contains(err.Error(), "too far") {
		t.Errorf("err = %v", err)
	}
}
