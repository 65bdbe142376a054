package energy

import (
	"errors"
	"fmt"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/lsq"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// The energy of a region. The driver's energy counter (energy.total) is the reference
// scale, but on an H100/H200 it steps every 100 ms and a read costs ~3 ms of CPU, so the
// Sampler reads it only every ~0.65-2 s: a measurement of 1-2 s has zero to two readings
// inside, and a figure interpolated across readings outside it, where the power differs,
// is off by up to ±30 % (H200, 2026-11-21). The driver's sample ring (power.samples) holds
// every 20 ms sample with the driver's timestamp, and over a whole run agrees with the
// counter within 0.14 %. So:
//
//   - over the whole recording, the counter's increase between successive readings (idle
//     included) is related to the integral of the best complete board channel (the ring,
//     else power.instant) between them: increase = gain × integral + offset × time, by a
//     robust generalised least-squares fit that weighs out the increments the channel
//     misreads (FitCalibration, solveCalibration);
//   - a region whose counter has at least MinCounterReadings readings inside, spanning at
//     least MinCounterSpan of the region and MinCounterSteps of the counter's resolution in
//     time, takes the counter's own figure (its least-squares rate over the readings
//     inside, for a steady region);
//   - any other region takes the calibrated channel's figure: gain × its energy + offset ×
//     the duration, where that channel has at least MinChannelReadings readings inside,
//     anchored to the counter's increase over the readings around the region where that
//     bound is the narrower or the region holds nearly all of their span's load (anchor.go);
//   - without a calibration (no counter, or too few readings in the whole recording), the
//     inversion of a channel's sensor model (Region, the package comment); only where
//     nothing better exists the interpolated counter, with a warning.

// Thresholds of the choice of a region's energy source.
const (
	// MinCounterReadings is the fewest counter readings inside a region for the counter's
	// own figure: three give a slope over two intervals, so one badly timed reading does
	// not set it.
	MinCounterReadings = 3
	// MinCounterSpan is the least share of the region those readings must span: else most
	// of the region's energy is inferred from outside it.
	MinCounterSpan = 0.5
	// MinCounterSteps is the least span of those readings in units of the counter's
	// resolution in time (CounterResolution: its update period, or its poll interval where
	// that is shorter): each reading is late by up to one of them, so the counter's own
	// figure is uncertain by about one resolution's worth of energy, which this bounds to
	// 1 %. On the H200 (100 ms steps, read every ~1.2 s) that is 10 s: over the 5 s
	// measurements of 2026-11-21 the counter's own figure scattered by ±2 % about the
	// calibrated ring's (region/energy_h200_test.go).
	MinCounterSteps = 100
	// MinChannelReadings is the fewest readings of the calibrated channel inside a region
	// for its figure to be used (a 1 s region has 50 ring samples, 5-10 instant readings).
	MinChannelReadings = 10
	// MinCalibrationReadings is the fewest counter readings a calibration is fitted from.
	MinCalibrationReadings = 10
)

// counterChannel is the driver's energy counter; calibratable are the board channels a
// calibration may relate to it, best first: the ring sees every 20 ms of the time, the
// instant field a 25 ms window of every 100 ms (unbiased for a steady load); the 1 s
// averages lag a short region too much to stand in for the counter.
const counterChannel = trace.ChEnergyTotal

// CounterChannel is the name of the driver's energy counter.
const CounterChannel = counterChannel

var calibratable = []string{trace.ChPowerSamples, trace.ChPowerInstant}

// Calibration maps a power channel's energy onto the energy counter's scale:
// E_counter = Gain × E_channel + OffsetW × T, fitted by least squares to the counter's
// readings over the recording (each against the channel's integral up to that reading).
type Calibration struct {
	Channel  string  `json:"channel"`
	Gain     float64 `json:"gain"`
	OffsetW  float64 `json:"offset_w"`
	Readings int     `json:"counter_readings"`
	SpanS    float64 `json:"span_s"`
	// RMSJ is the RMS residual of the counter readings (J); RatioCounterToSamples the
	// plain ratio of the counter's increase to the channel's integral over the span.
	RMSJ                  float64 `json:"rms_j"`
	RatioCounterToSamples float64 `json:"ratio_counter_to_samples"`
	Method                string  `json:"method"`
	// GainSE and OffsetSEW are the standard errors of Gain and OffsetW from the fit's
	// residuals, CovGainOffset their covariance (W): the calibration's share of a region's
	// interval. The residuals of successive readings are correlated, so the fit's own
	// errors are widened by SerialInflation (lsq.Result.SerialInflation: the AR(1) factor
	// of the residuals' lag-1 autocorrelation; 1 for the plain ratio).
	GainSE          float64 `json:"gain_se"`
	OffsetSEW       float64 `json:"offset_se_w"`
	CovGainOffset   float64 `json:"cov_gain_offset_w"`
	SerialInflation float64 `json:"serial_inflation,omitempty"`
	// MisreadFraction is the channel's misreading of each increment between counter
	// readings, as a fraction of its energy (beyond the readings' lateness), and
	// MisreadIncrements how many increments it misread beyond that, left out of the fit
	// (solveCalibration).
	MisreadFraction   float64 `json:"misread_fraction,omitempty"`
	MisreadIncrements int     `json:"misread_increments,omitempty"`
}

// EnergyHalfWidth is the 95 % half-width (J) that the calibration's uncertainty gives the
// energy e (J) of the calibrated channel over a region of length d.
func (c *Calibration) EnergyHalfWidth(e float64, d time.Duration) float64 {
	t := d.Seconds()
	v := e*e*c.GainSE*c.GainSE + t*t*c.OffsetSEW*c.OffsetSEW + 2*e*t*c.CovGainOffset
	return 1.96 * math.Sqrt(max(v, 0))
}

// Energy is energy e (J) of the calibrated channel over a region of length d, on the
// counter's scale.
func (c *Calibration) Energy(e float64, d time.Duration) float64 {
	return c.Gain*e + c.OffsetW*d.Seconds()
}

// Power is power p (W) of the calibrated channel on the counter's scale.
func (c *Calibration) Power(p float64) float64 { return c.Gain*p + c.OffsetW }

// String is a one-line account of the calibration.
func (c *Calibration) String() string {
	return fmt.Sprintf("%s on %s's scale: gain %.4f, offset %+.2f W (%d counter readings over %.0f s, rms %.2f J; %s)",
		c.Channel, counterChannel, c.Gain, c.OffsetW, c.Readings, c.SpanS, c.RMSJ, c.Method)
}

// FitCalibration fits the calibration of GPU gpu's best complete board channel (the sample
// ring, else power.instant) to its energy counter over the readings in [from, to]; to <= from
// means the whole trace.
func FitCalibration(tr *trace.Trace, gpu int, from, to time.Duration) (Calibration, error) {
	return fitCalibration(tr, gpu, from, to, func(name string) trace.Readings { return tr.Readings(gpu, name) })
}

// fitCalibration is FitCalibration with the channels' readings from series.
func fitCalibration(tr *trace.Trace, gpu int, from, to time.Duration, series func(name string) trace.Readings) (Calibration, error) {
	ctr := series(counterChannel)
	if ctr.Len() == 0 {
		return Calibration{}, fmt.Errorf("no %s channel", counterChannel)
	}
	var names, whys []string
	for _, name := range calibratable {
		ch, ok := tr.Channel(gpu, name)
		if !ok || ch.Quantity != trace.QPower {
			continue
		}
		c, err := fitChannel(series(name), ctr, from, to, CounterResolution(tr, gpu))
		if err == nil {
			c.Channel = name
			return c, nil
		}
		names, whys = append(names, name), append(whys, err.Error())
	}
	if len(names) == 0 {
		return Calibration{}, fmt.Errorf("no %s or %s channel to calibrate", calibratable[0], calibratable[1])
	}
	return Calibration{}, errors.New(joinWhys(names, whys))
}

// joinWhys is one line for the channels' reasons: a reason they share said once (the
// counter's readings are the same for every channel), else each channel's after its name.
func joinWhys(names, whys []string) string {
	same := true
	for _, w := range whys[1:] {
		same = same && w == whys[0]
	}
	if same {
		return whys[0]
	}
	parts := make([]string, len(names))
	for i := range names {
		parts[i] = names[i] + ": " + whys[i]
	}
	return strings.Join(parts, "; ")
}

// MaxScaleReadings is the most counter readings a named channel's scale is fitted from
// (FitScale): every k-th, evenly over the recording, since each costs an inversion.
const MaxScaleReadings = 400

// FitScale fits a channel's own inverted energy (ser: its sensor model undone) to the
// counter's readings ctr over the whole recording, as FitCalibration does the ring's raw
// integral: the scale on which a named channel's figure is given (issue 28: the twin's
// channels carry an offset the counter does not; a real board's channels and counter
// differ by up to a few tenths of a percent). At most MaxScaleReadings readings, inside
// the span the channel's readings describe.
func FitScale(ser *correct.Series, ctr trace.Readings, res time.Duration) (Calibration, error) {
	lo, hi := ser.Span()
	in := longestRun(ctr, lo, hi)
	if in.Len() < MinCalibrationReadings {
		return Calibration{}, fmt.Errorf("only %d readings of %s in the recording (want %d)", in.Len(), counterChannel, MinCalibrationReadings)
	}
	in = spacedReadings(in, MinFitIncrement)
	if k := (in.Len() + MaxScaleReadings - 1) / MaxScaleReadings; k > 1 {
		var sub trace.Readings
		for i := 0; i < in.Len(); i += k {
			sub.T, sub.V = append(sub.T, in.T[i]), append(sub.V, in.V[i])
		}
		in = sub
	}
	return solveCalibration(in, res, func(a, b time.Duration) float64 { return ser.Energy(a, b).Energy.Joules() })
}

// MinFitIncrement is the shortest span between two counter readings a calibration or a
// named channel's scale is fitted over (spacedReadings). The robust fit tells a load the
// channel misreads by its increment standing out from the rest; over increments of a few
// hundred ms the ring's sampling of an ordinary fast-varying load scatters as much (an
// H200 with the counter read every 100 ms, results/nvidia-h200/2026-11-28-intervals-
// shapes-8: the misreading 8.2 % of every increment, none weighed out, and the ring's
// scale × 1.014 where readings 2 s apart give × 0.997 with 6 of 71 weighed out; the ring's
// calibration alike put the default's 0.5 s windows 2-6 % off against ±0.4-2 %). Only
// dense readings are thinned (DenseFitReadings): the lean default reads an H200's counter
// every 1.7 s or more, and its fits are as before.
const MinFitIncrement = 1500 * time.Millisecond

// DenseFitReadings is the mean spacing of counter readings below which a fit takes them
// MinFitIncrement apart (spacedReadings): a counter read densely on purpose (measure
// --counter-every) or on a twin, whose calls cost nothing. Readings further apart are fitted
// as they are: an H200's at 1.2 s (results/nvidia-h200/2026-11-21-foundation,
// region's TestH200Energy) as before.
const DenseFitReadings = 500 * time.Millisecond

// spacedReadings keeps, where in's readings are on average closer than DenseFitReadings,
// its first reading and then each at least min after the one kept before it, and its
// last, where that leaves at least MinCalibrationReadings; otherwise in.
func spacedReadings(in trace.Readings, min time.Duration) trace.Readings {
	n := in.Len()
	if n < 2 || (in.T[n-1]-in.T[0])/time.Duration(n-1) >= DenseFitReadings {
		return in
	}
	out := trace.Readings{T: []time.Duration{in.T[0]}, V: []float64{in.V[0]}}
	for i := 1; i < n; i++ {
		last := out.T[out.Len()-1]
		switch {
		case in.T[i]-last >= min:
		case i == n-1 && out.Len() > 1:
			// The last reading ends the fit: it replaces one kept too close before it.
			out.T, out.V = out.T[:out.Len()-1], out.V[:out.Len()-1]
		default:
			continue
		}
		out.T, out.V = append(out.T, in.T[i]), append(out.V, in.V[i])
	}
	if out.Len() < MinCalibrationReadings {
		return in
	}
	return out
}

// longestRun is the first of the longest runs of ctr's readings in [lo, hi] that never go
// down (no reset inside).
func longestRun(ctr trace.Readings, lo, hi time.Duration) trace.Readings {
	cur := -1 // the current run's start (-1: none)
	best0, best1 := 0, 0
	for k, t := range ctr.T {
		if t < lo || t > hi {
			continue
		}
		if cur >= 0 && ctr.V[k] < ctr.V[k-1] {
			cur = -1
		}
		if cur < 0 {
			cur = k
		}
		if k+1-cur > best1-best0 {
			best0, best1 = cur, k+1
		}
	}
	return ctr.Slice(best0, best1)
}

// fitCalibration relates the counter's readings ctr to the integral of power series p.
func fitChannel(p, ctr trace.Readings, from, to, res time.Duration) (Calibration, error) {
	if p.Len() < 2 {
		return Calibration{}, errors.New("fewer than 2 readings")
	}
	lo, hi := p.T[0], p.T[p.Len()-1]
	if to > from {
		lo, hi = max(lo, from), min(hi, to)
	}
	// The readings inside the channel's span, in the longest stretch without a reset: the
	// first of the longest runs [a, b) of ctr's readings in [lo, hi] that never go down.
	in := longestRun(ctr, lo, hi)
	if in.Len() < MinCalibrationReadings {
		where := "in the recording"
		if to > from {
			where = "in the window"
		}
		return Calibration{}, fmt.Errorf("only %d readings of %s %s (want %d)", in.Len(), counterChannel, where, MinCalibrationReadings)
	}
	in = spacedReadings(in, MinFitIncrement)
	// The channel's integral from the first reading to each, one segment at a time.
	hint := 0 // the segments come in time order (trace.IntegrateEnergy)
	return solveCalibration(in, res, func(a, b time.Duration) float64 {
		var e units.Energy
		e, hint = trace.IntegrateEnergy(p, a, b, hint)
		return e.Joules()
	})
}

// solveCalibration fits the counter's readings in (one run without a reset) against a
// channel's energy between them (energyOf, called in time order); res is how late a
// reading may be (CounterResolution).
//
// The fit is over the increments between successive readings (the counter's increase
// against the channel's energy and the time between them), robustly: a load the channel
// misreads (one locked to its sampling: the H200's ring read a 20 ms square wave +21 %)
// gives an increment far off the others, and a least-squares fit over every reading let
// the few such loads of a recording set the scale of every region (× 0.964 + 6.7 W where
// steady loads read the ring within 0.4 %: results/nvidia-h200/2026-11-28-intervals-shapes-2).
// robustFit says how.
func solveCalibration(in trace.Readings, res time.Duration, energyOf func(a, b time.Duration) float64) (Calibration, error) {
	n := in.Len()
	inc := make([]increment, n-1)
	var sumE float64
	for i := 1; i < n; i++ {
		inc[i-1] = increment{dC: in.V[i] - in.V[i-1], dE: energyOf(in.T[i-1], in.T[i]), dT: (in.T[i] - in.T[i-1]).Seconds()}
		sumE += inc[i-1].dE
	}
	c := Calibration{Readings: n, SpanS: (in.T[n-1] - in.T[0]).Seconds()}
	if sumE <= 0 || c.SpanS <= 0 {
		return Calibration{}, errors.New("integrates to nothing")
	}
	c.RatioCounterToSamples = (in.V[n-1] - in.V[0]) / sumE
	if f, ok := robustFit(inc, res); ok && f.gain > 0.8 && f.gain < 1.25 && math.Abs(f.offset) < 50 {
		c.Gain, c.OffsetW = f.gain, f.offset
		c.GainSE, c.OffsetSEW, c.CovGainOffset = f.gainSE, f.offsetSE, f.cov
		c.RMSJ, c.MisreadFraction, c.MisreadIncrements = f.rms, f.eps, f.dropped
		c.Method = fmt.Sprintf("robust generalised least squares over the counter's increments: increase = gain × integral + offset × time; %d of %d increments weighed out as misread, the channel's misreading %.2g %% of the rest", f.dropped, len(inc), 100*f.eps)
		return c, nil
	}
	// A fit that makes no sense (too little variation of power): the plain ratio.
	c.Gain, c.Method = c.RatioCounterToSamples, "ratio of the counter's increase to the integral"
	if !(c.Gain > 0.8 && c.Gain < 1.25) {
		return Calibration{}, fmt.Errorf("differs from %s by a factor %.3g", counterChannel, c.Gain)
	}
	var ss, sxx, y, x float64
	for _, k := range inc {
		y, x = y+k.dC, x+k.dE
		r := y - c.Gain*x // the cumulative residual, as the counter reads it
		ss += r * r
		sxx += x * x
	}
	c.RMSJ = math.Sqrt(ss / float64(n))
	if n > 1 && sxx > 0 {
		c.GainSE = math.Sqrt(ss / float64(n-1) / sxx)
	}
	return c, nil
}

// increment is the counter's increase dC (J) between two of its readings dT seconds
// apart, and the channel's energy dE (J) between them.
type increment struct{ dC, dE, dT float64 }

// robustFitted is robustFit's result: the gain and offset (W), their standard errors and
// covariance, the RMS residual of the increments kept (J), how many were weighed out, and
// the channel's misreading of the rest (eps, a fraction of each increment's energy).
type robustFitted struct {
	gain, offset, gainSE, offsetSE, cov, rms, eps float64
	dropped                                       int
}

// Tukey's bisquare: an increment whose residual is tukeyC robust standard deviations off
// weighs nothing (95 % efficiency where the residuals are normal); robustIterations bounds
// the reweighting.
const (
	tukeyC           = 4.685
	robustIterations = 50
)

// robustFit fits dC = gain × dE + offset × dT over the increments by generalised least
// squares with two kinds of error, and Tukey's bisquare against a third:
//
//   - each counter reading is late by up to res, uniformly, at the power drawn there (the
//     counter's mean rate over the increments either side): variance P² res² / 12, shared
//     by the two increments the reading bounds (with opposite signs), so that over many
//     readings only the ends count (a least-squares fit of the levels, as the readings
//     every 100 ms of the twin want);
//   - the channel misreads each increment's energy by a fraction eps of it, independently
//     (a fit of the increments, as the real board's readings every 4 s want, where locked
//     and ramped loads read the ring 2-5 % off), eps estimated from the residuals;
//   - an increment off the rest by more than those explain (its residual over its standard
//     deviation, tukeyC times their robust spread) is a load the channel cannot read: its
//     misreading variance grows by 1/w (w its bisquare weight), to no information at w = 0,
//     without breaking the chain of readings around it.
//
// The covariance is tridiagonal: its Cholesky factor whitens the increments in O(n).
// ok is false where gain and offset cannot be told apart (the power hardly varies from
// increment to increment) or the fit fails.
func robustFit(inc []increment, res time.Duration) (robustFitted, bool) {
	n := len(inc)
	if n < 3 {
		return robustFitted{}, false
	}
	// v[i]: the lateness variance of reading i (between increments i-1 and i).
	v := make([]float64, n+1)
	for i := range v {
		var e, t float64
		for _, j := range []int{i - 1, i} {
			if j >= 0 && j < n {
				e, t = e+inc[j].dC, t+inc[j].dT
			}
		}
		p := 0.0
		if t > 0 {
			p = max(e/t, 0)
		}
		v[i] = p * p * res.Seconds() * res.Seconds() / 12
	}
	floor := CounterQuantumJ * CounterQuantumJ // a reading is no better than the counter's unit
	lateness := func(k int) float64 { return v[k] + v[k+1] + floor }
	base := make([]float64, n)
	for k := range inc {
		base[k] = 1 / lateness(k)
	}
	if !separable(inc, base) {
		return robustFitted{}, false
	}
	w := make([]float64, n)
	for k := range w {
		w[k] = 1
	}
	var f *lsq.Result
	eps := 0.0
	r := make([]float64, n)
	u := make([]float64, n)
	for it := 0; it < robustIterations; it++ {
		g, err := whitenedFit(inc, v, floor, eps, w)
		if err != nil {
			return robustFitted{}, false
		}
		f = g
		for k, x := range inc {
			r[k] = x.dC - f.Coef[0]*x.dE - f.Coef[1]*x.dT
		}
		// eps² by moments over the increments kept: what their residuals hold beyond
		// the readings' lateness, per J² of their energy.
		var num, den float64
		for k, x := range inc {
			num += w[k] * (r[k]*r[k] - lateness(k))
			den += w[k] * x.dE * x.dE
		}
		if den > 0 {
			eps = math.Sqrt(max(num/den, 0))
		}
		// Which increments are misread beyond the rest is judged on a misreading fraction
		// of the median increment (a mean over them all would let one increment the ring
		// reads 20 % off inflate it until nothing stands out: the twin's TestCalibration-
		// RobustToMisread): epsRob² the median of (r² − lateness) / dE², over its value for
		// a normal residual (0.455, the median of χ² with one degree of freedom).
		q := make([]float64, n)
		for k, x := range inc {
			q[k] = (r[k]*r[k] - lateness(k)) / max(x.dE*x.dE, floor)
		}
		epsRob := math.Sqrt(max(median(q)/0.455, 0))
		for k, x := range inc {
			u[k] = math.Abs(r[k]) / math.Sqrt(lateness(k)+epsRob*epsRob*x.dE*x.dE)
		}
		// Their robust spread, at least 1: where the model of their errors is right it is 1,
		// and a spread below it would reject readings the model already explains.
		s := max(1.4826*median(u), 1)
		moved := false
		for k := range inc {
			q := u[k] / (tukeyC * s)
			nw := 0.0
			if q < 1 {
				nw = (1 - q*q) * (1 - q*q)
			}
			moved = moved || math.Abs(nw-w[k]) > 1e-6
			w[k] = nw
		}
		if !moved {
			break
		}
	}
	out := robustFitted{gain: f.Coef[0], offset: f.Coef[1], eps: eps}
	var ss float64
	kept := 0
	for k := range inc {
		if w[k] < 1e-3 {
			out.dropped++
			continue
		}
		ss += r[k] * r[k]
		kept++
	}
	if kept > 0 {
		out.rms = math.Sqrt(ss / float64(kept))
	}
	// The standard errors from the errors' model, widened where the residuals say the
	// model is too small (never narrowed: the whitened residuals' σ at least 1).
	if un := f.Unscaled(); len(un) == 2 {
		k := max(f.Sigma, 1)
		if math.IsNaN(k) {
			k = 1
		}
		out.gainSE, out.offsetSE, out.cov = k*math.Sqrt(un[0][0]), k*math.Sqrt(un[1][1]), k*k*un[0][1]
	}
	return out, true
}

// whitenedFit is the generalised least-squares fit of dC = gain × dE + offset × dT under
// robustFit's covariance: lateness variances v of the readings (and floor), misreading
// eps × dE of each increment inflated by 1/w (none at w = 0). The covariance is
// tridiagonal (diagonal v[k] + v[k+1] + floor + misreading, v[k+1] negated beside it);
// its Cholesky factor L is bidiagonal, and L⁻¹ applied to the columns and to dC leaves
// an ordinary least-squares fit (lsq.Solve, σ ≈ 1 where the model holds).
func whitenedFit(inc []increment, v []float64, floor, eps float64, w []float64) (*lsq.Result, error) {
	n := len(inc)
	const dropped = 1e30 // a misreading variance that leaves an increment no information
	diag := make([]float64, n)
	for k, x := range inc {
		m := dropped
		if w[k] > 1e-6 {
			m = eps * eps * x.dE * x.dE / w[k]
		}
		diag[k] = v[k] + v[k+1] + floor + m
	}
	l, lo := make([]float64, n), make([]float64, n) // L's diagonal; lo[k] = L[k][k-1]
	l[0] = math.Sqrt(diag[0])
	for k := 1; k < n; k++ {
		lo[k] = -v[k] / l[k-1]
		l[k] = math.Sqrt(max(diag[k]-lo[k]*lo[k], floor))
	}
	A, y := make([][]float64, n), make([]float64, n)
	var pe, pt, pc float64 // the previous row's whitened values
	for k, x := range inc {
		e, t, c := x.dE, x.dT, x.dC
		if k > 0 {
			e, t, c = e-lo[k]*pe, t-lo[k]*pt, c-lo[k]*pc
		}
		e, t, c = e/l[k], t/l[k], c/l[k]
		A[k], y[k] = []float64{e, t}, c
		pe, pt, pc = e, t, c
	}
	return lsq.Solve(A, y)
}

// separable says whether gain and offset can be told apart over the increments: their
// mean powers dE/dT must vary (the weighted spread of the rates over 1e-3 of their mean),
// else dE is (nearly) a multiple of dT and only their ratio is fixed.
func separable(inc []increment, w []float64) bool {
	var sw, sm, sq float64
	for k, x := range inc {
		if x.dT <= 0 {
			continue
		}
		r := x.dE / x.dT
		sw, sm, sq = sw+w[k]*x.dT, sm+w[k]*x.dT*r, sq+w[k]*x.dT*r*r
	}
	if sw <= 0 {
		return false
	}
	mean := sm / sw
	v := sq/sw - mean*mean
	return mean > 0 && math.Sqrt(max(v, 0)) > 1e-3*mean
}

// DefaultCounterResolution is the counter's resolution in time where the trace does not
// say (NVML's energy counter steps every ~100 ms on A100, H100 and H200).
const DefaultCounterResolution = 100 * time.Millisecond

// CounterResolution is how late a reading of GPU gpu's energy counter may be against the
// energy it reports: the counter's update period where it is read less often than it
// updates (its value then dates from up to one period before the read), else its poll
// interval (a new value is seen within one poll of its update).
func CounterResolution(tr *trace.Trace, gpu int) time.Duration {
	ch, ok := tr.Channel(gpu, counterChannel)
	if !ok || ch.Stats == nil || ch.Stats.UpdatePeriod <= 0 {
		return DefaultCounterResolution
	}
	r := ch.Stats.UpdatePeriod
	if p := ch.Stats.PollInterval; p > 0 && p < r {
		r = p
	}
	return time.Duration(r * float64(time.Second))
}

// counterResolves says whether a counter's readings inside (from, to) are enough for its
// own figure (see the thresholds above), with their number and span.
func counterResolves(s trace.Readings, from, to, resolution time.Duration) (ok bool, n int, span time.Duration) {
	i, j := inside(s, from, to)
	if j > i {
		span = s.T[j-1] - s.T[i]
	}
	n = j - i
	ok = n >= MinCounterReadings && float64(span) >= MinCounterSpan*float64(to-from) && span >= MinCounterSteps*resolution
	return ok, n, span
}

// Inside returns the samples strictly inside (from, to).
func Inside(s []trace.Sample, from, to time.Duration) []trace.Sample {
	i := sort.Search(len(s), func(i int) bool { return s[i].T > from })
	j := sort.Search(len(s), func(j int) bool { return s[j].T >= to })
	if i >= j {
		return nil
	}
	return s[i:j]
}

// inside is the range [i, j) of s's readings strictly inside (from, to) (Inside's).
func inside(s trace.Readings, from, to time.Duration) (int, int) {
	i, j := s.After(from), s.Search(to)
	if i >= j {
		return 0, 0
	}
	return i, j
}

// insideSamples is Inside of s's readings, as Samples (of no GPU or channel: InsideRate and
// InsideMean read times and values alone).
func insideSamples(s trace.Readings, from, to time.Duration) []trace.Sample {
	i, j := inside(s, from, to)
	out := make([]trace.Sample, 0, j-i)
	for k := i; k < j; k++ {
		out = append(out, trace.Sample{T: s.T[k], Value: s.V[k]})
	}
	return out
}

// InsideRate is a counter's rate (W) from its readings inside (from, to), how many, and
// the rate's standard error (0 with fewer than 3): the least-squares slope of energy over
// time, so that the timing error of each reading (up to half a poll interval) averages
// out instead of weighing on two end points.
func InsideRate(s []trace.Sample, from, to time.Duration) (rate float64, n int, se float64) {
	in := Inside(s, from, to)
	if len(in) < 2 || in[len(in)-1].Value < in[0].Value {
		return 0, 0, 0
	}
	t0, e0 := in[0].T, in[0].Value
	A, b := make([][]float64, len(in)), make([]float64, len(in))
	for i, x := range in {
		A[i], b[i] = []float64{(x.T - t0).Seconds(), 1}, x.Value-e0
	}
	fit, err := lsq.Solve(A, b)
	if err != nil {
		return 0, 0, 0
	}
	if fit.SE != nil {
		// The counter steps every update period while it is read more often: its residuals
		// are a sawtooth, serially correlated, which the plain standard error ignores.
		se = fit.SE[0] * fit.SerialInflation()
	}
	return fit.Coef[0], len(in), se
}

// InsideMean is a power channel's time-weighted mean from its readings inside (from, to),
// and how many there are.
func InsideMean(s []trace.Sample, from, to time.Duration) (float64, int) {
	in := Inside(s, from, to)
	if len(in) < 2 {
		return 0, len(in)
	}
	return float64(trace.Integrate(in, in[0].T, in[len(in)-1].T).Mean), len(in)
}

// SourceNote says where the energies of a session's regions come from, given its
// calibration (nil: none could be fitted).
func SourceNote(c *Calibration) string {
	if c == nil {
		return "the energy counter where it has enough readings inside a region; else the best board channel on its own scale (no calibration to the counter could be fitted: see each region's warnings)"
	}
	return fmt.Sprintf("the energy counter where it has at least %d readings inside a region spanning %.0f %% of it and %d of its steps; else %s's energy on the counter's scale: %s",
		MinCounterReadings, 100*MinCounterSpan, MinCounterSteps, c.Channel, c.String())
}
