package correct_test

import (
	"bytes"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

func FuzzParseModel(f *testing.F) {
	for _, s := range []string{"none", "rc:tau=0.84s", "boxcar:window=1s", "boxcar:window=25ms,period=100ms,delay=1ms",
		"rc:tau=0.84", "boxcar:window=1s,window=1s", "boxcar:=", "rc:tau=9223372036854775807ns", "boxcar:window=1h0m0.000000001s", ":,=,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := sensormodel.Parse(s)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("%q parsed to an invalid model %+v: %v", s, m, err)
		}
		again, err := sensormodel.Parse(m.String())
		if err != nil || again != m {
			t.Fatalf("%q: %+v prints as %q, which reads back as %+v, %v", s, m, m.String(), again, err)
		}
		if sp, err := correct.ParseSpec(m.String()); err != nil || sp.String() != m.String() {
			t.Fatalf("ParseSpec(%q) = %v, %v", m.String(), sp, err)
		}
	})
}

func FuzzParseProfile(f *testing.F) {
	f.Add([]byte(profileJSON))
	f.Add([]byte(`{"channels": {"p": {"model": "rc", "tau_s": 0.84}}}`))
	f.Add([]byte(`{"channels": {"p": {"model": "boxcar", "window_s": 1e-9, "period_s": 3600}}}`))
	f.Add([]byte(`{"channels": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := correct.ParseProfile(data)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := correct.WriteProfile(&b, *p); err != nil {
			t.Fatal(err)
		}
		back, err := correct.ParseProfile(b.Bytes())
		if err != nil {
			t.Fatalf("a profile that parsed does not read back: %v\n%s", err, b.String())
		}
		for name, cm := range p.Channels {
			if m1, m2 := cm.Model, back.Channels[name].Model; m1 != m2 {
				t.Fatalf("%s: %+v became %+v", name, m1, m2)
			}
		}
	})
}
