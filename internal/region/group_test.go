package region

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// lagWarning is the warning region writes when a 1 s channel misses over a run.
func lagWarning(ch string, pct, got, want float64, dur time.Duration) string {
	return fmt.Sprintf(disagreeFormat, ch, "power.samples (calibrated to energy.total)", pct, got, want, lagReason(ch, dur))
}

// TestGroupDisagreements: three or more kernels sharing one channel disagreement become one
// warning with the count, the range and every kernel's figure; a pair stays as it was; other
// warnings keep their kernel and their place.
func TestGroupDisagreements(t *testing.T) {
	rows := []Named{
		{"int32.add", []string{lagWarning("power.usage", -9.6, 969.3, 1072.6, 2010*time.Millisecond), lagWarning("power.average", -9.7, 968.6, 1072.6, 2010*time.Millisecond)}},
		{"int32.mad", []string{lagWarning("power.usage", 6.2, 748.1, 704.3, 2010*time.Millisecond), "throttling: clocks were lowered during 3 % of the run (hw_slowdown)"}},
		{"fp32.add", nil},
		{"fp64.fma", []string{lagWarning("power.usage", -8.4, 916.1, 999.7, 2*time.Second), lagWarning("power.average", -8.4, 916.1, 999.7, 2*time.Second)}},
	}
	got := GroupDisagreements(rows)
	if len(got) != 4 {
		t.Fatalf("%d warnings, want 4:\n%s", len(got), strings.Join(got, "\n"))
	}
	want0 := "power.usage and power.samples (calibrated to energy.total) disagree by more than 5 % on 3 of 4 kernels, -9.6 … +6.2 % (int32.add -9.6 %, int32.mad +6.2 %, fp64.fma -8.4 %): power.usage is a moving average over about 1 s: it lags the load, so over a 2 s … 2.01 s run"
	if !strings.HasPrefix(got[0], want0) {
		t.Errorf("merged warning\n got %s\nwant %s…", got[0], want0)
	}
	// power.average: only 2 kernels, kept as region wrote them, together where the first was met.
	if got[1] != "int32.add: "+rows[0].Warnings[1] || got[2] != "fp64.fma: "+rows[3].Warnings[1] {
		t.Errorf("pair not kept as it was:\n%s\n%s", got[1], got[2])
	}
	if got[3] != "int32.mad: "+rows[1].Warnings[1] {
		t.Errorf("other warning: %s", got[3])
	}
}

// TestGroupDisagreementsOneRunLength: with one run length the reason names it once.
func TestGroupDisagreementsOneRunLength(t *testing.T) {
	var rows []Named
	for i := range 5 {
		rows = append(rows, Named{fmt.Sprintf("k%d", i), []string{lagWarning("power.usage", float64(6+i), 106+float64(i), 100, 2*time.Second)}})
	}
	got := GroupDisagreements(rows)
	if len(got) != 1 || !strings.Contains(got[0], "on 5 of 5 kernels, +6.0 … +10.0 %") || !strings.Contains(got[0], "so over a 2 s run energy") {
		t.Fatalf("got %q", got)
	}
}
