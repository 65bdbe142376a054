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
		`{"preset": "a100", "eps_op_pj": {"fp32.add": 0.1, "fp32.fma": 7}, "ops_per_cycle_sm": {"bf16.fma": 0}, "bandwidth_bytes_per_s": {"l2": 1e13}}`,
		`{"eps_level_pj_per_byte": {"shared": 3.3}, "eps_mem_rail_pj_per_byte": 12.5, "sms": 7, "launch_overhead_s": 1e-9, "l2_bytes": 1}`,
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
