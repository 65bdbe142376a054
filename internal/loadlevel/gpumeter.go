package loadlevel

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/region"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// GPUMeter measures a GPU's board power over each recording period with gpuwatt's own
// pipeline: a Sampler records every channel of the device (NVML: the energy counter, the
// 20 ms sample buffer, the instant and average power fields) from Begin to End, and
// region.Summarize, as the measurement loop of micro and archline uses it (steady load:
// each channel's mean from its readings inside the period, the counter's least-squares
// rate), turns them into the period's mean power. The headline is the energy counter
// where there is one, else the best board channel; Detail names it and every other
// channel's figure, and Summary keeps the whole summary with its warnings.
type GPUMeter struct {
	Dev   gpu.Device
	Clock clock.Clock
	Poll  sensor.Options
	// Simulated names the meter as the sim device's (Name).
	Simulated bool

	smp    *sensor.Sampler
	cancel context.CancelFunc
	t0     time.Duration
	label  string
	detail string
	// Summary is the last recording period's region summary.
	Summary region.Summary
}

var _ Meter = (*GPUMeter)(nil)

// Name implements Meter.
func (m *GPUMeter) Name() string {
	if m.Simulated {
		return fmt.Sprintf("sim (GPU %d board, read through its sensors)", m.Dev.Info().Index)
	}
	return fmt.Sprintf("nvml (GPU %d board, corrected)", m.Dev.Info().Index)
}

// Begin implements Meter: starts a Sampler on the device's channels.
func (m *GPUMeter) Begin(label string) error {
	if m.smp != nil {
		m.stop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	smp := sensor.New(m.Clock, m.Dev.Sensors(), m.Poll)
	if err := smp.Start(ctx); err != nil {
		cancel()
		return fmt.Errorf("sampler: %w", err)
	}
	m.smp, m.cancel, m.label, m.detail = smp, cancel, label, ""
	m.t0 = m.Clock.Now()
	return nil
}

func (m *GPUMeter) stop() ([]trace.Channel, []trace.Sample) {
	m.smp.Poke()
	chans, samples := m.smp.Stop()
	m.cancel()
	m.smp = nil
	return chans, samples
}

// End implements Meter: the corrected mean board power over [Begin, End].
func (m *GPUMeter) End(Window) (float64, error) {
	if m.smp == nil {
		return 0, fmt.Errorf("End without Begin")
	}
	t1 := m.Clock.Now()
	unavailable := m.smp.Unavailable()
	chans, samples := m.stop()
	info := m.Dev.Info()
	tr := &trace.Trace{Meta: trace.Meta{Format: trace.Format, Channels: chans, Unavailable: unavailable, GPUs: []trace.GPU{info}}, Samples: samples}
	s := region.Summarize(tr, info, m.t0, t1, 0, 0, region.Options{What: "the recording period " + m.label, Steady: true})
	m.Summary = s
	if s.EnergySource == "" || s.MeanPowerW <= 0 {
		return 0, fmt.Errorf("no GPU power figure for %s: %s", m.label, strings.Join(status.Strings(s.Warnings), "; "))
	}
	var others []string
	for _, c := range s.Channels {
		if c.Channel != s.EnergySource && c.MeanPowerW > 0 {
			others = append(others, fmt.Sprintf("%s %.1f W", c.Channel, c.MeanPowerW))
		}
	}
	m.detail = fmt.Sprintf("%s (steady-load mean over the recording period, region.Summarize)", s.EnergySource)
	if len(others) > 0 {
		m.detail += "; also " + strings.Join(others, ", ")
	}
	return s.MeanPowerW, nil
}

// Kind implements MeterKind.
func (m *GPUMeter) Kind() string { return KindGPU }

// Interval implements MeterInterval: the last period's mean power's 95 % interval, from
// the region energy estimator's.
func (m *GPUMeter) Interval() (low, high float64, ok bool) {
	s := m.Summary
	if s.EnergyJ <= 0 || s.LowJ <= 0 || s.HighJ < s.LowJ {
		return 0, 0, false
	}
	return s.MeanPowerW * s.LowJ / s.EnergyJ, s.MeanPowerW * s.HighJ / s.EnergyJ, true
}

// Temperature implements MeterTemperature: the GPU's temperature over the last period.
func (m *GPUMeter) Temperature() (TempRange, bool) {
	t := m.Summary.TemperatureC
	if t == nil {
		return TempRange{}, false
	}
	return TempRange{Min: t.Min, Max: t.Max, Median: t.Median}, true
}

// Detail says which channel gave the last figure and what the others read.
func (m *GPUMeter) Detail() string { return m.detail }
