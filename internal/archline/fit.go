package archline

import (
	"errors"
	"math"

	"github.com/gpuwatt/gpuwatt/internal/lsq"
)

// ols solves the least-squares problem min |X b - y|² (lsq's QR on scaled columns: the
// columns W, Q and T differ by 15 orders of magnitude). It fails, with a message for the
// report, when the columns are (numerically) dependent.
func ols(X [][]float64, y []float64) ([]float64, error) {
	if len(y) == 0 || len(X) != len(y) {
		return nil, errors.New("no points")
	}
	r, err := lsq.Solve(X, y)
	switch {
	case errors.Is(err, lsq.ErrTooFew):
		return nil, errors.New("fewer points than parameters")
	case errors.Is(err, lsq.ErrRank):
		return nil, errors.New("the regressors are linearly dependent: sweep more intensities or occupancies")
	case err != nil:
		return nil, err
	}
	return r.Coef, nil
}

// r2 is the coefficient of determination of predictions p for y (centred, as
// scikit-learn's score): 1 - SS_res / SS_tot; 0 where it is undefined (JSON has no NaN).
func r2(y, p []float64) float64 {
	if len(y) < 2 {
		return 0
	}
	var mean float64
	for _, v := range y {
		mean += v
	}
	mean /= float64(len(y))
	var res, tot float64
	for i := range y {
		res += (y[i] - p[i]) * (y[i] - p[i])
		tot += (y[i] - mean) * (y[i] - mean)
	}
	if tot == 0 {
		return 0
	}
	return 1 - res/tot
}

// Fit is one least-squares fit of the energy model.
type Fit struct {
	// Model names the form: "E = W*eps_flop + Q*eps_mem + T*pi0" (eq 5), or a normalised one.
	Model           string  `json:"model"`
	EpsFlopPJ       float64 `json:"eps_flop_pj"`
	EpsMemPJPerByte float64 `json:"eps_mem_pj_per_byte"`
	Pi0W            float64 `json:"pi0_w"`
	R2              float64 `json:"r2"`
	Points          int     `json:"points"`
	Error           string  `json:"error,omitempty"`
}

// The model forms.
const (
	ModelEq5 = "E = W*eps_flop + Q*eps_mem + T*pi0 (eq 5)"
	ModelEq6 = "E/W = eps_flop + (Q/W)*eps_mem + (T/W)*pi0 (eq 6)"
	ModelEq7 = "E/Q = (W/Q)*eps_flop + eps_mem + (T/Q)*pi0 (eq 7)"
)

// fitPoints fits one form of the model to the points; form is 5, 6 or 7. R² is that of
// the form's own left-hand side.
func fitPoints(pts []Point, form int) Fit {
	f := Fit{Model: map[int]string{5: ModelEq5, 6: ModelEq6, 7: ModelEq7}[form], Points: len(pts)}
	var X [][]float64
	var y []float64
	for _, p := range pts {
		switch form {
		case 5:
			X = append(X, []float64{p.W, p.Q, p.TimeS})
			y = append(y, p.EnergyJ)
		case 6:
			if p.W <= 0 {
				continue
			}
			X = append(X, []float64{1, p.Q / p.W, p.TimeS / p.W})
			y = append(y, p.EnergyJ/p.W)
		case 7:
			if p.Q <= 0 {
				continue
			}
			X = append(X, []float64{p.W / p.Q, 1, p.TimeS / p.Q})
			y = append(y, p.EnergyJ/p.Q)
		}
	}
	f.Points = len(y)
	b, err := ols(X, y)
	if err != nil {
		f.Error = err.Error()
		return f
	}
	pred := make([]float64, len(y))
	for i := range y {
		for j := range b {
			pred[i] += X[i][j] * b[j]
		}
	}
	f.EpsFlopPJ, f.EpsMemPJPerByte, f.Pi0W = b[0]*1e12, b[1]*1e12, b[2]
	f.R2 = r2(y, pred)
	return f
}

// Predict is the model's energy for W flops, Q bytes in T seconds.
func (f Fit) Predict(W, Q, T float64) float64 {
	return W*f.EpsFlopPJ*1e-12 + Q*f.EpsMemPJPerByte*1e-12 + T*f.Pi0W
}

// Derived are the figures of Choi et al.'s archline and powerline (seed 002, section 3.2,
// Tables 6-9) from a fit and the measured peaks.
type Derived struct {
	WordBytes int `json:"word_bytes"`
	// EpsMopPJ is the energy of one word moved (eps_mem × word bytes), pJ per mop.
	EpsMopPJ float64 `json:"eps_mop_pj"`
	// Peaks: the best measured flop rate (flop kernel, or roofline kernel, at the top
	// clock) and copy bandwidth; the spec flop rate where known.
	PeakFlopsPerS    float64 `json:"peak_flops_per_s"`
	PeakBytesPerS    float64 `json:"peak_bytes_per_s"`
	SpecFlopsPerS    float64 `json:"spec_flops_per_s,omitempty"`
	TauFlopS         float64 `json:"tau_flop_s"`
	Eps0FlopPJ       float64 `json:"eps0_flop_pj"`        // tau_flop × pi0
	EpsHatFlopPJ     float64 `json:"eps_hat_flop_pj"`     // eps_flop + eps0_flop
	PiFlopW          float64 `json:"pi_flop_w"`           // eps_flop × peak flops
	PiMemW           float64 `json:"pi_mem_w"`            // eps_mem × peak bandwidth
	EtaFlop          float64 `json:"eta_flop"`            // eps_flop / eps_hat_flop (eq 13)
	BTau             float64 `json:"b_tau_flop_per_byte"` // time balance: peak flops / peak bandwidth
	BEps             float64 `json:"b_eps_flop_per_byte"` // energy balance: eps_mem / eps_flop
	BEffective       float64 `json:"b_eps_effective_flop_per_byte"`
	BEffectiveAtBTau float64 `json:"b_eps_hat_at_b_tau_flop_per_byte"`
	PowerlineMaxW    float64 `json:"powerline_max_w"` // eq 10 at I = B_tau, uncapped
	PowerLimitW      float64 `json:"power_limit_w,omitempty"`
	CappedFromFlop   float64 `json:"capped_from_flop_per_byte,omitempty"` // the powerline meets the limit from here...
	CappedToFlop     float64 `json:"capped_to_flop_per_byte,omitempty"`   // ...to here (0: never)
	PowerlineAtLowW  float64 `json:"powerline_memory_bound_w"`            // I -> 0: pi0 + pi_mem
	PowerlineAtHighW float64 `json:"powerline_compute_bound_w"`           // I -> inf: pi0 + pi_flop
}

// derive computes the archline figures.
func derive(f Fit, peakFlops, peakBytes, spec float64, wordBytes int, limit float64) Derived {
	d := Derived{WordBytes: wordBytes, PeakFlopsPerS: peakFlops, PeakBytesPerS: peakBytes, SpecFlopsPerS: spec, PowerLimitW: limit}
	d.EpsMopPJ = f.EpsMemPJPerByte * float64(wordBytes)
	if peakFlops <= 0 || peakBytes <= 0 {
		return d
	}
	d.TauFlopS = 1 / peakFlops
	d.Eps0FlopPJ = d.TauFlopS * f.Pi0W * 1e12
	d.EpsHatFlopPJ = f.EpsFlopPJ + d.Eps0FlopPJ
	d.PiFlopW = f.EpsFlopPJ * 1e-12 * peakFlops
	d.PiMemW = f.EpsMemPJPerByte * 1e-12 * peakBytes
	if d.EpsHatFlopPJ != 0 {
		d.EtaFlop = f.EpsFlopPJ / d.EpsHatFlopPJ
	}
	d.BTau = peakFlops / peakBytes
	if f.EpsFlopPJ != 0 {
		d.BEps = f.EpsMemPJPerByte / f.EpsFlopPJ
	}
	// The effective balance point: the intensity I* = B̂_eps(I*), where flops and bytes
	// cost the same energy on the archline.
	eta := d.EtaFlop
	if eta*d.BEps >= d.BTau {
		d.BEffective = eta * d.BEps
	} else {
		d.BEffective = (eta*d.BEps + (1-eta)*d.BTau) / (2 - eta)
	}
	d.BEffectiveAtBTau = d.BHat(d.BTau)
	if d.EtaFlop == 0 {
		// No flop energy fitted (a run cut short before its flop points): no powerline,
		// and no NaN for results.json to choke on (an interrupted characterize wrote
		// nothing at all).
		return d
	}
	d.PowerlineMaxW = d.Powerline(d.BTau, f.Pi0W)
	d.PowerlineAtLowW = f.Pi0W + d.PiMemW
	d.PowerlineAtHighW = f.Pi0W + d.PiFlopW
	if limit > 0 && d.PowerlineMaxW > limit {
		// The powerline rises to B_tau and falls after it: find where it crosses the limit.
		lo, hi := bisect(func(I float64) float64 { return d.Powerline(I, f.Pi0W) - limit }, 1e-3, d.BTau), 0.0
		if d.PowerlineAtHighW < limit {
			hi = bisect(func(I float64) float64 { return limit - d.Powerline(I, f.Pi0W) }, d.BTau, 1e6)
		}
		d.CappedFromFlop, d.CappedToFlop = lo, hi
	}
	return d
}

// bisect finds a root of g between a and b on a log scale (g(a) < 0 <= g(b) expected;
// if not, the end nearer a sign change).
func bisect(g func(float64) float64, a, b float64) float64 {
	if g(a) >= 0 {
		return a
	}
	if g(b) < 0 {
		return b
	}
	for range 100 {
		m := math.Sqrt(a * b)
		if g(m) < 0 {
			a = m
		} else {
			b = m
		}
	}
	return math.Sqrt(a * b)
}

// BHat is the effective energy balance B̂_eps(I) (eq 8).
func (d Derived) BHat(I float64) float64 {
	return d.EtaFlop*d.BEps + (1-d.EtaFlop)*math.Max(0, d.BTau-I)
}

// Archline is the model's flops per joule at intensity I (eq 9: E = W eps_hat (1 + B̂/I)).
func (d Derived) Archline(I float64) float64 {
	e := d.EpsHatFlopPJ * 1e-12 * (1 + d.BHat(I)/I)
	if e <= 0 {
		return math.NaN()
	}
	return 1 / e
}

// Roofline is the model's flops per second at intensity I (eq 1).
func (d Derived) Roofline(I float64) float64 { return math.Min(d.PeakFlopsPerS, I*d.PeakBytesPerS) }

// Powerline is the model's power at intensity I (eq 10), uncapped; pi0 is unused by the
// equation (it is inside pi_flop / eta) and kept for symmetry with the callers.
func (d Derived) Powerline(I, _ float64) float64 {
	if d.EtaFlop == 0 || d.BTau == 0 {
		return math.NaN()
	}
	return d.PiFlopW / d.EtaFlop * (math.Min(I, d.BTau)/d.BTau + d.BHat(I)/math.Max(I, d.BTau))
}

// PowerlineCapped is the powerline with the power limit applied (a GPU that would draw
// more lowers its clock; the model's figure is then the limit).
func (d Derived) PowerlineCapped(I float64) float64 {
	p := d.Powerline(I, 0)
	if d.PowerLimitW > 0 {
		p = math.Min(p, d.PowerLimitW)
	}
	return p
}
