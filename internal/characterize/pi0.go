package characterize

import (
	"fmt"
	"math"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/micro"
)

// cardPi0 is the card's pi0 (archline.Pi0Definition) with its interval, from the archline
// stage; false where that stage gave none.
func (r *Result) cardPi0() (v float64, ci [2]float64, ok bool) {
	a := r.Archline
	if a == nil || a.Pi0 == nil || a.Pi0.Error != "" || a.Pi0.Pi0W <= 0 {
		return 0, ci, false
	}
	return a.Pi0.Pi0W, a.Pi0.Pi0CI, true
}

// MicroAbovePi0 is micro's report as the datasheet shows it: where the archline stage gave
// the card's pi0, every energy above pi0 is taken above that pi0 (one definition of pi0
// for the whole datasheet: archline.Pi0Definition), its interval with pi0's; micro's own
// figure, the baseline kernel's power, is named in Pi0Source. Elsewhere micro's report as
// it is (the baseline kernel's power standing for pi0, as the micro verb does).
func (r *Result) MicroAbovePi0() *micro.Result {
	m := r.Micro
	pi0, ci, ok := r.cardPi0()
	if m == nil || !ok || m.Pi0W <= 0 {
		return m
	}
	c := *m
	c.Rows = append([]micro.Row(nil), m.Rows...)
	hw := max(pi0-ci[0], ci[1]-pi0, 0)
	for i := range c.Rows {
		row := &c.Rows[i]
		if row.PJPerUnitPi0 <= 0 || row.PJPerUnit <= 0 {
			continue
		}
		tpu := row.PJPerUnitPi0 / m.Pi0W // pJ per W: the time one unit takes, in ps
		row.PJPerUnitPi0 = pi0 * tpu
		row.PJPerUnitAbovePi0 = row.PJPerUnit - row.PJPerUnitPi0
		if row.PJPerUnitHigh > row.PJPerUnitLow {
			h := math.Hypot((row.PJPerUnitHigh-row.PJPerUnitLow)/2, hw*tpu)
			row.PJPerUnitAbovePi0Low, row.PJPerUnitAbovePi0High = row.PJPerUnitAbovePi0-h, row.PJPerUnitAbovePi0+h
		}
	}
	c.Pi0W, c.Pi0HalfWidthW = pi0, hw
	c.Pi0Source = fmt.Sprintf("archline fit (eq 5 on the fp32 and fp64 sweeps together; the baseline kernel drew %s W, micro's own stand-in)",
		archline.PM(m.Pi0W, [2]float64{m.Pi0W - m.Pi0HalfWidthW, m.Pi0W + m.Pi0HalfWidthW}))
	return &c
}
