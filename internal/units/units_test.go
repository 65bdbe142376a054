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
