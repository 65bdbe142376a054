package sensormodel

import "math"

// The response of the RC lag to piecewise-constant power, written once. Times are in
// seconds; tau <= 0 is no lag.

// Lag advances a first-order lag tau·dy/dt = p − y, in state y0, over d >= 0 seconds of
// constant input p. It returns the state at the end, p + (y0 − p)·e^{−d/tau}, and the
// integral of the lagged signal over those d seconds, p·d + (y0 − p)·tau·(1 − e^{−d/tau}).
func Lag(y0, p, d, tau float64) (y, integral float64) {
	if tau <= 0 {
		return p, p * d
	}
	return p + (y0-p)*math.Exp(-d/tau), p*d + (y0-p)*tau*-math.Expm1(-d/tau)
}

// StepValue is the lagged unit step at x seconds after the step: 1 − e^{−x/tau} (0 before
// it; 1 from it on without a lag).
func StepValue(x, tau float64) float64 {
	switch {
	case tau <= 0 && x >= 0:
		return 1
	case tau <= 0 || x <= 0:
		return 0
	}
	return -math.Expm1(-x / tau)
}

// StepIntegral is the integral over [0, x] of a unit step passed through the lag:
// x − tau·(1 − e^{−x/tau}) (0 for x <= 0).
func StepIntegral(x, tau float64) float64 {
	switch {
	case x <= 0:
		return 0
	case tau <= 0:
		return x
	}
	return x + tau*math.Expm1(-x/tau)
}

// StepResponse is a channel's reading, x seconds after a unit step of the power began, for
// a boxcar of window w seconds over the lag tau: the mean of the lagged step over
// [x − w, x] (the lagged step itself at x when w <= 0).
func StepResponse(x, w, tau float64) float64 {
	if w <= 0 {
		return StepValue(x, tau)
	}
	return (StepIntegral(x, tau) - StepIntegral(x-w, tau)) / w
}
