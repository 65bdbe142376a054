package units

import (
	"testing"
	"time"
)

func TestString(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{Power(690.14).String(), "690.1 W"},
		{(1500 * Watt).String(), "1.5 kW"},
		{(250 * Milliwatt).String(), "250 mW"},
		{Energy(3102.4).String(), "3.102 kJ"},
		{(4.89 * Picojoule).String(), "4.89 pJ"},
		{(1980 * Megahertz).String(), "1.98 GHz"},
		{Temperature(41).String(), "41 °C"},
		{Power(0).String(), "0 W"},
		{Power(-12.5).String(), "-12.5 W"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestEnergyPower(t *testing.T) {
	e := EnergyOf(300*Watt, 2*time.Second)
	if e != 600 {
		t.Fatalf("EnergyOf = %v, want 600 J", e)
	}
	if p := PowerOf(e, 2*time.Second); p != 300 {
		t.Fatalf("PowerOf = %v, want 300 W", p)
	}
	if p := PowerOf(e, 0); p != 0 {
		t.Fatalf("PowerOf zero duration = %v, want 0", p)
	}
}

// TestFormatDuration: the unit is the largest in which the figure is at least 1, to the
// digits asked; a negative length keeps its sign (it printed as "0" in correct's notes).
func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		sig  int
		want string
	}{
		{840 * time.Millisecond, 3, "840 ms"},
		{1500 * time.Millisecond, 3, "1.5 s"},
		{time.Second, 4, "1 s"},
		{250 * time.Microsecond, 4, "250 µs"},
		{12345 * time.Microsecond, 3, "12.3 ms"},
		{12345 * time.Microsecond, 4, "12.35 ms"},
		{999 * time.Nanosecond, 3, "0.999 µs"},
		{0, 3, "0"},
		{-5 * time.Millisecond, 3, "-5 ms"},
	} {
		if got := FormatDuration(c.d, c.sig); got != c.want {
			t.Errorf("FormatDuration(%v, %d) = %q, want %q", c.d, c.sig, got, c.want)
		}
		if got := FormatSeconds(c.d.Seconds(), c.sig); got != c.want {
			t.Errorf("FormatSeconds(%g, %d) = %q, want %q", c.d.Seconds(), c.sig, got, c.want)
		}
	}
}

// TestFormatInstant: seconds to the µs, no trailing zeros, never "-0".
func TestFormatInstant(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{
		{3.2, "3.2 s"}, {12.345678, "12.345678 s"}, {12.3456784, "12.345678 s"}, {0, "0 s"}, {-0.0000001, "0 s"}, {-1.5, "-1.5 s"}, {2, "2 s"},
	} {
		if got := FormatInstant(c.s); got != c.want {
			t.Errorf("FormatInstant(%g) = %q, want %q", c.s, got, c.want)
		}
	}
}
