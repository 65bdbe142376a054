package job

import (
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/energy"
)

// sacctmgrStores is what Slurm 22.05's sacctmgr stored of `set AdminComment=VALUE`, as the
// real Slurm in deploy/slurm/ci-test.sh showed: lower case, double quotes turned into
// backquotes.
func sacctmgrStores(v string) string {
	return strings.ReplaceAll(strings.ToLower(v), `"`, "`")
}

// TestAdminComment: the comment holds the job's and each GPU's figures to 0.1 J, and is what
// sacctmgr stores unchanged (the JSON comment of before came back from sacct with its
// quotes turned into backquotes and the UUIDs lower-cased).
func TestAdminComment(t *testing.T) {
	r := &Result{Interval: energy.Interval{EnergyJ: 786.94, LowJ: 780.91, HighJ: 792.8}, SpanS: 1.26, GPUs: []GPUResult{
		{Index: 0, UUID: "GPU-5A1D0000-0000-4b09-85e4-95a3267b402c", Figure: energy.Figure{Interval: energy.Interval{EnergyJ: 394.14, LowJ: 389.9, HighJ: 398.3}, Method: energy.Counter}},
		{Index: 3, UUID: "GPU-5a1d0000-0001-46eb-86da-6a00e3f501cc", Figure: energy.Figure{Interval: energy.Interval{EnergyJ: 392.8, LowJ: 388.5, HighJ: 397}, Method: CounterOnly}},
	}}
	r.Job.JobID = "101"
	want := "gpuwatt=gpuwatt-job/1,energy_j=786.9,low_j=780.9,high_j=792.8,span_s=1.3," +
		"gpu0=5a1d0000-0000-4b09-85e4-95a3267b402c/394.1/389.9/398.3/counter," +
		"gpu3=5a1d0000-0001-46eb-86da-6a00e3f501cc/392.8/388.5/397/counter_begin_end"
	if got := AdminComment(r); got != want {
		t.Errorf("AdminComment\n got %s\nwant %s", got, want)
	}
	r.Incomplete = true
	got := AdminComment(r)
	if !strings.Contains(got, ",span_s=1.3,incomplete=1,gpu0=") {
		t.Errorf("incomplete: %s", got)
	}
	if sacctmgrStores(got) != got || strings.ContainsAny(got, "'\" \n") {
		t.Errorf("sacctmgr would store %s as %s", got, sacctmgrStores(got))
	}
	r.AdminComment = got
	if line := SacctmgrLine(r); line != "sacctmgr -i modify job where jobid=101 set AdminComment="+got {
		t.Errorf("SacctmgrLine %s", line)
	}
}
