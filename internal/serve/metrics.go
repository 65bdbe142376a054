package serve

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/promtext"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// The metrics, as docs/serve.md lists them.
var (
	descEnergy = promtext.NewDesc("gpuwatt_gpu_energy_joules_total",
		"Energy of the GPU since gpuwatt serve started, in J: from the board's energy counter where it has one (source=\"counter\"), else the integral of the corrected power (source=\"corrected\", which trails the present by gpuwatt_gpu_corrected_power_delay_seconds).",
		promtext.Counter, "gpu", "uuid", "model", "hostname", "source")
	descPower = promtext.NewDesc("gpuwatt_gpu_power_watts",
		"Power of the GPU in W: the latest reading of each power channel of the driver (channel=power.usage, power.instant, power.samples, ...), and channel=\"corrected\": the true power as the inverted sensor model of the best channel gives it, the mean over the last settled second, which lags the present by gpuwatt_gpu_corrected_power_delay_seconds.",
		promtext.Gauge, "gpu", "uuid", "channel")
	descDelay = promtext.NewDesc("gpuwatt_gpu_corrected_power_delay_seconds",
		"How far the corrected power (and the corrected energy) lags the present, in s: the inversion of a sensor's window and lag needs the readings that come after.",
		promtext.Gauge, "gpu", "uuid", "channel")
	descIdle = promtext.NewDesc("gpuwatt_gpu_idle_power_watts",
		"The GPU's idle floor in W: the lowest 1 s mean of the corrected power since gpuwatt serve started.",
		promtext.Gauge, "gpu", "uuid")
	descClock = promtext.NewDesc("gpuwatt_gpu_clock_hertz",
		"Clock of the GPU in Hz (clock=sm, mem, graphics).",
		promtext.Gauge, "gpu", "uuid", "clock")
	descTemp = promtext.NewDesc("gpuwatt_gpu_temperature_celsius",
		"Temperature in degrees Celsius (sensor=gpu, memory).",
		promtext.Gauge, "gpu", "uuid", "sensor")
	descEvent = promtext.NewDesc("gpuwatt_gpu_clock_event_active",
		"1 while the clock-event (throttle) reason holds the clocks down, else 0 (NVML's clock event reasons).",
		promtext.Gauge, "gpu", "uuid", "reason")
	descUp = promtext.NewDesc("gpuwatt_gpu_up",
		"1 while the GPU's driver calls succeed, 0 while every call since the previous update failed (the other figures then keep their last values).",
		promtext.Gauge, "gpu", "uuid")
	descProc = promtext.NewDesc("gpuwatt_process_gpu_energy_joules_total",
		"Energy of the GPU attributed to a process since gpuwatt serve first saw it, in J: each second's energy above the idle floor split by the processes' shares of the SM utilisation (docs/serve.md states the limits); namespace, pod, container and container_id where the process runs in a Kubernetes pod.",
		promtext.Counter, "gpu", "pid", "comm", "namespace", "pod", "container", "container_id")
	descUnattr = promtext.NewDesc("gpuwatt_gpu_unattributed_energy_joules_total",
		"Energy of the GPU since gpuwatt serve started that the per-process split gave to no process, in J: the idle floor, and what was drawn above it while no process showed SM use.",
		promtext.Counter, "gpu", "uuid")
	descPolls = promtext.NewDesc("gpuwatt_sampler_polls_total",
		"Driver calls the sampler made for the GPU.",
		promtext.Counter, "gpu")
	descErrors = promtext.NewDesc("gpuwatt_sampler_errors_total",
		"Driver calls of the sampler for the GPU that failed.",
		promtext.Counter, "gpu")
	descMissed = promtext.NewDesc("gpuwatt_sampler_missed_updates_total",
		"Sensor updates that came and went between two polls of the sampler, for the GPU.",
		promtext.Counter, "gpu")
	descBuild = promtext.NewDesc("gpuwatt_build_info",
		"Always 1: the gpuwatt that serves these metrics (version, revision, the Go toolchain that built it).",
		promtext.Gauge, "version", "revision", "goversion", "goos", "goarch")
	descInfo = promtext.NewDesc("gpuwatt_gpu_info",
		"Always 1: what the driver says of the GPU (model, PCI bus id, driver version), as read when gpuwatt serve started; device is nvml, or sim:PRESET for the simulated twin (simulated=\"true\": no figure of it is measured).",
		promtext.Gauge, "gpu", "uuid", "model", "pci_bus_id", "driver_version", "hostname", "device", "simulated")
	descLimit = promtext.NewDesc("gpuwatt_gpu_power_limit_watts",
		"The GPU's power limit in W as read when gpuwatt serve started: limit=\"enforced\" (what caps the board) and limit=\"default\".",
		promtext.Gauge, "gpu", "uuid", "limit")
	descCPU = promtext.NewDesc("gpuwatt_sampler_cpu_seconds_total",
		"CPU time (user + system) of the gpuwatt serve process since sampling started, in s: sampling, the corrections and the answers to scrapes together.",
		promtext.Counter)

	descDCGMPower = promtext.NewDesc("DCGM_FI_DEV_POWER_USAGE",
		"Power draw (in W).",
		promtext.Gauge, "gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
	descCPUEnergy = promtext.NewDesc("gpuwatt_cpu_energy_joules_total",
		"Energy of a host RAPL domain (a CPU package, its DRAM, psys) since gpuwatt serve started, from its powercap counter unwrapped.",
		promtext.Counter, "domain", "kind")
	descDCGMEnergy = promtext.NewDesc("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
		"Total energy consumption since boot (in mJ).",
		promtext.Counter, "gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
)

// sysInfo is what gpuwatt_gpu_info says of the system: the driver's version, the device
// (nvml, sim:PRESET) and whether it is simulated.
type sysInfo struct {
	driver    string
	device    string
	simulated bool
}

var clockLabel = map[string]string{trace.ChClockSM: "sm", trace.ChClockMem: "mem", trace.ChClockGr: "graphics"}
var tempLabel = map[string]string{trace.ChTempGPU: "gpu", trace.ChTempMem: "memory"}

// metrics turns one snapshot of the Server's state into the samples of a scrape: it
// reads that snapshot and never the driver.
func (s *Server) metrics() *promtext.Set {
	snaps := s.Snapshot()
	s.mu.Lock()
	cpu := s.cpuSec
	s.mu.Unlock()
	set := &promtext.Set{}
	gauge, counter := set.Add, set.Add // the family's Desc has its type
	gauge(descBuild, 1, s.opt.Version, s.opt.Revision, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	host := s.HostEnergy()
	for _, k := range sortedKeys(host) {
		counter(descCPUEnergy, host[k], k, energy.HostKind(k))
	}
	for i := range snaps {
		g := &snaps[i]
		idx := strconv.Itoa(g.Index)
		if info := s.byIdx[g.Index]; info != nil {
			gi := info.info
			gauge(descInfo, 1, idx, g.UUID, g.Model, strings.ToLower(gi.PCIBusID), s.sys0.driver, g.Hostname, s.sys0.device, strconv.FormatBool(s.sys0.simulated))
			if gi.PowerLimitW > 0 {
				gauge(descLimit, gi.PowerLimitW, idx, g.UUID, "enforced")
			}
			if gi.DefaultPowerLimit > 0 {
				gauge(descLimit, gi.DefaultPowerLimit, idx, g.UUID, "default")
			}
		}
		up := 0.0
		if g.Up {
			up = 1
		}
		gauge(descUp, up, idx, g.UUID)
		counter(descEnergy, g.EnergyJ, idx, g.UUID, g.Model, g.Hostname, g.EnergySource)
		for _, p := range g.Power {
			gauge(descPower, p.W, idx, g.UUID, p.Channel)
		}
		if g.HasCorrected {
			gauge(descPower, g.CorrectedW, idx, g.UUID, "corrected")
			gauge(descDelay, g.CorrectedDelay.Seconds(), idx, g.UUID, g.CorrectedChannel)
		}
		if g.HasIdle {
			gauge(descIdle, g.IdleW, idx, g.UUID)
		}
		for _, k := range sortedKeys(g.ClocksHz) {
			gauge(descClock, g.ClocksHz[k], idx, g.UUID, clockLabel[k])
		}
		for _, k := range sortedKeys(g.TempC) {
			gauge(descTemp, g.TempC[k], idx, g.UUID, tempLabel[k])
		}
		for _, e := range g.ClockEvents {
			v := 0.0
			if e.Active {
				v = 1
			}
			gauge(descEvent, v, idx, g.UUID, e.Reason)
		}
		for _, p := range g.Processes {
			counter(descProc, p.EnergyJ, idx, strconv.Itoa(p.PID), p.Comm, p.Namespace, p.Pod, p.Container, p.ContainerID)
		}
		counter(descUnattr, g.UnattributedJ, idx, g.UUID)
		counter(descPolls, float64(g.Polls), idx)
		counter(descErrors, float64(g.Errors), idx)
		counter(descMissed, float64(g.Missed), idx)
		if s.opt.DCGMNames {
			l := []string{idx, g.UUID, s.busID(g.Index), "nvidia" + idx, g.Model, g.Hostname}
			for _, p := range g.Power {
				if p.Channel == trace.ChPowerUsage {
					gauge(descDCGMPower, p.W, l...)
				}
			}
			if g.HasCounter {
				counter(descDCGMEnergy, g.CounterJ*1e3, l...)
			}
		}
	}
	counter(descCPU, cpu)
	return set
}

func (s *Server) busID(i int) string {
	if g := s.byIdx[i]; g != nil {
		return strings.ToLower(g.info.PCIBusID)
	}
	return ""
}
