package report

import (
	"math"
	"strconv"
	"strings"
)

// scale maps data values on one axis to pixels. On a log axis the mapping is linear in
// log10 of the value and only positive values are valid.
type scale struct {
	log    bool
	lo, hi float64 // data range; lo < hi, both positive on a log axis
	p0, p1 float64 // pixels of lo and hi
}

func (s scale) t(v float64) float64 {
	if s.log {
		return math.Log10(v)
	}
	return v
}

// inv is the value whose t is u (t's inverse).
func (s scale) inv(u float64) float64 {
	if s.log {
		return math.Pow(10, u)
	}
	return u
}

// valid reports whether v can be placed on the axis at all.
func (s scale) valid(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!s.log || v > 0)
}

// px returns the pixel of v, clamped far outside the plot so that absurd values do not
// produce absurd numbers in the output (the plot area is clipped anyway).
func (s scale) px(v float64) float64 {
	// Halved so that ranges near ±MaxFloat64 do not overflow.
	a, b := s.t(s.lo)/2, s.t(s.hi)/2
	p := s.p0 + (s.t(v)/2-a)/(b-a)*(s.p1-s.p0)
	return math.Max(-1e5, math.Min(1e5, p))
}

// inRange reports whether v lies within the axis range (with a little tolerance).
func (s scale) inRange(v float64) bool {
	if !s.valid(v) {
		return false
	}
	a, b, t := s.t(s.lo), s.t(s.hi), s.t(v)
	eps := (b/2 - a/2) * 2e-9
	return t >= a-eps && t <= b+eps
}

// axisTicks is what an axis draws: labelled major ticks and unlabelled minor ticks.
type axisTicks struct {
	major  []float64
	labels []string
	minor  []float64
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// expandDegenerate widens an empty range [v, v] to something that can carry ticks:
// ±10 % of |v| on a linear axis (±1 around zero), a factor √10 either way on a log axis.
func expandDegenerate(lo, hi float64, log bool) (float64, float64) {
	if lo > hi {
		lo, hi = hi, lo
	}
	if log {
		if lo <= 0 || !finite(lo) || !finite(hi) {
			return 1, 10
		}
		if hi/lo < 1+1e-9 {
			return lo / sqrt10, hi * sqrt10
		}
		return lo, hi
	}
	if !finite(lo) || !finite(hi) {
		return 0, 1
	}
	if degenerate(lo, hi) {
		d := math.Max(math.Abs(lo), math.Abs(hi)) * 0.1
		if d == 0 {
			d = 1
		}
		return lo - d, hi + d
	}
	return lo, hi
}

// degenerate reports whether the linear range [lo, hi] is too narrow for float64 to
// tell ticks apart (within about 50 ulps), the case [v, v] included.
func degenerate(lo, hi float64) bool {
	return hi/2-lo/2 <= math.Max(math.Abs(lo), math.Abs(hi))*5e-15
}

// niceStep is a step of the form m × 10^e with m in {1, 2, 5}.
type niceStep struct {
	m int64
	e int
}

func (s niceStep) value() float64 { return s.mul(1) }

// mul returns k × m × 10^e, computed so that decimal values come out as the nearest
// float64 (121.8 rather than 121.80000000000001).
func (s niceStep) mul(k int64) float64 {
	if s.e < 0 {
		return float64(k*s.m) / math.Pow10(-s.e)
	}
	return float64(k*s.m) * math.Pow10(s.e)
}

func (s niceStep) next() niceStep {
	switch s.m {
	case 1:
		return niceStep{2, s.e}
	case 2:
		return niceStep{5, s.e}
	}
	return niceStep{1, s.e + 1}
}

// firstNiceStep returns the smallest nice step ≥ rough.
func firstNiceStep(rough float64) niceStep {
	e := int(math.Floor(math.Log10(rough)))
	s := niceStep{1, e}
	for i := 0; i < 4 && s.value() < rough*(1-1e-12); i++ {
		s = s.next()
	}
	return s
}

// niceTicks returns the multiples of the smallest step of the form 1, 2 or 5 × 10^k that
// puts at most maxTicks ticks in [lo, hi], and that step.
func niceTicks(lo, hi float64, maxTicks int) ([]float64, niceStep) {
	if maxTicks < 2 {
		maxTicks = 2
	}
	lo, hi = expandDegenerate(lo, hi, false)
	half := hi/2 - lo/2 // half the span, which cannot overflow
	s := firstNiceStep(half / float64(maxTicks) * 2)
	for range 64 {
		v := s.value()
		k0 := math.Ceil(lo/v - 1e-9)
		k1 := math.Floor(hi/v + 1e-9)
		if math.Abs(k0) > 1e15 || math.Abs(k1) > 1e15 {
			// The range is too narrow for its magnitude to be told apart in float64.
			return []float64{lo, hi}, s
		}
		if n := k1 - k0 + 1; n <= float64(maxTicks) {
			ticks := make([]float64, 0, int(max(n, 0)))
			for k := int64(k0); k <= int64(k1); k++ {
				ticks = append(ticks, s.mul(k))
			}
			return ticks, s
		}
		s = s.next()
	}
	return []float64{lo, hi}, s
}

// linearTicks returns labelled ticks for a linear axis over [lo, hi].
func linearTicks(lo, hi float64, maxTicks int) axisTicks {
	major, step := niceTicks(lo, hi, maxTicks)
	return axisTicks{major: major, labels: formatLinear(major, step)}
}

// logTicks returns ticks for a log axis over [lo, hi] (lo > 0): decades with minor ticks
// at 2..9 when there are at least two decades in range; 1-2-5 sequences within a decade
// or two; nice linear ticks as a last resort for very narrow ranges.
func logTicks(lo, hi float64, maxTicks int) axisTicks {
	if maxTicks < 2 {
		maxTicks = 2
	}
	lo, hi = expandDegenerate(lo, hi, true)
	a, b := math.Log10(lo), math.Log10(hi)
	k0 := int(math.Ceil(a - 1e-9))
	k1 := int(math.Floor(b + 1e-9))
	in := func(v float64) bool { return v >= lo*(1-1e-9) && v <= hi*(1+1e-9) }
	var t axisTicks
	if n := k1 - k0 + 1; n >= 2 {
		every := (n + maxTicks - 1) / maxTicks
		for k := k0; k <= k1; k++ {
			v := decade(k)
			if mod(k, every) == 0 {
				t.major = append(t.major, v)
				t.labels = append(t.labels, formatLog(v))
			} else {
				t.minor = append(t.minor, v)
			}
		}
		if every == 1 && n <= 12 {
			for k := k0 - 1; k <= k1; k++ {
				for m := int64(2); m <= 9; m++ {
					if v := (niceStep{m, k}).value(); in(v) {
						t.minor = append(t.minor, v)
					}
				}
			}
		}
		return t
	}
	// Less than two decades: try 1, 2, 5 × 10^k.
	var major, minor []float64
	for k := k0 - 1; k <= k1; k++ {
		for m := int64(1); m <= 9; m++ {
			v := (niceStep{m, k}).value()
			if !in(v) {
				continue
			}
			if m == 1 || m == 2 || m == 5 {
				major = append(major, v)
			} else {
				minor = append(minor, v)
			}
		}
	}
	if len(major) >= 2 && len(major) <= maxTicks {
		t.major, t.minor = major, minor
		for _, v := range major {
			t.labels = append(t.labels, formatLog(v))
		}
		return t
	}
	return linearTicks(lo, hi, maxTicks)
}

func mod(a, b int) int { return ((a % b) + b) % b }

// decade returns 10^k as the nearest float64.
func decade(k int) float64 {
	if k < 0 {
		return 1 / math.Pow10(-k)
	}
	return math.Pow10(k)
}

var siPrefixes = []struct {
	scale  float64
	suffix string
}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}

// formatLinear formats the ticks of one linear axis with one number of decimals, the
// fewest that tell the step apart: 0, 0.5, 1, 1.5. Axes reaching 10 000 or more use
// SI suffixes (5k, 10k, 15k); very small steps use compact scientific notation (2e-5).
func formatLinear(ticks []float64, step niceStep) []string {
	maxAbs := 0.0
	for _, v := range ticks {
		maxAbs = math.Max(maxAbs, math.Abs(v))
	}
	out := make([]string, len(ticks))
	div, suffix := 1.0, ""
	if maxAbs >= 1e4 && maxAbs < 1e15 {
		for _, p := range siPrefixes {
			if maxAbs >= p.scale {
				div, suffix = p.scale, p.suffix
				break
			}
		}
	}
	sci := maxAbs >= 1e15 || (maxAbs > 0 && maxAbs < 1e-3)
	for i, v := range ticks {
		if sci || v == 0 {
			out[i] = compactG(v)
			continue
		}
		decimals := -step.e
		if suffix != "" {
			decimals += int(math.Round(math.Log10(div)))
		}
		decimals = max(decimals, 0)
		s := strconv.FormatFloat(v/div, 'f', decimals, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		out[i] = fixZero(s) + suffix
	}
	return out
}

// formatLog formats a tick of a log axis: 0.001, 0.5, 20, 1k, 10k, 1M, 1e-6.
func formatLog(v float64) string {
	switch {
	case v >= 1e3 && v < 1e15:
		for _, p := range siPrefixes {
			if v >= p.scale*(1-1e-9) {
				return strconv.FormatFloat(roundSig(v/p.scale, 12), 'f', -1, 64) + p.suffix
			}
		}
	case v >= 1e-3 && v < 1e3:
		return strconv.FormatFloat(roundSig(v, 12), 'f', -1, 64)
	}
	return compactG(v)
}

// roundSig rounds v to n significant digits, removing float noise such as 0.30000000000000004.
func roundSig(v float64, n int) float64 {
	if v == 0 || !finite(v) {
		return v
	}
	s := strconv.FormatFloat(v, 'g', n, 64)
	r, _ := strconv.ParseFloat(s, 64)
	return r
}

// compactG formats v in shortest scientific form with a compact exponent: 1.5e-5, 2e20.
func compactG(v float64) string {
	if v == 0 {
		return "0"
	}
	s := strconv.FormatFloat(roundSig(v, 12), 'e', -1, 64)
	mant, exp, ok := strings.Cut(s, "e")
	if !ok {
		return s
	}
	sign := ""
	if exp[0] == '-' {
		sign = "-"
	}
	exp = strings.TrimLeft(exp, "+-0")
	if exp == "" {
		return mant
	}
	return mant + "e" + sign + exp
}

func fixZero(s string) string {
	if strings.TrimLeft(s, "-0.") == "" && strings.HasPrefix(s, "-") {
		return s[1:]
	}
	return s
}

// charWidths are advance widths in em of printable ASCII (from ' ' to '~') in DejaVu Sans,
// the widest of the common sans-serif fonts, so estimates err on the roomy side.
var charWidths = [95]float64{
	0.318, 0.401, 0.460, 0.838, 0.636, 0.950, 0.780, 0.275, 0.390, 0.390, 0.500, 0.838, 0.318, 0.361, 0.318, 0.337, // ' ' .. '/'
	0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, // '0' .. '9'
	0.337, 0.337, 0.838, 0.838, 0.838, 0.531, 1.000, // ':' .. '@'
	0.684, 0.686, 0.698, 0.770, 0.632, 0.575, 0.775, 0.752, 0.295, 0.295, 0.656, 0.557, 0.863, // 'A' .. 'M'
	0.748, 0.787, 0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685, // 'N' .. 'Z'
	0.390, 0.337, 0.390, 0.838, 0.500, 0.500, // '[' .. '`'
	0.613, 0.635, 0.550, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974, // 'a' .. 'm'
	0.634, 0.612, 0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, // 'n' .. 'z'
	0.636, 0.337, 0.636, 0.838, // '{' .. '~'
}

// textWidth estimates the rendered width in pixels of s set in a sans-serif font of the
// given size. It only has to be good enough to keep labels from colliding.
func textWidth(s string, size float64) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case r >= ' ' && r <= '~':
			w += charWidths[r-' ']
		case r >= 0x2E80: // CJK and beyond: full width
			w += 1.0
		default:
			w += 0.7
		}
	}
	return w * size
}

var sqrt10 = math.Sqrt(10)
