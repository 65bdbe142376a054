package amdsmi

import (
	"fmt"
	"strconv"
)

// Version is the library's version as amdsmi_get_lib_version gives it. Libraries of ROCm
// 6.0–6.3 number themselves YEAR.MAJOR.MINOR.RELEASE (24.6.2.0); from ROCm 6.4 on the year
// is gone and MAJOR starts at 25 (26.1.0 with ROCm 7.1).
type Version struct {
	Year                  uint32 // 0 where the library has no year
	Major, Minor, Release uint32
	Build                 string // the library's own version string, where it gives one
}

// ParseVersion reads amdsmi_version_t's four leading uint32 fields in whichever shape they
// are: a first field of 20–24 is a year (the shape of ROCm 6.0–6.3), 25 or more a major
// version (the year-less shape; majors started at 25 when the year was dropped).
func ParseVersion(w [4]uint32) Version {
	if w[0] >= 20 && w[0] <= 24 {
		return Version{Year: w[0], Major: w[1], Minor: w[2], Release: w[3]}
	}
	return Version{Major: w[0], Minor: w[1], Release: w[2]}
}

// String is "24.6.2.0" or "26.1.0".
func (v Version) String() string {
	s := strconv.FormatUint(uint64(v.Major), 10) + "." + strconv.FormatUint(uint64(v.Minor), 10) + "." + strconv.FormatUint(uint64(v.Release), 10)
	if v.Year != 0 {
		s = strconv.FormatUint(uint64(v.Year), 10) + "." + s
	}
	return s
}

// Layout is where a version of the library puts the fields gpuwatt reads of
// amdsmi_power_info_t (the one struct read here whose offsets moved between releases).
type Layout struct {
	Name string // which releases, for messages and docs
	// PowerInfoSize is sizeof(amdsmi_power_info_t); the buffer handed to C is larger anyway.
	PowerInfoSize int
	// CurrentOffset and AverageOffset are the byte offsets of the uint32 fields
	// current_socket_power and average_socket_power (W).
	CurrentOffset, AverageOffset int
}

// The layouts of amdsmi_power_info_t, from amdsmi.h of each release (ROCm/amdsmi tags
// rocm-6.0.0 … rocm-6.2.2 and amdsmi 24.7.0; the ROCm 6.4.1 and 7.0–7.1 API references):
//
//	ROCm 6.0–6.3 (23.4–24.7): uint32 current_socket_power, average_socket_power, gfx_voltage,
//	                          soc_voltage, mem_voltage, power_limit, reserved[11]   68 bytes
//	ROCm 6.4 (25.x):          uint64 socket_power; uint32 current_socket_power,
//	                          average_socket_power, gfx/soc/mem_voltage, power_limit,
//	                          reserved[2]                                            40 bytes
//	ROCm 7.x (26.x):          uint64 socket_power; uint32 current_socket_power,
//	                          average_socket_power; uint64 gfx/soc/mem_voltage; uint32
//	                          power_limit (ubb_power in later 26.x); uint64 reserved[18]
//	                                                                                 192 bytes
//
// ROCm 5.7 (23.0–23.2) had average_socket_power first and no current_socket_power: refused.
var (
	LayoutROCm6  = Layout{Name: "ROCm 6.0-6.3 (amdsmi 23.4-24.7)", PowerInfoSize: 68, CurrentOffset: 0, AverageOffset: 4}
	LayoutROCm64 = Layout{Name: "ROCm 6.4 (amdsmi 25.x)", PowerInfoSize: 40, CurrentOffset: 8, AverageOffset: 12}
	LayoutROCm7  = Layout{Name: "ROCm 7.x (amdsmi 26.x)", PowerInfoSize: 192, CurrentOffset: 8, AverageOffset: 12}
)

// Supported names the library versions the binding reads, for messages.
const Supported = "23.4-24.7 (ROCm 6.0-6.3), 25.x (ROCm 6.4) and 26.x (ROCm 7.x)"

// LayoutFor returns the layout of v's structs, or an error matching ErrUnsupportedVersion
// for a version the binding does not know (older than ROCm 6.0, or newer than it was
// written for): a struct read at the wrong offsets would give plausible wrong figures.
func LayoutFor(v Version) (*Layout, error) {
	switch {
	case v.Year == 23 && v.Major >= 4, v.Year == 24 && v.Major >= 1 && v.Major <= 7:
		return &LayoutROCm6, nil
	case v.Year == 0 && v.Major == 25:
		return &LayoutROCm64, nil
	case v.Year == 0 && v.Major == 26:
		return &LayoutROCm7, nil
	}
	why := "its struct layouts are not known to this gpuwatt"
	if v.Year != 0 && (v.Year < 23 || v.Year == 23 && v.Major < 4) {
		why = "it predates ROCm 6.0 (amdsmi_power_info_t had no current_socket_power)"
	}
	return nil, &versionError{msg: fmt.Sprintf("libamd_smi version %s is not supported: %s; supported: %s", v, why, Supported)}
}
