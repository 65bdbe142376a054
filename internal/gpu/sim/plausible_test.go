package sim

import (
	"strings"
	"testing"
)

// A figure no GPU has is refused naming its key: idle_w 1e308 printed +Inf W and 7e306 °C.
func TestConfigRefusesImplausible(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"idle_w": 1e308}`, "idle_w: 1e+308 W is beyond any GPU's: want at most 5000 W"},
		{`{"active_idle_w": 6000}`, "active_idle_w: 6000 W is beyond any GPU's"},
		{`{"command_load_w": 1e300}`, "command_load_w: 1e+300 W"},
		{`{"power_limit_w": 1e9, "default_power_limit_w": 700}`, "power_limit_w: 1e+09 W"},
		{`{"pi0_w": 1e200}`, "pi0_w: 1e+200 W"},
		{`{"load": [{"t_s": 1, "duration_s": 1, "power_w": 1e308}]}`, "load[0]: power_w: 1e+308 W"},
		{`{"launch_overhead_s": 100}`, "launch_overhead_s: 100 s"},
		{`{"eps_flop_fp32_pj": 1e300}`, "eps_flop_fp32_pj: 1e+300 pJ"},
		{`{"max_sm_clock_hz": 1e300}`, "max_sm_clock_hz: 1e+300 Hz"},
		{`{"bandwidth_bytes_per_s": {"l2": 1e300}}`, `bandwidth_bytes_per_s["l2"]: 1e+300 bytes/s`},
		{`{"ops_per_cycle_sm": {"fp32.add": 1e300}}`, `ops_per_cycle_sm["fp32.add"]: 1e+300 is beyond`},
	} {
		_, err := LoadConfig(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	// Every preset is plausible.
	for _, p := range []string{"h100", "h200", "a100", "v100", "k20"} {
		if _, err := LoadConfig(strings.NewReader(`{"preset": "` + p + `"}`)); err != nil {
			t.Errorf("preset %s: %v", p, err)
		}
	}
}
