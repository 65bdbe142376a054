package trace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// TestParseFiniteBytes: the fast path of a CSV's numbers gives ParseFloat's float64, bit
// for bit, and its errors, on decimals as gpuwatt and other tools write them and on the
// forms it leaves to ParseFloat.
func TestParseFiniteBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []string{"0", "-0", "+0", "0.0", "-0.0", "5", "5.", ".5", "100.050", "123456789012345", "1234567890123456",
		"0.000000000000000000001", "0.0000000000000000000001", "0.00000000000000000000001", "1e3", "inf", "NaN", "-", "+", "1.2.3",
		"12a", "0x10", "1_000", "99999999999999999999", "4999.9999999", "1e400", "-1e400", "1e-400", " 5", "5 "}
	for range 40000 {
		ip, fp := r.Uint64N(1_000_000_000), r.Uint64N(10_000_000)
		cases = append(cases, fmt.Sprintf("%d.%0*d", ip%uint64(math.Pow10(1+r.IntN(9))), 1+r.IntN(7), fp%uint64(math.Pow10(1+r.IntN(7)))),
			strconv.FormatFloat(r.Float64()*5000, 'f', r.IntN(10), 64), strconv.FormatFloat(r.NormFloat64()*1e6, 'g', -1, 64))
	}
	for _, c := range cases {
		got, gmsg := parseFiniteBytes([]byte(c))
		want, wmsg := parseFinite(c)
		if math.Float64bits(got) != math.Float64bits(want) || gmsg != wmsg {
			t.Fatalf("%q: %v (%q), ParseFloat's %v (%q)", c, got, gmsg, want, wmsg)
		}
	}
	for _, c := range []string{"0", "1767225600020000", "999999999999999999", "1000000000000000000", "-5", "+5", "", "12x"} {
		got, ok := parseUint([]byte(c))
		want, err := strconv.ParseInt(c, 10, 64)
		if ok && (err != nil || got != want) {
			t.Errorf("parseUint(%q) = %d, ParseInt %d, %v", c, got, want, err)
		}
	}
}

// TestIntegrateEnergy: the energy of regions in time order, each search going on from the
// last, is IntegrateReadings's bit for bit (and so Integrate's: TestReadingsAreSamples).
func TestIntegrateEnergy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 50, 2000} {
		s := Readings{T: make([]time.Duration, n), V: make([]float64, n)}
		tt := time.Duration(0)
		for i := range s.T {
			tt += time.Duration(r.IntN(30)) * time.Millisecond // repeats of an instant too
			s.T[i], s.V[i] = tt, 100+500*r.Float64()
		}
		hint, a := 0, -50*time.Millisecond
		for range 400 {
			b := a + time.Duration(r.IntN(200))*time.Millisecond
			got, next := IntegrateEnergy(s, a, b, hint)
			if want := IntegrateReadings(s, a, b).Energy; math.Float64bits(float64(got)) != math.Float64bits(float64(want)) {
				t.Fatalf("n %d: [%v, %v] from hint %d: %v, want %v", n, a, b, hint, got, want)
			}
			if r.IntN(10) == 0 {
				next = r.IntN(n + 2) // a hint that is wrong: a search over all
			}
			hint, a = next, b
		}
	}
}

// TestReadingsAreSamples: the column functions give the Sample functions' figures on the
// same readings.
func TestReadingsAreSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 3, 50, 2000} {
		s := make([]Sample, n)
		tt := time.Duration(0)
		for i := range s {
			tt += time.Duration(r.IntN(30)) * time.Millisecond
			if r.IntN(200) == 0 {
				tt += 5 * time.Second // a gap
			}
			v := float64(r.IntN(5)) // stale repeats
			s[i] = Sample{T: tt, Value: v, DriverUS: int64(i)}
		}
		c := ReadingsOf(s)
		for range 50 {
			a := time.Duration(r.IntN(int(tt/time.Millisecond)+100)-50) * time.Millisecond
			b := a + time.Duration(r.IntN(3000))*time.Millisecond
			if got, want := IntegrateReadings(c, a, b), Integrate(s, a, b); got != want {
				t.Fatalf("Integrate: %+v, want %+v", got, want)
			}
			if got, want := CounterEnergyReadings(c, a, b), CounterEnergy(s, a, b); got != want {
				t.Fatalf("CounterEnergy: %+v, want %+v", got, want)
			}
		}
		kept, dropped := DedupeReadings(c, 4*time.Millisecond)
		ks, ds := Dedupe(s, 4*time.Millisecond)
		if dropped != ds || !reflect.DeepEqual(kept, ReadingsOf(ks)) {
			t.Fatalf("Dedupe: %d dropped, want %d", dropped, ds)
		}
		g, u := GapsReadings(c)
		gs, us := Gaps(s)
		if u != us || !reflect.DeepEqual(g, gs) {
			t.Fatalf("Gaps: %v %v, want %v %v", g, u, gs, us)
		}
	}
}
