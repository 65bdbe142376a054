package profile

import (
	"fmt"
	"math"
	"time"
)

// analyse bins the cloud (raw profile) and deconvolves it (profile proper).
func analyse(res *Result, pts []Point, tex time.Duration, opt Options) {
	res.Points = pts
	if res.Points == nil {
		res.Points = []Point{}
	}
	res.Raw = rawBins(pts)
	W := opt.Sensor.Window.Seconds()
	T := opt.Sensor.Period.Seconds()
	ts := tex.Seconds()
	if len(pts) < opt.MinEdges {
		res.Warnings = append(res.Warnings, fmt.Sprintf("only %d readings tied to the runs: no profile", len(pts)))
		res.Profile = []Bin{}
		return
	}
	// The finest resolution at which every bin is seen by MinEdges window edges, no finer
	// than two poll intervals (the precision of an update's stamp).
	maxM := max(1, min(200, int(ts/(2*opt.Poll.Seconds()))))
	m := 0
	var counts []int
	for k := maxM; k >= 1; k-- {
		c := edgeCounts(pts, ts, k, W)
		if minInt(c) >= opt.MinEdges {
			m, counts = k, c
			break
		}
	}
	if m == 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the kernel (%s) is not seen by %d readings anywhere: too few runs", tex, opt.MinEdges))
		res.Profile = []Bin{}
		return
	}
	h := ts / float64(m)
	x, cov, sigma, ok := fit(pts, ts, m, W)
	if !ok {
		res.Warnings = append(res.Warnings, "the deconvolution is singular: too few runs")
		res.Profile = []Bin{}
		return
	}
	res.BaselineW = x[0]
	res.ResolutionS = h
	edge := "window edges (a reading's window start or end)"
	if W == 0 {
		edge = "readings"
	}
	res.ResolutionWhy = fmt.Sprintf("%d readings; %d bins of %.3g ms over the %.3g ms kernel, each seen by >= %d %s (fewest %d); readings are the mean of a %.3g ms window every %.3g ms, undone by least squares; update stamps are precise to %.3g ms",
		len(pts), m, h*1e3, ts*1e3, opt.MinEdges, edge, minInt(counts), W*1e3, T*1e3, opt.Poll.Seconds()*1e3/2)
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
	res.EnergyLowJ, res.EnergyHighJ = e-1.96*math.Sqrt(max(ev, 0)), e+1.96*math.Sqrt(max(ev, 0))
	if h > ts/4 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("coarse profile: %d bins over the kernel; run more (--runs)", m))
	}
	_ = sigma
}

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

// row returns the model's coefficients for one reading: [baseline, bin 0..m-1].
func row(dst []float64, ph, tex float64, m int, W float64) []float64 {
	dst = dst[:0]
	dst = append(dst, 0)
	h := tex / float64(m)
	sum := 0.0
	for j := 0; j < m; j++ {
		b0, b1 := float64(j)*h, float64(j+1)*h
		var c float64
		if W > 0 {
			c = max(0, min(ph, b1)-max(ph-W, b0)) / W
		} else if ph >= b0 && ph < b1 {
			c = 1
		}
		dst = append(dst, c)
		sum += c
	}
	dst[0] = 1 - sum
	return dst
}

// fit solves the least-squares deconvolution; it returns the estimate, its covariance and
// the residual standard deviation.
func fit(pts []Point, tex float64, m int, W float64) (x []float64, cov [][]float64, sigma float64, ok bool) {
	p := m + 1
	ata := make([][]float64, p)
	for i := range ata {
		ata[i] = make([]float64, p)
	}
	aty := make([]float64, p)
	var r []float64
	for _, pt := range pts {
		r = row(r, pt.PhaseS, tex, m, W)
		for i := 0; i < p; i++ {
			if r[i] == 0 {
				continue
			}
			aty[i] += r[i] * pt.PowerW
			for j := 0; j < p; j++ {
				ata[i][j] += r[i] * r[j]
			}
		}
	}
	l, ok := cholesky(ata)
	if !ok {
		return nil, nil, 0, false
	}
	x = cholSolve(l, aty)
	rss := 0.0
	for _, pt := range pts {
		r = row(r, pt.PhaseS, tex, m, W)
		f := 0.0
		for i := range r {
			f += r[i] * x[i]
		}
		rss += (pt.PowerW - f) * (pt.PowerW - f)
	}
	dof := max(1, len(pts)-p)
	sigma = math.Sqrt(rss / float64(dof))
	cov = make([][]float64, p)
	e := make([]float64, p)
	for i := 0; i < p; i++ {
		clear(e)
		e[i] = 1
		col := cholSolve(l, e)
		for j := range col {
			col[j] *= sigma * sigma
		}
		cov[i] = col
	}
	return x, cov, sigma, true
}

// cholesky factors a symmetric positive-definite matrix as L·Lᵀ.
func cholesky(a [][]float64) ([][]float64, bool) {
	n := len(a)
	l := make([][]float64, n)
	for i := range l {
		l[i] = make([]float64, n)
	}
	scale := 0.0
	for i := range a {
		scale = max(scale, a[i][i])
	}
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			s := a[i][j]
			for k := 0; k < j; k++ {
				s -= l[i][k] * l[j][k]
			}
			if i == j {
				if s <= 1e-12*scale {
					return nil, false
				}
				l[i][i] = math.Sqrt(s)
			} else {
				l[i][j] = s / l[j][j]
			}
		}
	}
	return l, true
}

func cholSolve(l [][]float64, b []float64) []float64 {
	n := len(b)
	y := make([]float64, n)
	for i := 0; i < n; i++ {
		s := b[i]
		for k := 0; k < i; k++ {
			s -= l[i][k] * y[k]
		}
		y[i] = s / l[i][i]
	}
	x := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		s := y[i]
		for k := i + 1; k < n; k++ {
			s -= l[k][i] * x[k]
		}
		x[i] = s / l[i][i]
	}
	return x
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
