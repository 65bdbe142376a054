package energy

import "math"

// RunToRunFraction is the spread of a fitted or per-operation figure from one run to the
// next on one board, at 95 %, as a share of the figure: three back-to-back runs of micro
// on one H200 moved a per-operation energy by up to 1.2 % (l2.read 39.83 -> 39.38 pJ/B,
// issue 28), beyond what each run's own interval (its readings, edges, calibration) holds,
// so that a run's figure lay inside another run's interval in only 20 of 36 pairs. The
// relative interval of such a figure includes it (RelativeCI), so that it says what a
// repeat on the same board may give.
const RunToRunFraction = 0.012

// RelativeCI is the 95 % interval of figure v whose own interval is ci ([low, high]),
// widened by the run-to-run spread (RunToRunFraction of |v|, root sum of squares on each
// side): what a same-board comparison (kernel against kernel, run against run) needs.
// A zero ci (no interval) stays zero.
func RelativeCI(v float64, ci [2]float64) [2]float64 {
	if ci == [2]float64{} {
		return ci
	}
	r := RunToRunFraction * math.Abs(v)
	return [2]float64{v - math.Hypot(v-ci[0], r), v + math.Hypot(ci[1]-v, r)}
}

// AbsoluteCI is the 95 % interval of figure v, whose relative interval is ci, with the
// board's gain error (BoardGainError of |v|) added on each side (root sum of squares):
// what a comparison with another board or meter, or with the true energy, needs. Every
// figure proportional to the board's power (an energy, a pJ per operation, a power) takes
// it whole. A zero ci (no interval) stays zero.
func AbsoluteCI(v float64, ci [2]float64) [2]float64 {
	if ci == [2]float64{} {
		return ci
	}
	g := BoardGainError * math.Abs(v)
	return [2]float64{v - math.Hypot(v-ci[0], g), v + math.Hypot(ci[1]-v, g)}
}
