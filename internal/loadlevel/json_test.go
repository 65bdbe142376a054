package loadlevel

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestReportJSONSchemas(t *testing.T) {
	t.Parallel()
	want := Intervals{Warmup: 2 * time.Second, Calibrations: 3, Pre: 500 * time.Millisecond, Record: 3 * time.Second, Post: 500 * time.Millisecond, Idle: 3 * time.Second}
	cases := []struct{ name, in string }{
		// As written before schema 2 (results/nvidia-h200/2026-11-21-characterize-quick).
		{"old: nanoseconds, no schema", `{"workload":"fft","intervals":{"warmup_s":2000000000,"calibrations":3,"pre_s":500000000,"record_s":3000000000,"post_s":500000000,"idle_record_s":3000000000}}`},
		{"schema 2: seconds", `{"schema":2,"workload":"fft","intervals":{"warmup_s":2,"calibrations":3,"pre_s":0.5,"record_s":3,"post_s":0.5,"idle_record_s":3}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r Result
			if err := json.Unmarshal([]byte(c.in), &r); err != nil {
				t.Fatal(err)
			}
			if r.Intervals != want || r.Workload != "fft" || r.Schema != ReportSchema {
				t.Errorf("read %+v (workload %q, schema %d), want %+v", r.Intervals, r.Workload, r.Schema, want)
			}
			b, err := json.Marshal(&r)
			if err != nil {
				t.Fatal(err)
			}
			if s := string(b); !strings.Contains(s, `"schema":2`) || !strings.Contains(s, `"record_s":3,`) || !strings.Contains(s, `"pre_s":0.5,`) {
				t.Errorf("written again: %s", s)
			}
		})
	}
	var r Result
	if err := json.Unmarshal([]byte(`{"intervals":{"record_s":"3"}}`), &r); err == nil {
		t.Error("a string interval accepted")
	}
}
