package energy

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Report is what `gpuwatt energy` prints: the region's energy from the estimator (Region)
// with its method and interval, the chosen channel's model inversion beside it (its
// corrected, raw and above-idle figures, the model and where it came from), and the trace
// it was read from. Its JSON form is the verb's --json output.
type Report struct {
	Trace   string `json:"trace"`
	Device  string `json:"device,omitempty"`
	GPU     int    `json:"gpu"`
	GPUName string `json:"gpu_name,omitempty"`
	Channel string `json:"channel"`

	FromS     float64 `json:"from_s"`
	ToS       float64 `json:"to_s"`
	DurationS float64 `json:"duration_s"`
	CoveredS  float64 `json:"covered_s"`

	// Interval is the estimator's figure (Estimate) with its relative and absolute 95 %
	// intervals; EnergyMethod, EnergySource and EnergyNote say how; the rest of this block
	// is Channel's.
	Interval
	EnergyMethod Method      `json:"energy_method"`
	EnergySource string      `json:"energy_source"`
	EnergyNote   string      `json:"energy_note"`
	Uncertainty  Uncertainty `json:"uncertainty"`
	// ChannelEnergyJ is Channel's corrected energy (its model inverted).
	ChannelEnergyJ float64 `json:"channel_energy_j"`
	// ChannelEnergyLowJ and ChannelEnergyHighJ are its 95 % interval on the board's scale
	// (its own budget; 0 where none was computed).
	ChannelEnergyLowJ  float64 `json:"channel_energy_low_j"`
	ChannelEnergyHighJ float64 `json:"channel_energy_high_j"`
	EnergyRawJ         float64 `json:"energy_raw_j"`
	EnergyActiveJ      float64 `json:"energy_active_j"`
	IdlePowerW         float64 `json:"idle_power_w"`
	IdleEstimated      bool    `json:"idle_estimated"`
	// IdleSource is where IdlePowerW came from: "given" (--idle), "baseline" (the trace's
	// own, IdleBaseline) or "lowest decile" (of the trace's corrected power); IdleLevel the
	// idle it stands for where known: "idle at rest" or "active idle".
	IdleSource   string  `json:"idle_source"`
	IdleLevel    string  `json:"idle_level,omitempty"`
	IdleBaseline string  `json:"idle_baseline,omitempty"`
	MeanPowerW   float64 `json:"mean_power_w"`
	Samples      int     `json:"samples"`
	Dropped      int     `json:"dropped"`
	// HalfDone of Dropped are half-done values (a value the next update follows within
	// T/8, as before 30 % of the H200's power.instant updates).
	HalfDone int `json:"half_done_dropped,omitempty"`

	UpdatePeriodS  float64 `json:"update_period_s"`
	PeriodSource   string  `json:"update_period_source,omitempty"`
	Coverage       float64 `json:"coverage"`
	DataCoverage   float64 `json:"data_coverage"`
	SensorCoverage float64 `json:"sensor_coverage"`
	// Gaps are the stretches of the region without readings (correct.Result.Gaps): left
	// out of CoveredS and the coverage; the power across them is interpolated.
	Gaps []trace.Gap `json:"gaps,omitempty"`

	Model       string   `json:"model"`
	ModelSource string   `json:"model_source"`
	ModelGuess  bool     `json:"model_guess"`
	Method      string   `json:"method"`
	Assumptions []string `json:"assumptions"`
	// Series names the corrected power series written by --series, where one was.
	Series   *SeriesFile      `json:"series,omitempty"`
	Warnings []status.Warning `json:"warnings"`
}

// SeriesFile is what `energy --series FILE.csv` wrote: the channel's corrected power in
// Bins bins of StepS over the region (PowerSeries), with their 95 % bands.
type SeriesFile struct {
	File    string  `json:"file"`
	Channel string  `json:"channel"`
	Model   string  `json:"model"`
	StepS   float64 `json:"step_s"`
	Bins    int     `json:"bins"`
}

// NewReport describes est, with the inversion r of channel ch (model c) of GPU g of the
// trace read from path.
func NewReport(path string, tr *trace.Trace, g int, ch string, c correct.Choice, r correct.Result, est Estimate) Report {
	rep := Report{
		Trace: path, GPU: g, Channel: ch,
		FromS: r.From.Seconds(), ToS: r.To.Seconds(), DurationS: (r.To - r.From).Seconds(), CoveredS: r.Covered.Seconds(),
		Interval: est.Interval, ChannelEnergyJ: r.Energy.Joules(), EnergyRawJ: r.EnergyRaw.Joules(), EnergyActiveJ: r.EnergyActive.Joules(),
		IdlePowerW: float64(r.Idle), IdleEstimated: r.IdleEstimated, MeanPowerW: float64(r.MeanPower),
		IdleSource: r.IdleSource, IdleLevel: r.IdleLevel,
		Samples: r.Samples, Dropped: r.Dropped, HalfDone: r.HalfDone,
		UpdatePeriodS: r.Period.Seconds(), PeriodSource: r.PeriodSource,
		Coverage: r.Coverage, DataCoverage: r.DataCoverage, SensorCoverage: r.SensorCoverage, Gaps: r.Gaps,
		Model: c.Model.String(), ModelSource: c.Source, ModelGuess: c.Guess,
		Method:       correct.Method(c.Model, r.Period),
		Assumptions:  correct.Assumptions(c.Model, r.Period),
		Warnings:     slices.Clone(r.Warnings),
		EnergyMethod: est.Method, EnergySource: est.Source, EnergyNote: est.Note,
		Uncertainty: est.Uncertainty,
	}
	if u := est.InversionUncertainty; u != nil {
		rep.ChannelEnergyLowJ, rep.ChannelEnergyHighJ = rep.ChannelEnergyJ-u.HalfWidthJ, rep.ChannelEnergyJ+u.HalfWidthJ
	}
	for _, w := range est.Warnings {
		// The estimator's own warnings (the inversion's are r's, above).
		if est.Method != Inversion || w.Code != CodeInversion {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
	if r.IdleSource == correct.IdleFromBaseline {
		rep.IdleBaseline = r.IdleWhat
	}
	if rep.Assumptions == nil {
		rep.Assumptions = []string{}
	}
	if rep.Warnings == nil {
		rep.Warnings = []status.Warning{}
	}
	if tr != nil {
		rep.Device = tr.Meta.Device
		for _, x := range tr.Meta.GPUs {
			if x.Index == g {
				rep.GPUName = x.Name
			}
		}
	}
	return rep
}

// WriteText prints a report for people, in the style of `gpuwatt measure`.
func WriteText(w io.Writer, rep Report) error {
	var b strings.Builder
	gpu := fmt.Sprintf("GPU %d", rep.GPU)
	if rep.GPUName != "" {
		gpu += " (" + rep.GPUName + ")"
	}
	fmt.Fprintf(&b, "\n Energy of %s, %s, from %s to %s\n", rep.Channel, gpu, fmtS(rep.FromS), fmtS(rep.ToS))
	src := rep.Trace
	if rep.Device != "" {
		src += " (" + rep.Device + ")"
	}
	fmt.Fprintf(&b, " trace %s\n\n", src)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(v, what string) { fmt.Fprintf(tw, "%s\t  %s\t\n", v, what) }
	covered := ""
	if rep.DataCoverage < 1 {
		covered = fmt.Sprintf(" (readings cover %s of it)", fmtSecs(rep.CoveredS))
	}
	line(fmtSecs(rep.DurationS), "region"+covered)
	line(FmtPM(rep.EnergyJ, rep.Uncertainty.HalfWidthJ), "energy (95 %, this board): "+rep.EnergySource)
	line(units.Energy(rep.Uncertainty.AbsoluteLowJ).String()+" – "+units.Energy(rep.Uncertainty.AbsoluteHighJ).String(),
		fmt.Sprintf("with the board's ±%.0f %% gain error (absolute)", 100*rep.Uncertainty.GainErrorFraction))
	if rep.EnergyMethod != Inversion {
		v := units.Energy(rep.ChannelEnergyJ).String()
		if rep.ChannelEnergyHighJ > 0 {
			v = FmtPM(rep.ChannelEnergyJ, (rep.ChannelEnergyHighJ-rep.ChannelEnergyLowJ)/2)
		}
		line(v, rep.Channel+", corrected")
	}
	raw := "raw: the readings integrated as recorded"
	if rep.ChannelEnergyJ != 0 {
		raw += fmt.Sprintf(" (%+.1f %%)", 100*(rep.EnergyRawJ-rep.ChannelEnergyJ)/rep.ChannelEnergyJ)
	}
	line(units.Energy(rep.EnergyRawJ).String(), raw)
	idle := fmt.Sprintf("idle %s: the trace's lowest decile; at rest or active not known", units.Power(rep.IdlePowerW))
	switch rep.IdleSource {
	case correct.IdleGiven:
		idle = fmt.Sprintf("idle %s: given", units.Power(rep.IdlePowerW))
	case correct.IdleFromBaseline:
		idle = fmt.Sprintf("%s %s: %s", rep.IdleLevel, units.Power(rep.IdlePowerW), rep.IdleBaseline)
	}
	line(units.Energy(rep.EnergyActiveJ).String(), "above idle ("+idle+")")
	line(units.Power(rep.MeanPowerW).String(), "mean power")
	if rep.HalfDone > 0 {
		line(fmt.Sprint(rep.Samples), fmt.Sprintf("readings in the region (%d stale repeats and %d half-done values dropped)", rep.Dropped-rep.HalfDone, rep.HalfDone))
	} else {
		line(fmt.Sprint(rep.Samples), fmt.Sprintf("readings in the region (%d stale repeats dropped)", rep.Dropped))
	}
	if rep.UpdatePeriodS > 0 {
		from := map[string]string{"model": "the model's", "trace": "from the trace's metadata", "readings": "learned from the readings"}[rep.PeriodSource]
		line(fmtSecs(rep.UpdatePeriodS), fmt.Sprintf("update period (%s), coverage %.0f %%", from, 100*rep.SensorCoverage))
	}
	tw.Flush()
	fmt.Fprintf(&b, "\n interval: %s\n", Budget(rep.Uncertainty))

	fmt.Fprintf(&b, "\n model: %s\n", rep.Model)
	fmt.Fprintf(&b, "   from %s\n", rep.ModelSource)
	switch {
	case rep.ModelGuess && rep.Model == "none":
		fmt.Fprintf(&b, "   (name the sensor's model with --sensor to correct the readings)\n")
	case rep.ModelGuess:
		fmt.Fprintf(&b, "   (a guess from the channel's and the board's names: characterise the sensor and pass --sensor sensor.json)\n")
	}
	fmt.Fprintf(&b, "   %s\n", rep.Method)
	for _, a := range rep.Assumptions {
		fmt.Fprintf(&b, "   assumes %s\n", a)
	}
	if s := rep.Series; s != nil {
		fmt.Fprintf(&b, "\n corrected power series: %s, %d bins of %s (%s through %s, 95 %% bands)\n", s.File, s.Bins, fmtSecs(s.StepS), s.Channel, s.Model)
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintf(&b, "\n warnings:\n")
		for _, x := range status.Group(rep.Warnings, 0) {
			fmt.Fprintf(&b, "   ! %s\n", x)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FmtPM formats an energy with its 95 % half-width: "4.307 kJ ± 22.7 J".
func FmtPM(e, hw float64) string {
	return units.Energy(e).String() + " ± " + units.Energy(hw).String()
}

// Budget says what an interval is made of, largest first, and what it leaves out:
// "edges ±22.7 J, readings ±2 mJ; not known: coverage".
func Budget(u Uncertainty) string {
	cs := slices.Clone(u.Components)
	slices.SortStableFunc(cs, func(a, b Component) int {
		switch {
		case a.Known != b.Known:
			if a.Known {
				return -1
			}
			return 1
		case a.HalfWidthJ > b.HalfWidthJ:
			return -1
		case a.HalfWidthJ < b.HalfWidthJ:
			return 1
		}
		return 0
	})
	var in, out []string
	for _, c := range cs {
		if c.Known {
			in = append(in, c.Name+" ±"+units.Energy(c.HalfWidthJ).String())
		} else {
			out = append(out, c.Name)
		}
	}
	s := strings.Join(in, ", ")
	if len(in) == 0 {
		s = "nothing known"
	}
	if len(out) > 0 {
		s += "; not known, so not included: " + strings.Join(out, ", ")
	}
	return s
}

// fmtSecs formats seconds briefly: "500 ms", "2.5 s".
func fmtSecs(s float64) string { return correct.FmtDur(sensormodel.Seconds(s)) }

// fmtS formats a time on the trace's axis in seconds: "3.2 s", "12.345678 s".
var fmtS = correct.FmtS
