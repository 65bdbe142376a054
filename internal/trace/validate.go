package trace

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// MaxBoardPowerW is the most power the readers accept from one GPU board: above the
// largest board's physical range (about 1 kW for one GPU, 2.7 kW for a two-GPU superchip)
// with a wide margin. A reading beyond it, or below 0 W, is refused: it is a unit mix-up, a
// corrupt row or an overflow, never a measurement.
const MaxBoardPowerW = 5000

// MaxEnergyJ is the largest energy counter reading accepted: NVML's total-energy counter is
// a 64-bit count of mJ (1.8e16 J at most).
const MaxEnergyJ = 2e16

// maxValue bounds every other quantity's magnitude, so that no finite reading can
// overflow a sum or a product downstream (a 64-bit mask is below 2e19).
const maxValue = 1e20

// Codes of the readers' warnings (Trace.Warnings).
const (
	CodeUnsorted  status.Code = "rows_out_of_order"
	CodeClockBack status.Code = "clock_changed"
	CodeGap       status.Code = "gap"
)

// checkValue returns what is wrong with a reading v of quantity q, or "".
func checkValue(q Quantity, v float64) string {
	switch q {
	case QPower:
		if v < 0 {
			return fmt.Sprintf("is a negative power: expected 0 to %d W (a board draws no negative power)", MaxBoardPowerW)
		}
		if v > MaxBoardPowerW {
			return fmt.Sprintf("is beyond any GPU board's physical range: expected 0 to %d W (a unit mix-up, such as mW?)", MaxBoardPowerW)
		}
	case QEnergy:
		if v < 0 || v > MaxEnergyJ {
			return fmt.Sprintf("is not an energy counter reading: expected 0 to %.0g J", MaxEnergyJ)
		}
	default:
		if v > maxValue || v < -maxValue {
			return "is out of range: expected a magnitude below 1e20"
		}
	}
	return ""
}

// orderCheck notes the first row whose time is before the row before it.
type orderCheck struct {
	last      time.Duration
	lastLine  int
	n         int // rows out of order
	firstLine int
	firstT    time.Duration
	prevT     time.Duration
	prevLine  int
}

func (o *orderCheck) see(t time.Duration, line int) {
	if o.lastLine > 0 && t < o.last {
		if o.n == 0 {
			o.firstLine, o.firstT, o.prevT, o.prevLine = line, t, o.last, o.lastLine
		}
		o.n++
	}
	o.last, o.lastLine = t, line
}

// warning is the warning about rows out of order, or false when they were in order.
func (o *orderCheck) warning() (status.Warning, bool) {
	if o.n == 0 {
		return status.Warning{}, false
	}
	return status.Warning{Code: CodeUnsorted, Key: "rows",
		Message: fmt.Sprintf("the rows are not in time order: line %d (t = %s) comes after line %d (t = %s), %d row(s) in all go back in time; the samples were sorted by time",
			o.firstLine, units.FormatInstant(o.firstT.Seconds()), o.prevLine, units.FormatInstant(o.prevT.Seconds()), o.n),
		Value: float64(o.n), Unit: "rows"}, true
}

// Gap is a stretch of a channel with no reading: from one reading to the next, far longer
// than the channel's usual interval between readings.
type Gap struct {
	From time.Duration `json:"-"`
	To   time.Duration `json:"-"`
	// FromS and ToS are From and To in seconds, for JSON.
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
}

// Len is the gap's length.
func (g Gap) Len() time.Duration { return g.To - g.From }

// GapFactor: an interval between two readings of a channel longer than GapFactor times its
// usual interval (the median), and longer than the usual interval plus GapMin, is a gap.
const (
	GapFactor = 10
	GapMin    = time.Second
)

// Gaps returns the gaps of one channel's readings (sorted by time), and the usual interval
// between them (the median; 0 with fewer than three readings, when no gap can be told).
func Gaps(s []Sample) (gaps []Gap, usual time.Duration) {
	if len(s) < 3 {
		return nil, 0
	}
	const most = 4096
	step := max(1, (len(s)-1)/most)
	iv := make([]time.Duration, 0, min(len(s)-1, most+1))
	for i := step; i < len(s); i += step {
		iv = append(iv, s[i].T-s[i-1].T)
	}
	slices.Sort(iv)
	usual = iv[len(iv)/2]
	limit := max(GapFactor*usual, usual+GapMin)
	for i := 1; i < len(s); i++ {
		if d := s[i].T - s[i-1].T; d > limit {
			gaps = append(gaps, Gap{From: s[i-1].T, To: s[i].T, FromS: s[i-1].T.Seconds(), ToS: s[i].T.Seconds()})
		}
	}
	return gaps, usual
}
