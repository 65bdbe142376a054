package correct

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"gpuwatt/internal/sensormodel"
	"gpuwatt/internal/trace"
	"gpuwatt/internal/units"
)

// BoardChannels are the whole-board power channels, best first for an energy figure:
// trace.PowerPreference, the one order (its comment says why).
var BoardChannels = trace.PowerPreference

// PickChannel returns the best board power channel of GPU gpu that has readings in tr.
func PickChannel(tr *trace.Trace, gpu int) (string, error) {
	have := map[string]bool{}
	for i := range tr.Samples {
		if x := &tr.Samples[i]; x.GPU == gpu {
			have[x.Channel] = true
		}
	}
	if n, ok := trace.Preferred(BoardChannels, func(n string) bool { return have[n] }); ok {
		return n, nil
	}
	return "", fmt.Errorf("GPU %d has no board power channel (%s); name one with --channel (power channels: %s)",
		gpu, strings.Join(BoardChannels, ", "), listOr(PowerChannels(tr, gpu), "none"))
}

// PowerChannels lists the power channels of GPU gpu in tr that have readings, by name.
func PowerChannels(tr *trace.Trace, gpu int) []string {
	have := map[string]bool{}
	for i := range tr.Samples {
		if x := &tr.Samples[i]; x.GPU == gpu {
			have[x.Channel] = true
		}
	}
	var out []string
	for n := range have {
		if IsPower(tr, gpu, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// IsPower reports whether channel name of GPU gpu is a measured power (W), not a setting.
func IsPower(tr *trace.Trace, gpu int, name string) bool {
	if c, ok := tr.Channel(gpu, name); ok {
		q := c.Quantity
		if q == "" {
			q = trace.QuantityOf(name)
		}
		return q == trace.QPower && !c.Setting && name != trace.ChPowerLimit
	}
	return trace.QuantityOf(name) == trace.QPower && name != trace.ChPowerLimit
}

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

// Report is what `gpuwatt energy` prints: a Result, the model and where it came from, and
// the trace it was read from. Its JSON form is the verb's --json output.
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

	EnergyJ       float64 `json:"energy_j"`
	EnergyRawJ    float64 `json:"energy_raw_j"`
	EnergyActiveJ float64 `json:"energy_active_j"`
	IdlePowerW    float64 `json:"idle_power_w"`
	IdleEstimated bool    `json:"idle_estimated"`
	MeanPowerW    float64 `json:"mean_power_w"`
	Samples       int     `json:"samples"`
	Dropped       int     `json:"dropped"`

	UpdatePeriodS  float64 `json:"update_period_s"`
	PeriodSource   string  `json:"update_period_source,omitempty"`
	Coverage       float64 `json:"coverage"`
	DataCoverage   float64 `json:"data_coverage"`
	SensorCoverage float64 `json:"sensor_coverage"`

	Model       string   `json:"model"`
	ModelSource string   `json:"model_source"`
	ModelGuess  bool     `json:"model_guess"`
	Method      string   `json:"method"`
	Assumptions []string `json:"assumptions"`
	Warnings    []string `json:"warnings"`
}

// NewReport describes r, computed on channel ch of GPU g of the trace read from path.
func NewReport(path string, tr *trace.Trace, g int, ch string, c Choice, r Result) Report {
	rep := Report{
		Trace: path, GPU: g, Channel: ch,
		FromS: r.From.Seconds(), ToS: r.To.Seconds(), DurationS: (r.To - r.From).Seconds(), CoveredS: r.Covered.Seconds(),
		EnergyJ: r.Energy.Joules(), EnergyRawJ: r.EnergyRaw.Joules(), EnergyActiveJ: r.EnergyActive.Joules(),
		IdlePowerW: float64(r.Idle), IdleEstimated: r.IdleEstimated, MeanPowerW: float64(r.MeanPower),
		Samples: r.Samples, Dropped: r.Dropped,
		UpdatePeriodS: r.Period.Seconds(), PeriodSource: r.PeriodSource,
		Coverage: r.Coverage, DataCoverage: r.DataCoverage, SensorCoverage: r.SensorCoverage,
		Model: c.Model.String(), ModelSource: c.Source, ModelGuess: c.Guess,
		Method:      Method(c.Model, r.Period),
		Assumptions: Assumptions(c.Model, r.Period),
		Warnings:    slices.Clone(r.Warnings),
	}
	if rep.Assumptions == nil {
		rep.Assumptions = []string{}
	}
	if rep.Warnings == nil {
		rep.Warnings = []string{}
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
	line(units.Energy(rep.EnergyJ).String(), "energy, corrected")
	raw := "raw: the readings integrated as recorded"
	if rep.EnergyJ != 0 {
		raw += fmt.Sprintf(" (%+.1f %%)", 100*(rep.EnergyRawJ-rep.EnergyJ)/rep.EnergyJ)
	}
	line(units.Energy(rep.EnergyRawJ).String(), raw)
	idle := "given"
	if rep.IdleEstimated {
		idle = "the lowest decile of the trace"
	}
	line(units.Energy(rep.EnergyActiveJ).String(), fmt.Sprintf("above idle (idle %s: %s)", units.Power(rep.IdlePowerW), idle))
	line(units.Power(rep.MeanPowerW).String(), "mean power")
	line(fmt.Sprint(rep.Samples), fmt.Sprintf("readings in the region (%d stale repeats dropped)", rep.Dropped))
	if rep.UpdatePeriodS > 0 {
		from := map[string]string{"model": "the model's", "trace": "from the trace's metadata", "readings": "learned from the readings"}[rep.PeriodSource]
		line(fmtSecs(rep.UpdatePeriodS), fmt.Sprintf("update period (%s), coverage %.0f %%", from, 100*rep.SensorCoverage))
	}
	tw.Flush()

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
	if len(rep.Warnings) > 0 {
		fmt.Fprintf(&b, "\n warnings:\n")
		for _, x := range rep.Warnings {
			fmt.Fprintf(&b, "   ! %s\n", x)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtSecs formats seconds briefly: "500 ms", "2.5 s".
func fmtSecs(s float64) string { return fmtDur(sensormodel.Seconds(s)) }
