package micro

import (
	"fmt"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/kernels"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// TensorFigure is one tensor-core kernel's figures (issue 33): energy per multiply-
// accumulate with its 95 % interval, throughput against the dense peak at the clock it
// ran at, and the power cap.
type TensorFigure struct {
	Class    string `json:"class"`
	Row      string `json:"row"`
	Operands string `json:"operands,omitempty"`
	// PJPerMAC is the energy per MAC in all, PJPerMACAbovePi0 what the work adds above pi0,
	// each with its 95 % interval on this board's scale (the row's).
	PJPerMAC           float64    `json:"pj_per_mac"`
	PJPerMACCI         [2]float64 `json:"pj_per_mac_ci"`
	PJPerMACAbovePi0   float64    `json:"pj_per_mac_above_pi0"`
	PJPerMACAbovePi0CI [2]float64 `json:"pj_per_mac_above_pi0_ci"`
	// OpsPerS is two operations per MAC per second (flop/s; int8: integer op/s).
	OpsPerS float64 `json:"ops_per_s"`
	// PeakOpsPerS is the dense peak at the median SM clock of the measurement (the spec's
	// MACs per clock per SM × SMs × clock × 2), PeakShare OpsPerS over it; 0 where the spec
	// table has no entry.
	PeakOpsPerS float64 `json:"peak_ops_per_s_at_clock"`
	PeakShare   float64 `json:"peak_share"`
	ClockMHz    float64 `json:"sm_clock_mhz"`
	MeanPowerW  float64 `json:"mean_power_w"`
	// PowerCapShare is the share of the measurement the board spent power-capped
	// (sw_power_cap, from the throttle reasons; -1: not read).
	PowerCapShare float64 `json:"power_cap_share"`
}

// TensorFigures gathers the tensor-core rows of a report, in its order.
func TensorFigures(rows []Row, sms int) []TensorFigure {
	var out []TensorFigure
	for _, r := range rows {
		if r.Unit != "MAC" {
			continue
		}
		f := TensorFigure{Class: r.What, Row: r.Name, Operands: r.Operands,
			PJPerMAC: r.PJPerUnit, PJPerMACCI: [2]float64{r.PJPerUnitLow, r.PJPerUnitHigh},
			PJPerMACAbovePi0: r.PJPerUnitAbovePi0, PJPerMACAbovePi0CI: [2]float64{r.PJPerUnitAbovePi0Low, r.PJPerUnitAbovePi0High},
			OpsPerS: 2 * r.PerSecond, ClockMHz: r.ClockMHz, MeanPowerW: r.MeanPowerW, PowerCapShare: -1}
		if r.SpecPerCycleSM > 0 && sms > 0 {
			f.PeakOpsPerS = 2 * r.SpecPerCycleSM * float64(sms) * r.ClockMHz * 1e6
			f.PeakShare = f.OpsPerS / f.PeakOpsPerS
		}
		if r.ThrottleUnavailable == "" {
			f.PowerCapShare = 0
			for _, s := range r.Throttle {
				if strings.Contains(s.Reason, "power_cap") {
					f.PowerCapShare += s.Share
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// tensorSection is the tensor cores' table for report.html and the datasheet.
func tensorSection(r *Result) (report.Section, bool) {
	if len(r.Tensor) == 0 {
		return report.Section{}, false
	}
	tab := &report.Table{Header: []string{"kernel", "operands", "pJ/MAC", "above pi0", "throughput", "dense peak at that clock", "share of peak", "SM clock (MHz)", "mean power", "power-capped"}}
	for _, f := range r.Tensor {
		unit := "TFLOP/s"
		if f.Class == string(kernels.INT8MMA) {
			unit = "TOPS"
		}
		peak, share, capped := "-", "-", "not read"
		if f.PeakOpsPerS > 0 {
			peak, share = fmt.Sprintf("%.4g %s", f.PeakOpsPerS/1e12, unit), fmt.Sprintf("%.1f %%", 100*f.PeakShare)
		}
		if f.PowerCapShare >= 0 {
			capped = fmt.Sprintf("%.0f %% of the run", 100*f.PowerCapShare)
		}
		tab.Rows = append(tab.Rows, []string{f.Row, f.Operands, PM(f.PJPerMAC, f.PJPerMACCI[0], f.PJPerMACCI[1]),
			PM(f.PJPerMACAbovePi0, f.PJPerMACAbovePi0CI[0], f.PJPerMACAbovePi0CI[1]), fmt.Sprintf("%.4g %s", f.OpsPerS/1e12, unit),
			peak, share, fmt.Sprintf("%.0f", f.ClockMHz), units.Power(f.MeanPowerW).String(), capped})
	}
	text := "Energy per multiply-accumulate (MAC) of the tensor cores, each kernel at full issue rate with its operands on chip: mma.sync (one warp, A and B fragments in registers) and, on Hopper, wgmma.mma_async (one warpgroup, A and B tiles in shared memory read through matrix descriptors). " +
		"One MAC is two floating-point operations (int8: two integer operations). The dense peak is the whitepapers' MACs per clock per SM (H100/H200: 2048 bf16/fp16, 1024 tf32, 4096 fp8 and int8) at the median SM clock the kernel ran at: these kernels draw the board to its power limit, which lowers the clock, so the energy per MAC is that at this clock. " +
		"± is the 95 % interval on this board's scale; above pi0 takes the baseline power's share (pi0 × the time of one MAC) away."
	return report.Section{Title: "Tensor cores: energy per multiply-accumulate", Text: text, Table: tab}, true
}
