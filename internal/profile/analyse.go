package profile

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gpuwatt/internal/lsq"
	"gpuwatt/internal/sensormodel"
)

// analyse bins the cloud (raw profile) and deconvolves it (profile proper).
func analyse(res *Result, pts []Point, tex time.Duration, opt RunOptions) {
	res.Points = pts
	if res.Points == nil {
		res.Points = []Point{}
	}
	res.Raw = rawBins(pts)
	W := opt.Sensor.Window.Seconds()
	tau := opt.Sensor.Tau.Seconds()
	T := opt.Sensor.Period.Seconds()
	if res.PeriodS > 0 {
		T = res.PeriodS
	}
	ts := tex.Seconds()
	if len(pts) < opt.MinEdges {
		res.Warnf(CodeNoProfile, "only %d readings tied to the runs: no profile", len(pts))
		res.Profile = []Bin{}
		return
	}
	// How precise a reading's time is: half a poll interval, or for a buffered channel on
	// its grid, 0.1 ms.
	prec := opt.Poll.Seconds() / 2
	if opt.buffered {
		prec = 1e-4
		if res.Grid == nil {
			prec = 1e-3
		}
	}
	// The finest resolution at which every bin is seen by MinEdges window edges, no finer
	// than twice the precision of the stamps, and whose 95 % bands are at most a tenth of
	// the kernel's mean power above the baseline (wider bands mean nothing: coarser bins).
	maxM := max(1, min(200, int(ts/(2*prec))))
	var (
		m      int
		counts []int
		x      []float64
		cov    [][]float64
		band   float64
		tried  int
	)
	for k := maxM; k >= 1; k-- {
		c := edgeCounts(pts, ts, k, W)
		if minInt(c) < opt.MinEdges {
			continue
		}
		xk, ck, _, ok := fit(pts, ts, k, W, tau)
		if !ok {
			continue
		}
		tried++
		// the median half-width of the bins' bands, against the mean height above baseline
		var hw []float64
		above := 0.0
		for j := 0; j < k; j++ {
			hw = append(hw, 1.96*math.Sqrt(max(ck[j+1][j+1], 0)))
			above += (xk[j+1] - xk[0]) / float64(k)
		}
		slices.Sort(hw)
		band = hw[len(hw)/2]
		m, counts, x, cov = k, c, xk, ck
		if band <= MaxBand*math.Abs(above) || k == 1 || tried >= 40 {
			break
		}
	}
	if m == 0 {
		res.Warnf(CodeNoProfile, "the kernel (%s) is not seen by %d readings anywhere, or the deconvolution is singular: too few runs", tex, opt.MinEdges)
		res.Profile = []Bin{}
		return
	}
	h := ts / float64(m)
	res.BaselineW = x[0]
	res.ResolutionS = h
	edge := "window edges (a reading's window start or end)"
	if W == 0 {
		edge = "sample instants"
	}
	how := fmt.Sprintf("readings are the mean of a %.3g ms window every %.3g ms", W*1e3, T*1e3)
	switch {
	case W == 0 && tau > 0:
		how = fmt.Sprintf("readings are point samples every %.3g ms of the power through a first-order lag (tau %.3g ms)", T*1e3, tau*1e3)
	case tau > 0:
		how = fmt.Sprintf("readings are the mean of a %.3g ms window, every %.3g ms, of the power through a first-order lag (tau %.3g ms)", W*1e3, T*1e3, tau*1e3)
	case W == 0:
		how = fmt.Sprintf("readings are point samples every %.3g ms", T*1e3)
	}
	stamps := fmt.Sprintf("update stamps are precise to %.3g ms", prec*1e3)
	if res.Grid != nil {
		stamps = fmt.Sprintf("sample times are the driver's, on their %.4g ms grid (%d of %d moved onto it)", res.Grid.PeriodS*1e3, res.Grid.Snapped, len(pts))
	}
	res.ResolutionWhy = fmt.Sprintf("%d readings; %d bins of %.3g ms over the %.3g ms kernel, each seen by >= %d %s (fewest %d), median 95 %% band ±%.3g W; %s, undone by least squares; %s",
		len(pts), m, h*1e3, ts*1e3, opt.MinEdges, edge, minInt(counts), band, how, stamps)
	var e, ea, ev float64
	for j := 0; j < m; j++ {
		sd := math.Sqrt(max(cov[j+1][j+1], 0))
		res.Profile = append(res.Profile, Bin{StartS: float64(j) * h, EndS: float64(j+1) * h, N: counts[j], PowerW: x[j+1], LowW: x[j+1] - 1.96*sd, HighW: x[j+1] + 1.96*sd})
		e += x[j+1] * h
		ea += (x[j+1] - x[0]) * h
		for k := 0; k < m; k++ {
			ev += cov[j+1][k+1] * h * h
		}
	}
	res.EnergyJ, res.EnergyAboveBaselineJ = e, ea
	res.EnergyStatHalfWidthJ = 1.96 * math.Sqrt(max(ev, 0))
	res.EnergyModelHalfWidthJ, res.EnergyModelNote = modelSpread(pts, ts, m, e, opt.Sensor)
	hw := math.Hypot(res.EnergyStatHalfWidthJ, res.EnergyModelHalfWidthJ)
	res.EnergyLowJ, res.EnergyHighJ = e-hw, e+hw
	if h > ts/4 {
		res.Warnf(CodeCoarse, "coarse profile: %d bins over the kernel; run more (--runs)", m)
	}
	lowP, highP := math.Inf(1), math.Inf(-1)
	for _, b := range res.Profile {
		lowP, highP = min(lowP, b.PowerW), max(highP, b.PowerW)
	}
	if lowP < 0.5*x[0] || highP > 3*x[0]+1000 {
		res.Warnf(CodeImplausible, "implausible powers in the profile (%.0f .. %.0f W against a baseline of %.0f W): the sensor model (%s) is likely wrong for this channel", lowP, highP, x[0], res.Model)
	}
}

// modelSpread is the sensor model's part of the energy's interval: the profile fitted again
// (same bins) with the window and the lag at each end of their 95 % intervals, the largest
// change of the energy per run. The delay's interval is not propagated (it moves which
// readings belong to a run, fixed before the fit); a model without intervals says so.
func modelSpread(pts []Point, ts float64, m int, e float64, s sensormodel.Model) (float64, string) {
	W, tau := s.Window.Seconds(), s.Tau.Seconds()
	var tries [][2]float64
	if iv := s.CI.Window; iv.Known() && W > 0 {
		tries = append(tries, [2]float64{max(iv.Low, 0), tau}, [2]float64{iv.High, tau})
	}
	if iv := s.CI.Tau; iv.Known() && tau > 0 {
		tries = append(tries, [2]float64{W, max(iv.Low, 0)}, [2]float64{W, iv.High})
	}
	if len(tries) == 0 {
		if W == 0 && tau == 0 {
			return 0, "point samples without a lag: no model parameter to propagate"
		}
		return 0, "the sensor model carries no interval (pass a sensor.json from gpuwatt sensor): its own uncertainty is not included"
	}
	h := ts / float64(m)
	hw := 0.0
	for _, t := range tries {
		x, _, _, ok := fit(pts, ts, m, t[0], t[1])
		if !ok {
			continue
		}
		var ev float64
		for j := 0; j < m; j++ {
			ev += x[j+1] * h
		}
		hw = max(hw, math.Abs(ev-e))
	}
	return hw, "the profile fitted again with the window and the lag at each end of their intervals (the delay's is not propagated)"
}

// MaxBand is the widest median 95 % band (half-width, as a share of the kernel's mean power
// above the baseline) at which a bin width is accepted.
const MaxBand = 0.1

// edgeCounts counts, per bin of [0, tex) cut into m, the readings whose window end (or
// start) falls in it.
func edgeCounts(pts []Point, tex float64, m int, W float64) []int {
	c := make([]int, m)
	add := func(t float64) {
		if t >= 0 && t < tex {
			c[min(m-1, int(t/tex*float64(m)))]++
		}
	}
	for _, p := range pts {
		add(p.PhaseS)
		if W > 0 {
			add(p.PhaseS - W)
		}
	}
	return c
}

func minInt(c []int) int {
	v := math.MaxInt
	for _, x := range c {
		v = min(v, x)
	}
	return v
}

// row returns the model's coefficients for one reading: [baseline, bin 0..m-1]. The
// reading sees the kernel of its own run at phase p.PhaseS and of earlier runs at
// p.others; the rest of what it sees is the baseline.
func row(dst []float64, p Point, tex float64, m int, W, tau float64) []float64 {
	dst = dst[:0]
	dst = append(dst, 0)
	for range m {
		dst = append(dst, 0)
	}
	h := tex / float64(m)
	sum := 0.0
	add := func(ph float64) {
		prev := sensormodel.StepResponse(ph, W, tau)
		for j := 0; j < m; j++ {
			next := sensormodel.StepResponse(ph-float64(j+1)*h, W, tau)
			c := prev - next
			prev = next
			dst[j+1] += c
			sum += c
		}
	}
	add(p.PhaseS)
	for _, ph := range p.others {
		add(ph)
	}
	dst[0] = 1 - sum
	return dst
}

// fit solves the least-squares deconvolution (lsq's QR); it returns the estimate, its
// covariance (σ² (AᵀA)⁻¹ with σ² = RSS / max(1, points − parameters)) and the residual
// standard deviation.
func fit(pts []Point, tex float64, m int, W, tau float64) (x []float64, cov [][]float64, sigma float64, ok bool) {
	p := m + 1
	rows := make([][]float64, len(pts))
	y := make([]float64, len(pts))
	for n, pt := range pts {
		rows[n], y[n] = row(nil, pt, tex, m, W, tau), pt.PowerW
	}
	r, err := lsq.Solve(rows, y)
	if err != nil {
		return nil, nil, 0, false
	}
	dof := max(1, len(pts)-p)
	sigma = math.Sqrt(r.RSS / float64(dof))
	cov = r.Unscaled()
	for i := range cov {
		for j := range cov[i] {
			cov[i][j] *= sigma * sigma
		}
	}
	return r.Coef, cov, sigma, true
}

// rawBins bins the cloud at the windows' middles: bins of at least 20 readings (at most
// 100 bins), mean ± 1.96 σ/√n.
func rawBins(pts []Point) []Bin {
	if len(pts) == 0 {
		return []Bin{}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = min(lo, p.MidS), max(hi, p.MidS)
	}
	nb := max(1, min(100, len(pts)/20))
	if hi <= lo {
		hi = lo + 1e-6
	}
	w := (hi - lo) / float64(nb)
	sum := make([]float64, nb)
	sq := make([]float64, nb)
	n := make([]int, nb)
	for _, p := range pts {
		i := min(nb-1, int((p.MidS-lo)/w))
		sum[i] += p.PowerW
		sq[i] += p.PowerW * p.PowerW
		n[i]++
	}
	out := []Bin{}
	for i := 0; i < nb; i++ {
		if n[i] == 0 {
			continue
		}
		mean := sum[i] / float64(n[i])
		sd := 0.0
		if n[i] > 1 {
			sd = math.Sqrt(max(0, (sq[i]-float64(n[i])*mean*mean)/float64(n[i]-1)))
		}
		ci := 1.96 * sd / math.Sqrt(float64(n[i]))
		out = append(out, Bin{StartS: lo + float64(i)*w, EndS: lo + float64(i+1)*w, N: n[i], PowerW: mean, LowW: mean - ci, HighW: mean + ci})
	}
	return out
}
