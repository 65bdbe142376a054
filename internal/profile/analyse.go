package profile

import (
	"fmt"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"math"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
)

// analyse bins the cloud (raw profile) and deconvolves it (profile proper).
func analyse(res *Result, pts []Point, tex time.Duration, opt MeasureOptions) {
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
	prec := readingPrecision(res, opt)
	g, counts := chooseBins(pts, ts, prec, kernelMargin(opt.Sensor, ts), W, opt.MinEdges)
	margin := -g.a0
	m := g.m
	nominal := variant{W: W, tau: tau, name: "nominal"}
	// The kernel's edges are left free of the penalty within a bin and the delay's
	// uncertainty.
	free := g.h + delaySpread(opt.Sensor)
	q := penalty(g, ts, free)
	var sol solution
	var nm normal
	ok := m > 0
	if ok {
		nm = buildNormal(pts, nil, g, nominal)
		sol, ok = gcvSolve(nm, q)
	}
	if !ok {
		res.Warnf(CodeNoProfile, "the kernel (%s) is not seen by %d readings anywhere, or the deconvolution is singular: too few runs", tex, opt.MinEdges)
		res.Profile = []Bin{}
		return
	}
	x, cov := sol.x, sol.cov
	h := g.h
	energyOf := func(x []float64) float64 { return energyIn(x, ts, g) }
	res.BaselineW = x[0]
	res.BinS = h
	res.Lambda, res.EffectiveParams = sol.lambda, sol.df
	// The sensor model's part of the bands: the profile solved again (same bins, same λ)
	// at each end of each parameter's 95 % interval; per parameter the larger change, the
	// parameters combined as independent (root sum of squares).
	vars := modelVariants(opt.Sensor)
	modelBin, modelE, varied := modelParts(pts, g, q, sol, vars, ts)
	// The resolution, measured on a known shape: a step at the kernel's middle, read at
	// these readings' own phases through the nominal model and through each end of the
	// model's intervals, deconvolved as the readings were.
	above := (energyOf(x) - x[0]*ts) / ts
	// The delay's error moves the whole profile by as much (the placement); the window's
	// and the lag's change its shape (the width).
	truths := []variant{nominal}
	shift := 0.0
	for _, pair := range vars {
		if pair[0].name == "delay" {
			shift = max(math.Abs(pair[0].dD), math.Abs(pair[1].dD))
			continue
		}
		truths = append(truths, pair...)
	}
	stp := newStepper(pts, ts, g, nominal, truths, nm, q, x[0], sol.sigma, opt.Seed)
	stp.shift = shift
	res.stepper = stp
	st := stp.measureStep(above)
	res.ResolutionS = max(st.width, h)
	res.PlacementS = st.offset + shift
	edge := "window edges (a reading's window start or end)"
	if W == 0 {
		edge = "sample instants"
	}
	how := readingsHow(W, tau, T)
	stamps := fmt.Sprintf("update stamps are precise to %.3g ms", prec*1e3)
	if res.Grid != nil {
		stamps = fmt.Sprintf("sample times are the driver's, on their %.4g ms grid (%d of %d moved onto it)", res.Grid.PeriodS*1e3, res.Grid.Snapped, len(pts))
	}
	models := fmt.Sprintf("the nominal model (its lag and window carry no intervals), the step at %d places across a bin", StepPositions)
	if len(truths) > 1 {
		models = fmt.Sprintf("the nominal model and each end of its lag's and window's intervals (%d models, the step at %d places across a bin each; widest: %s)", len(truths), StepPositions, st.worst)
	}
	models += fmt.Sprintf(", with %d draws of noise of the fit's %.3g W at each, and deconvolved as the readings were (the same bins, lambda by GCV); the 95th percentile of the widths over places and draws, the widest model's", StepDraws, sol.sigma)
	place := "; the delay carries no interval"
	if shift > 0 {
		place = fmt.Sprintf(", and the delay's interval moves the whole profile by up to %.3g ms more", shift*1e3)
	}
	res.ResolutionWhy = fmt.Sprintf("the 10-90 %% width of a step (down by a quarter of the kernel's mean power above the baseline, near the kernel's middle) read at these %d readings' own phases through %s; its middle lands within %.3g ms of the true step (likewise)%s. %d bins of %.3g ms over the %.3g ms kernel and %.3g ms either side, each crossed by >= %d %s (fewest %d); %s; Tikhonov-regularised least squares on first differences, lambda by GCV (%.1f effective parameters); %s",
		len(pts), models, st.offset*1e3, place, m, h*1e3, ts*1e3, margin*1e3, opt.MinEdges, edge, minInt(counts), how, sol.df, stamps)
	for j := 0; j < m; j++ {
		sd := math.Sqrt(max(cov[j+1][j+1], 0))
		hw := math.Hypot(1.96*sd, modelBin[j])
		res.Profile = append(res.Profile, Bin{StartS: g.start(j), EndS: g.start(j + 1), N: counts[j], PowerW: x[j+1], LowW: x[j+1] - hw, HighW: x[j+1] + hw,
			StatHalfW: 1.96 * sd, ModelHalfW: modelBin[j]})
	}
	e := energyOf(x)
	res.EnergyJ, res.EnergyAboveBaselineJ = e, e-x[0]*ts
	res.EnergyStatHalfWidthJ = 1.96 * math.Sqrt(max(energyVariance(cov, ts, g), 0))
	// Beyond the fit's statistics, which hold only where the model is right and the
	// readings' errors independent: the spread of the energy over the runs (a jackknife
	// over JackknifeGroups groups of runs, at the same bins and λ: what is left of the
	// model's misfit varies with the phases the runs were read at), and the
	// regularisation's bias (the energy at a thousandth of λ against it).
	res.EnergyJackknifeHalfWidthJ = 1.96 * jackknife(pts, g, nominal, q, sol.lambda, energyOf)
	if s0, ok := solveAt(nm, q, sol.lambda*1e-3); ok {
		res.EnergyRegularisationJ = math.Abs(energyOf(s0.x) - e)
	}
	// The bins' part: how far the energy moves with bins twice as wide (the kernel in half
	// as many, λ again by GCV): a shape finer than the bins is represented only so well.
	res.EnergyBinsJ = binsPart(pts, ts, g, margin, free, nominal, e)
	res.EnergyModelHalfWidthJ = modelE
	res.EnergyModelNote = modelNote(varied, W, tau)
	if res.ResolutionS > ts/2 {
		res.Warnf(CodeCoarse, "coarse profile: a step is reproduced over %.3g ms of the %.3g ms kernel; run more (--runs) or narrow the model's intervals", res.ResolutionS*1e3, ts*1e3)
	}
	checkPlausible(res, ts, x[0])
	// The energy's 95 % interval: the statistical part (the larger of the fit's and the
	// runs' spread), the model's and the bins' combined as independent, the
	// regularisation's bias added.
	hw := math.Hypot(math.Hypot(max(res.EnergyStatHalfWidthJ, res.EnergyJackknifeHalfWidthJ), res.EnergyModelHalfWidthJ), res.EnergyBinsJ) + res.EnergyRegularisationJ
	res.LowJ, res.HighJ = e-hw, e+hw
	// With the board's gain error (±5 %) added: the bounds of the true energy (issue 28).
	abs := energy.AbsoluteCI(e, [2]float64{res.LowJ, res.HighJ})
	res.AbsoluteLowJ, res.AbsoluteHighJ = abs[0], abs[1]
}

// modelVariants are the models at the two ends of each parameter's 95 % interval (the
// window, the lag and the delay, where the model carries one), in pairs.
func modelVariants(s sensormodel.Model) [][]variant {
	W, tau, D := s.Window.Seconds(), s.Tau.Seconds(), s.Delay.Seconds()
	var out [][]variant
	if iv := s.CI.Window; iv.Known() && W > 0 {
		out = append(out, []variant{{W: max(iv.Low, 0), tau: tau, name: "window"}, {W: iv.High, tau: tau, name: "window"}})
	}
	if iv := s.CI.Tau; iv.Known() && tau > 0 {
		out = append(out, []variant{{W: W, tau: max(iv.Low, 0), name: "tau"}, {W: W, tau: iv.High, name: "tau"}})
	}
	if iv := s.CI.Delay; iv.Known() {
		out = append(out, []variant{{W: W, tau: tau, dD: max(iv.Low, 0) - D, name: "delay"}, {W: W, tau: tau, dD: iv.High - D, name: "delay"}})
	}
	return out
}

// edgeCounts counts, per bin of g, the readings whose window end (or start) falls in it.
func edgeCounts(pts []Point, g bins, W float64) []int {
	c := make([]int, g.m)
	add := func(t float64) {
		if k := int(math.Floor((t - g.a0) / g.h)); k >= 0 && k < g.m {
			c[k]++
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
// reading sees the profile of its own run at phase p.PhaseS and of earlier runs at
// p.others; the rest of what it sees is the baseline.
func row(dst []float64, p Point, g bins, W, tau float64) []float64 {
	dst = dst[:0]
	for range g.m + 1 {
		dst = append(dst, 0)
	}
	sum := 0.0
	add := func(ph float64) {
		prev := sensormodel.StepResponse(ph-g.a0, W, tau)
		for j := 0; j < g.m; j++ {
			next := sensormodel.StepResponse(ph-g.a0-float64(j+1)*g.h, W, tau)
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

// JackknifeGroups is how many groups of runs the energy's jackknife leaves out in turn.
const JackknifeGroups = 10

// jackknife is the standard deviation of the energy per run over the runs: the delete-a-
// group jackknife over JackknifeGroups groups of runs (run number modulo the groups), each
// solved at the same bins and λ.
func jackknife(pts []Point, g bins, v variant, q [][]float64, lambda float64, energyOf func([]float64) float64) float64 {
	K := JackknifeGroups
	groups := make([][]Point, K)
	for _, p := range pts {
		groups[p.Run%K] = append(groups[p.Run%K], p)
	}
	parts := make([]normal, K)
	var all normal
	for k := range groups {
		parts[k] = buildNormal(groups[k], nil, g, v)
		all = addNormal(all, parts[k], 1)
	}
	var es []float64
	for k := range parts {
		if parts[k].n == 0 {
			continue
		}
		s, ok := solveAt(addNormal(all, parts[k], -1), q, lambda)
		if !ok {
			return 0
		}
		es = append(es, energyOf(s.x))
	}
	if len(es) < 2 {
		return 0
	}
	mean := 0.0
	for _, e := range es {
		mean += e
	}
	mean /= float64(len(es))
	ss := 0.0
	for _, e := range es {
		ss += (e - mean) * (e - mean)
	}
	n := float64(len(es))
	return math.Sqrt((n - 1) / n * ss)
}

// readingPrecision is how precise a reading's time is: half a poll interval, or for a
// buffered channel on its grid, 0.1 ms (1 ms off it).
func readingPrecision(res *Result, opt MeasureOptions) float64 {
	if !opt.buffered {
		return opt.Poll.Seconds() / 2
	}
	if res.Grid == nil {
		return 1e-3
	}
	return 1e-4
}

// delaySpread is the larger distance from the model's delay to an end of its interval
// (0 without one).
func delaySpread(m sensormodel.Model) float64 {
	iv := m.CI.Delay
	if !iv.Known() {
		return 0
	}
	D := m.Delay.Seconds()
	return max(D-iv.Low, iv.High-D)
}

// kernelMargin is the time either side of a kernel of ts seconds that the profile covers:
// the delay's interval, power that outlasts the kernel.
func kernelMargin(m sensormodel.Model, ts float64) float64 {
	margin := max(5e-4, 0.1*ts)
	if m.CI.Delay.Known() {
		margin = max(margin, delaySpread(m))
	}
	return min(margin, 0.5*ts+2e-3)
}

// chooseBins picks the bins: the kernel's run of ts seconds and a margin either side, as
// fine as the stamps allow (twice their precision prec), at most 100, and each crossed by
// minEdges window edges (a bin no edge falls in is only interpolated). counts are the edges
// in each bin; no bins (m 0) where even one bin over the kernel has too few.
func chooseBins(pts []Point, ts, prec, margin, W float64, minEdges int) (bins, []int) {
	for k := max(1, min(100, int(ts/(2*prec)))); k >= 1; k-- {
		// k bins over the kernel (its start and end on bin boundaries), whole bins of the
		// margin either side
		h := ts / float64(k)
		nm := int(math.Ceil(margin/h - 1e-9))
		gk := bins{a0: -float64(nm) * h, h: h, m: k + 2*nm}
		c := edgeCounts(pts, gk, W)
		if minInt(c) >= minEdges {
			return gk, c
		}
	}
	return bins{}, nil
}

// energyIn is the energy per run of profile x over bins g: the baseline over the kernel's
// run of ts seconds and all the profile holds above it, margins included (c·x: c_0 = t_ex
// − span, c_j = h).
func energyIn(x []float64, ts float64, g bins) float64 {
	e := x[0] * (ts - float64(g.m)*g.h)
	for j := 0; j < g.m; j++ {
		e += x[j+1] * g.h
	}
	return e
}

// energyVariance is the variance of energyIn from the profile's covariance cov.
func energyVariance(cov [][]float64, ts float64, g bins) float64 {
	c := make([]float64, g.m+1)
	c[0] = ts - float64(g.m)*g.h
	for j := 1; j <= g.m; j++ {
		c[j] = g.h
	}
	ev := 0.0
	for a := range c {
		for b := range c {
			ev += c[a] * cov[a][b] * c[b]
		}
	}
	return ev
}

// modelParts is the sensor model's part of the bands: the profile solved again (same bins,
// same λ) at each end of each parameter's 95 % interval; per parameter the larger change,
// the parameters combined as independent (root sum of squares). varied names the
// parameters that could be solved at.
func modelParts(pts []Point, g bins, q [][]float64, sol solution, vars [][]variant, ts float64) (modelBin []float64, modelE float64, varied []string) {
	x := sol.x
	modelBin = make([]float64, g.m)
	for _, pair := range vars {
		dBin := make([]float64, g.m)
		dE := 0.0
		used := false
		for _, v := range pair {
			vs, ok := solveAt(buildNormal(pts, nil, g, v), q, sol.lambda)
			if !ok {
				continue
			}
			used = true
			for j := 0; j < g.m; j++ {
				dBin[j] = max(dBin[j], math.Abs(vs.x[j+1]-x[j+1]))
			}
			dE = max(dE, math.Abs(energyIn(vs.x, ts, g)-energyIn(x, ts, g)))
		}
		if used {
			varied = append(varied, pair[0].name)
		}
		for j := range dBin {
			modelBin[j] = math.Hypot(modelBin[j], dBin[j])
		}
		modelE = math.Hypot(modelE, dE)
	}
	return modelBin, modelE, varied
}

// readingsHow says what a reading is under the model: window W, lag tau, period T (s).
func readingsHow(W, tau, T float64) string {
	switch {
	case W == 0 && tau > 0:
		return fmt.Sprintf("readings are point samples every %.3g ms of the power through a first-order lag (tau %.3g ms)", T*1e3, tau*1e3)
	case tau > 0:
		return fmt.Sprintf("readings are the mean of a %.3g ms window, every %.3g ms, of the power through a first-order lag (tau %.3g ms)", W*1e3, T*1e3, tau*1e3)
	case W == 0:
		return fmt.Sprintf("readings are point samples every %.3g ms", T*1e3)
	}
	return fmt.Sprintf("readings are the mean of a %.3g ms window every %.3g ms", W*1e3, T*1e3)
}

// binsPart is how far the energy e moves with bins twice as wide (the kernel in half as
// many, λ again by GCV): a shape finer than the bins is represented only so well. 0 where
// the kernel has fewer than two bins.
func binsPart(pts []Point, ts float64, g bins, margin, free float64, nominal variant, e float64) float64 {
	k := int(math.Round(ts / g.h))
	if k < 2 {
		return 0
	}
	h2 := ts / float64(k/2)
	nm2 := int(math.Ceil(margin/h2 - 1e-9))
	g2 := bins{a0: -float64(nm2) * h2, h: h2, m: k/2 + 2*nm2}
	s2, ok := gcvSolve(buildNormal(pts, nil, g2, nominal), penalty(g2, ts, h2+free-g.h))
	if !ok {
		return 0
	}
	return math.Abs(energyIn(s2.x, ts, g2) - e)
}

// modelNote says what the energy's model part holds.
func modelNote(varied []string, W, tau float64) string {
	switch {
	case len(varied) > 0:
		return fmt.Sprintf("the profile solved again at each end of the %s intervals (same bins and lambda); the parameters' parts combined as independent", strings.Join(varied, ", "))
	case W == 0 && tau == 0:
		return "point samples without a lag: no model parameter to propagate"
	}
	return "the sensor model carries no interval (pass a sensor.json from gpuwatt sensor): its own uncertainty is not included"
}

// checkPlausible warns where the profile over the kernel's ts seconds holds powers far from
// the baseline: the model evidently does not hold, so its part of the energy's interval is
// taken twice over (as if its intervals were twice as wide).
func checkPlausible(res *Result, ts, baseline float64) {
	lowP, highP := math.Inf(1), math.Inf(-1)
	for _, b := range res.Profile {
		if b.StartS >= 0 && b.EndS <= ts { // the margins only catch what the model misplaces
			lowP, highP = min(lowP, b.PowerW), max(highP, b.PowerW)
		}
	}
	if !(lowP < 0.5*baseline || highP > 3*baseline+1000) {
		return
	}
	res.Warnf(CodeImplausible, "implausible powers in the profile (%.0f .. %.0f W against a baseline of %.0f W): the sensor model (%s) is likely wrong for this channel", lowP, highP, baseline, res.Model)
	if res.EnergyModelHalfWidthJ > 0 {
		res.EnergyModelHalfWidthJ *= 2
		res.EnergyModelNote += "; doubled: the profile is implausible, so the model's intervals are not trusted to hold the channel"
		res.Warnf(CodeEnergyWidened, "the energy's interval is widened (the sensor model's part doubled) because the profile is implausible")
	} else {
		res.Warnf(CodeEnergyWidened, "the profile is implausible and its model carries no interval: the energy's interval holds the fit's statistics only and is not to be trusted")
	}
}
