package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/sensor/raplsensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Host is the host the twin's GPUs sit in, as its RAPL counters show it (host): each CPU
// package draws PackageIdle, plus PackageBusy while any of the sim's GPUs is busy (a load
// step or a measured command: the CPU feeding it), and its DRAM draws DRAM, plus DRAMBusy
// then. Each domain is a RAPL counter: energy_uj in quanta of EnergyUnitUJ, updated every
// raplsensor.UpdatePeriod, wrapping at MaxRangeUJ. Absent from a config, the twin has no
// host counters (as a virtual machine has none).
type Host struct {
	Sockets      int         // sockets (default 1)
	PackageIdle  units.Power // package_idle_w
	PackageBusy  units.Power // package_busy_w: added while a GPU is busy
	DRAM         units.Power // dram_w
	DRAMBusy     units.Power // dram_busy_w: added while a GPU is busy
	MaxRangeUJ   uint64      // max_energy_range_uj (default 262143328850, a Xeon's)
	EnergyUnitUJ float64     // energy_unit_uj (default 61.035: 2^-14 J)
}

type hostJSON struct {
	Sockets      *int     `json:"sockets"`
	PackageIdleW *float64 `json:"package_idle_w"`
	PackageBusyW *float64 `json:"package_busy_w"`
	DRAMW        *float64 `json:"dram_w"`
	DRAMBusyW    *float64 `json:"dram_busy_w"`
	MaxRangeUJ   *uint64  `json:"max_energy_range_uj"`
	EnergyUnitUJ *float64 `json:"energy_unit_uj"`
}

func setHost(c *Config, raw json.RawMessage) error {
	if string(raw) == "null" {
		c.Host = nil
		return nil
	}
	var h hostJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf(`host: want {"sockets", "package_idle_w", "package_busy_w", "dram_w", "dram_busy_w", "max_energy_range_uj", "energy_unit_uj"}: %v`, err)
	}
	out := Host{Sockets: 1, MaxRangeUJ: 262143328850, EnergyUnitUJ: 61.035}
	if h.Sockets != nil {
		out.Sockets = *h.Sockets
	}
	set := func(dst *units.Power, v *float64) {
		if v != nil {
			*dst = units.Power(*v)
		}
	}
	set(&out.PackageIdle, h.PackageIdleW)
	set(&out.PackageBusy, h.PackageBusyW)
	set(&out.DRAM, h.DRAMW)
	set(&out.DRAMBusy, h.DRAMBusyW)
	if h.MaxRangeUJ != nil {
		out.MaxRangeUJ = *h.MaxRangeUJ
	}
	if h.EnergyUnitUJ != nil {
		out.EnergyUnitUJ = *h.EnergyUnitUJ
	}
	switch {
	case out.Sockets < 1 || out.Sockets > 16:
		return fmt.Errorf("host.sockets %d: want 1 to 16", out.Sockets)
	case out.PackageIdle < 0 || out.PackageBusy < 0 || out.DRAM < 0 || out.DRAMBusy < 0:
		return fmt.Errorf("host: powers must not be negative")
	case out.MaxRangeUJ < 1000:
		return fmt.Errorf("host.max_energy_range_uj %d: want at least 1000", out.MaxRangeUJ)
	case !(out.EnergyUnitUJ > 0) || out.EnergyUnitUJ > 1e6:
		return fmt.Errorf("host.energy_unit_uj %g: want a quantum above 0 and at most 1e6 µJ", out.EnergyUnitUJ)
	}
	c.Host = &out
	return nil
}

func hostToJSON(h *Host) json.RawMessage {
	if h == nil {
		return json.RawMessage("null")
	}
	b, _ := json.Marshal(hostJSON{Sockets: &h.Sockets, PackageIdleW: ptr(float64(h.PackageIdle)), PackageBusyW: ptr(float64(h.PackageBusy)),
		DRAMW: ptr(float64(h.DRAM)), DRAMBusyW: ptr(float64(h.DRAMBusy)), MaxRangeUJ: &h.MaxRangeUJ, EnergyUnitUJ: &h.EnergyUnitUJ})
	return b
}

// hostStep is the step the twin integrates a host domain's power with: its update period.
const hostStep = raplsensor.UpdatePeriod

// busy reports whether any of the system's GPUs is busy at t.
func (s *System) busy(t time.Duration) bool {
	for _, d := range s.devs {
		if d.Busy(t) {
			return true
		}
	}
	return false
}

// hostPower is a domain's true power at t.
func (s *System) hostPower(kind string, t time.Duration) units.Power {
	h := s.cfg.Host
	idle, busy := h.PackageIdle, h.PackageBusy
	if kind == raplsensor.DRAM {
		idle, busy = h.DRAM, h.DRAMBusy
	}
	if s.busy(t) {
		return idle + busy
	}
	return idle
}

// TrueHostEnergy is the true energy of one host domain (raplsensor.Package or DRAM, each
// socket alike) over [t0, t1], integrated at the counters' update period.
func (s *System) TrueHostEnergy(kind string, t0, t1 time.Duration) units.Energy {
	if s.cfg.Host == nil || t1 <= t0 {
		return 0
	}
	var e float64
	for t := t0; t < t1; {
		next := min((t/hostStep+1)*hostStep, t1)
		e += float64(s.hostPower(kind, t)) * (next - t).Seconds()
		t = next
	}
	return units.Energy(e)
}

// HostSensors returns the twin's RAPL counters (cpu.package.N and cpu.dram.N per socket),
// or why it has none: a config without "host".
func (s *System) HostSensors() ([]sensor.Sensor, error) {
	h := s.cfg.Host
	if h == nil {
		return nil, fmt.Errorf("the sim device (%s) models no host RAPL counters (add \"host\" to --sim-config): CPU and DRAM energy not read", s.Name())
	}
	var out []sensor.Sensor
	for sock := range h.Sockets {
		for _, kind := range []string{raplsensor.Package, raplsensor.DRAM} {
			out = append(out, &hostSensor{sys: s, kind: kind, zone: raplsensor.Zone{Kind: kind, Socket: sock, MaxRangeUJ: h.MaxRangeUJ}})
		}
	}
	return out, nil
}

// hostSensor is one twin RAPL counter.
type hostSensor struct {
	sys  *System
	kind string
	zone raplsensor.Zone
	c    raplsensor.Counter
	// The true energy since 0 up to upto (a multiple of hostStep), integrated as reads
	// come (reads only move forward in time).
	upto time.Duration
	acc  float64
}

func (h *hostSensor) Channel() trace.Channel {
	return raplsensor.ChannelOf(h.zone.Channel(), raplsensor.What(h.kind)+" (the twin's)", fmt.Sprintf("sim host %s", h.zone.Channel()))
}

func (h *hostSensor) PeriodHint() time.Duration { return raplsensor.UpdatePeriod }

func (h *hostSensor) RangeUJ() uint64 { return h.sys.cfg.Host.MaxRangeUJ }

func (h *hostSensor) PollInterval() time.Duration { return raplsensor.PollInterval }

func (h *hostSensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	now := h.sys.clk.Now()
	last := now / hostStep * hostStep // the counter's latest update
	if last > h.upto {
		h.acc += float64(h.sys.TrueHostEnergy(h.kind, h.upto, last))
		h.upto = last
	}
	cfg := h.sys.cfg.Host
	uj := math.Floor(h.acc*1e6/cfg.EnergyUnitUJ) * cfg.EnergyUnitUJ
	raw := uint64(math.Mod(uj, float64(cfg.MaxRangeUJ)))
	h.c.MaxRangeUJ = cfg.MaxRangeUJ
	return append(dst, sensor.Reading{Value: h.c.Advance(raw)}), nil
}
