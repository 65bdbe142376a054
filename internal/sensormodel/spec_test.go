package sensormodel

import (
	"strings"
	"testing"
	"time"
)

func TestParseModel(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Model
		str  string
	}{
		{"none", Model{}, "none"},
		{" NONE ", Model{}, "none"},
		{"rc:tau=0.84s", Model{Tau: 840 * time.Millisecond}, "rc:tau=840ms"},
		{"RC:TAU=840ms,period=15ms", Model{Tau: 840 * time.Millisecond, Period: 15 * time.Millisecond}, "rc:tau=840ms,period=15ms"},
		{"boxcar:window=1s", Model{Window: time.Second}, "boxcar:window=1s"},
		{"boxcar:window=25ms,period=100ms", Model{Window: 25 * time.Millisecond, Period: 100 * time.Millisecond}, "boxcar:window=25ms,period=100ms"},
		{"boxcar:window=25ms,tau=14ms,period=100ms,delay=3ms", Model{Window: 25 * time.Millisecond, Tau: 14 * time.Millisecond, Period: 100 * time.Millisecond, Delay: 3 * time.Millisecond}, "boxcar:window=25ms,tau=14ms,period=100ms,delay=3ms"},
		{"boxcar: period=100ms , window=25ms, delay=2ms", Model{Window: 25 * time.Millisecond, Period: 100 * time.Millisecond, Delay: 2 * time.Millisecond}, "boxcar:window=25ms,period=100ms,delay=2ms"},
	} {
		m, err := Parse(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if m != tc.want || m.String() != tc.str {
			t.Errorf("%q: got %+v (%s), want %+v (%s)", tc.in, m, m, tc.want, tc.str)
		}
		if again, err := Parse(m.String()); err != nil || again != m {
			t.Errorf("%q: String %q reads back as %+v, %v", tc.in, m, again, err)
		}
	}
}

func TestParseModelErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "unknown sensor model"},
		{"boxcar", "needs window=DURATION"},
		{"rc:", "needs tau=DURATION"},
		{"rc:tau=0.84", "bare number"},
		{"rc:tau=-1s", "want > 0"},
		{"rc:tau=0s", "want > 0"},
		{"rc:tau=2h", "at most 1h"},
		{"rc:window=1s", `unknown parameter "window" for rc`},
		{"boxcar:tau=1s", `boxcar needs window=DURATION`},
		{"rc:tau=1s,window=1s", `unknown parameter "window" for rc`},
		{"boxcar:window=1s,window=2s", "window given twice"},
		{"boxcar:period=100ms", "needs window=DURATION"},
		{"boxcar:window", `parameter "window" is not KEY=DURATION`},
		{"boxcar:=1s", "is not KEY=DURATION"},
		{"boxcar:window=1s,delay=-1ms", "delay=-1ms: want >= 0"},
		{"boxcar:window=25ms,period=0s", "period=0s: want > 0"}, // issue 20: was accepted as "period unknown"
		{"boxcar:window=fast", "want a duration with a unit"},
		{"none:tau=1s", "none takes no parameters"},
		{"lag:tau=1s", "unknown sensor model"},
	} {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}
