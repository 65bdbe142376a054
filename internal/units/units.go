// Package units holds the typed physical quantities passed between gpuwatt's packages,
// in the style of time.Duration: Power in watts, Energy in joules, Frequency in hertz and
// Temperature in degrees Celsius. Raw integers with unit suffixes (powerMW) appear only at
// the C boundary; everything above it uses these types.
package units

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Power is a power in watts.
type Power float64

// Common powers.
const (
	Milliwatt Power = 1e-3
	Watt      Power = 1
	Kilowatt  Power = 1e3
)

// Watts returns p as a float64 number of watts.
func (p Power) Watts() float64 { return float64(p) }

// String formats p with a unit, e.g. "690.1 W".
func (p Power) String() string { return format(float64(p), "W") }

// Energy is an energy in joules.
type Energy float64

// Common energies.
const (
	Picojoule  Energy = 1e-12
	Nanojoule  Energy = 1e-9
	Millijoule Energy = 1e-3
	Joule      Energy = 1
	Kilojoule  Energy = 1e3
)

// Joules returns e as a float64 number of joules.
func (e Energy) Joules() float64 { return float64(e) }

// String formats e with a unit, e.g. "3.102 kJ".
func (e Energy) String() string { return format(float64(e), "J") }

// Frequency is a frequency in hertz.
type Frequency float64

// Common frequencies.
const (
	Hertz     Frequency = 1
	Kilohertz Frequency = 1e3
	Megahertz Frequency = 1e6
	Gigahertz Frequency = 1e9
)

// Hz returns f as a float64 number of hertz.
func (f Frequency) Hz() float64 { return float64(f) }

// MHz returns f in megahertz.
func (f Frequency) MHz() float64 { return float64(f) / 1e6 }

// String formats f with a unit, e.g. "1.98 GHz".
func (f Frequency) String() string { return format(float64(f), "Hz") }

// Temperature is a temperature in degrees Celsius.
type Temperature float64

// Celsius returns t as a float64 number of degrees Celsius.
func (t Temperature) Celsius() float64 { return float64(t) }

// String formats t, e.g. "41 °C".
func (t Temperature) String() string { return fmt.Sprintf("%.4g °C", float64(t)) }

// EnergyOf returns the energy of power p held for duration d.
func EnergyOf(p Power, d time.Duration) Energy { return Energy(float64(p) * d.Seconds()) }

// PowerOf returns the mean power of energy e spent over duration d (0 for d <= 0).
func PowerOf(e Energy, d time.Duration) Power {
	if d <= 0 {
		return 0
	}
	return Power(float64(e) / d.Seconds())
}

var prefixes = []struct {
	scale float64
	name  string
}{
	{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}, {1e-3, "m"}, {1e-6, "µ"}, {1e-9, "n"}, {1e-12, "p"},
}

// format writes v with four significant digits and an SI prefix chosen so that the
// mantissa lies in [1, 1000).
func format(v float64, unit string) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%g %s", v, unit)
	}
	a := math.Abs(v)
	for _, p := range prefixes {
		if a >= p.scale*0.99995 {
			return fmt.Sprintf("%.4g %s%s", v/p.scale, p.name, unit)
		}
	}
	p := prefixes[len(prefixes)-1]
	return fmt.Sprintf("%.4g %s%s", v/p.scale, p.name, unit)
}

// FormatDuration writes d in s, ms or µs, the largest of them in which it is at least 1,
// to sig significant digits: "1.23 s", "840 ms", "250 µs", "-5 ms"; "0" for 0. It is
// gpuwatt's one way of writing a length of time in text; a time on a trace's axis is
// FormatInstant's.
func FormatDuration(d time.Duration, sig int) string {
	return formatLength(d, d.Seconds(), sig)
}

// FormatSeconds is FormatDuration of sec seconds (the unit chosen on sec to the ns).
func FormatSeconds(sec float64, sig int) string {
	return formatLength(time.Duration(sec*float64(time.Second)), sec, sig)
}

// formatLength writes sec with the unit d's size calls for.
func formatLength(d time.Duration, sec float64, sig int) string {
	if d < 0 {
		return "-" + formatLength(-d, -sec, sig)
	}
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.*g s", sig, sec)
	case d >= time.Millisecond:
		return fmt.Sprintf("%.*g ms", sig, sec*1e3)
	case d > 0:
		return fmt.Sprintf("%.*g µs", sig, sec*1e6)
	}
	return "0"
}

// FormatInstant writes a time on a trace's axis: seconds to the µs, without trailing
// zeros: "3.2 s", "12.345678 s", "0 s".
func FormatInstant(sec float64) string {
	b := strconv.AppendFloat(nil, sec, 'f', 6, 64)
	for len(b) > 0 && b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	if string(b) == "-0" {
		return "0 s"
	}
	return string(b) + " s"
}
