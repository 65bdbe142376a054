package measure

// Clock-event (throttle) reason bits of nvmlDeviceGetCurrentClocksEventReasons, as the
// trace's throttle.reasons channel records them (the sim device uses the same bits).
var reasonBits = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// notThrottling are reasons that do not slow a busy GPU down.
var notThrottling = map[string]bool{"gpu_idle": true, "applications_clocks_setting": true, "display_clock_setting": true}
