package sim

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func FuzzLoadConfig(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"preset": "k20", "gpus": 2, "load": [{"t_s": 1, "duration_s": 2, "power_w": 150}]}`,
		`{"sensors": {"power.instant": {"window_s": 0.01, "unsupported": false}, "power.samples": {"ring": 5}}}`,
		`{"idle_w": 1e308, "active_idle_hold_s": 1e7}`,
		`{"load": [{"t_s": -1, "power_w": 1}]}`,
		`{"sensors": {"power.limit": {"unsupported": true}}, "seed": 18446744073709551615}`,
		`{"preset": 3}`,
		`[`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cfg, err := LoadConfig(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sim config: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		// Whatever loads writes back to itself.
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		back, err := LoadConfig(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("reloading %s: %v", b, err)
		}
		if !reflect.DeepEqual(back, cfg) {
			t.Fatalf("round trip differs for %s", b)
		}
	})
}
