package loadlevel

import (
	"encoding/json"
	"math"
	"time"
)

// ReportSchema is the value of Result.Schema this version writes:
//
//	absent (1): the intervals' _s keys held nanoseconds (time.Duration marshalled as an
//	            integer: "record_s": 3000000000), results of November 2026 and before;
//	2:          every key ending in _s holds seconds.
const ReportSchema = 2

// intervalsJSON is Intervals on disk: seconds under _s keys.
type intervalsJSON struct {
	Warmup       float64 `json:"warmup_s"`
	Calibrations int     `json:"calibrations"`
	Pre          float64 `json:"pre_s"`
	Record       float64 `json:"record_s"`
	Post         float64 `json:"post_s"`
	Idle         float64 `json:"idle_record_s"`
}

// MarshalJSON writes the lengths in seconds.
func (iv Intervals) MarshalJSON() ([]byte, error) {
	return json.Marshal(intervalsJSON{Warmup: iv.Warmup.Seconds(), Calibrations: iv.Calibrations,
		Pre: iv.Pre.Seconds(), Record: iv.Record.Seconds(), Post: iv.Post.Seconds(), Idle: iv.Idle.Seconds()})
}

// UnmarshalJSON reads lengths in seconds (a Result of schema 1 is read by
// Result.UnmarshalJSON, which knows its unit).
func (iv *Intervals) UnmarshalJSON(b []byte) error {
	var j intervalsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*iv = j.intervals(time.Second)
	return nil
}

// intervals converts the lengths, given in unit.
func (j intervalsJSON) intervals(unit time.Duration) Intervals {
	d := func(v float64) time.Duration { return time.Duration(math.Round(v * float64(unit))) }
	return Intervals{Warmup: d(j.Warmup), Calibrations: j.Calibrations, Pre: d(j.Pre), Record: d(j.Record), Post: d(j.Post), Idle: d(j.Idle)}
}

// UnmarshalJSON reads a Result of either schema: without a schema key the intervals are
// in nanoseconds (see ReportSchema). The Result read is of the current schema.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result
	var v struct {
		*plain
		Intervals intervalsJSON `json:"intervals"`
	}
	v.plain = (*plain)(r)
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	unit := time.Second
	if r.Schema < 2 {
		unit = time.Nanosecond
	}
	r.Intervals = v.Intervals.intervals(unit)
	r.Schema = ReportSchema
	return nil
}
