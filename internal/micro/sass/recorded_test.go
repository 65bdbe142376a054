package sass

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/kernels"
)

// TestRecordedH200 checks a trimmed copy of the record of 2026-11-24 on an H200
// (results/nvidia-h200/2026-11-24-micro-verified/run1: ptxas/cuobjdump of 6 kernels, ncu of
// 11): every arithmetic kernel's loop holds one machine instruction of its class per PTX
// instruction (two for int64.add and sin), int32.add's split over IADD3 and IMAD.IADD;
// Nsight Compute's counts of the FMAs equal gpuwatt's; its DRAM bytes agree within 0.1 %
// for every DRAM kernel but coalesce.1/32, whose recorded count (32-byte sectors) was half
// of what DRAM moved, and which today's descriptor (64-byte units on sm_90) gets right.
func TestRecordedH200(t *testing.T) {
	dir := filepath.Join("testdata", "h200")
	rep, err := CheckDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Missing) > 0 {
		t.Errorf("missing %v", rep.Missing)
	}
	if len(rep.SASS) != 6 {
		t.Fatalf("%d SASS rows, want 6", len(rep.SASS))
	}
	for _, r := range rep.SASS {
		if !r.OK || r.Unrolled != 1 {
			t.Errorf("%s: %+v", r.Name, r)
		}
		if r.Name == "int32.add" && (r.Split["IADD3"] < 200 || r.Split["IMAD.IADD"] < 200 || r.Found != 512) {
			t.Errorf("int32.add: split %v", r.Split)
		}
	}
	byName := map[string]NCURow{}
	for _, r := range rep.NCU {
		byName[r.Name] = r
	}
	if len(byName) != 11 {
		t.Errorf("%d ncu rows, want 11", len(byName))
	}
	for _, r := range rep.NCU {
		switch {
		case r.Name == "coalesce.1/32":
			if r.OK || math.Abs(r.DRAMRatio-2) > 0.02 {
				t.Errorf("coalesce.1/32 as recorded: ratio %.4f ok %v, want 2 and a failure", r.DRAMRatio, r.OK)
			}
		case !r.OK:
			t.Errorf("%s: %s", r.Name, r.Why)
		case r.DRAMBytes > 0 && math.Abs(r.DRAMRatio-1) > 0.002:
			t.Errorf("%s: DRAM ratio %.4f", r.Name, r.DRAMRatio)
		}
	}
	for _, n := range []string{"fp16.fma", "bf16.fma"} {
		if r := byName[n]; r.ClassRatio != 1 {
			t.Errorf("%s: ncu counts %.6g hfma, gpuwatt %d", n, r.NCUClassOps, r.ClassOps)
		}
	}
	if r := byName["l2.read"]; math.Abs(r.L2Ratio-1) > 0.002 {
		t.Errorf("l2.read: L2 ratio %.4f", r.L2Ratio)
	}
	// Today's descriptor of the recorded launch (the H200's 132 SMs, 41 passes).
	d, err := kernels.Coalescing(1, kernels.Opts{Iters: 41})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := d.Param("steps"); p.Int != 7 {
		t.Fatalf("steps %d, want the recorded 7", p.Int)
	}
	if ratio := byName["coalesce.1/32"].NCUDRAMBytes / float64(d.Bytes[kernels.DRAM]); math.Abs(ratio-1) > 0.01 {
		t.Errorf("coalesce.1/32 today: ncu / counted %.4f", ratio)
	}
}
