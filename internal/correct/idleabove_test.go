package correct_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// TestIdleAboveMeanWarned: an idle level well above the region's mean power (here a
// baseline at 300 W before a region at 100 W, as a wrong sensor model can give) is
// physically impossible and was silent; it is warned of (issue 29). A region at its idle,
// the mean a little under it by noise, is not.
func TestIdleAboveMeanWarned(t *testing.T) {
	var s []trace.Sample
	for i := 0; i <= 200; i++ {
		v := 300.0
		if i > 100 {
			v = 100
		}
		s = append(s, trace.Sample{T: time.Duration(i) * 100 * time.Millisecond, Channel: trace.ChPowerUsage, Value: v})
	}
	m := sensormodel.Model{Period: 100 * time.Millisecond}
	has := func(r correct.Result) bool {
		for _, w := range r.Warnings {
			if w.Code == correct.CodeIdleAbove && strings.Contains(w.Message, "physically impossible") {
				return true
			}
		}
		return false
	}
	r := correct.Energy(s, 12*time.Second, 18*time.Second, m, correct.Options{Baseline: correct.Baseline{From: 0, To: 9 * time.Second, Level: correct.IdleAtRest}})
	if !has(r) {
		t.Errorf("idle %s, mean %s: no warning (%v)", r.Idle, r.MeanPower, r.Warnings)
	}
	r = correct.Energy(s, 12*time.Second, 18*time.Second, m, correct.Options{Baseline: correct.Baseline{From: 11 * time.Second, To: 20 * time.Second, Level: correct.IdleAtRest}})
	if has(r) {
		t.Errorf("a region at its idle is warned of: %v", r.Warnings)
	}
}
