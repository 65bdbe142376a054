package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/sensormodel"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

// Process is a scripted process using one GPU of the sim (processes): over [T, T+Duration)
// it holds a CUDA context, keeps SMUtil percent of the SMs busy (what NVML's per-process
// utilisation reports) and draws Power of its own on top of active idle. While processes
// run, the board draws active idle plus the sum of their powers (at most power_limit_w);
// after the last ends, active idle for active_idle_hold_s, then the stair down to idle.
// A process's true energy is its own Power over the time it ran (TrueProcessEnergy): the
// board's active idle is nobody's.
type Process struct {
	GPU      int           // gpu: the device it runs on (default 0)
	PID      int           // pid
	Comm     string        // comm: its command name
	T        time.Duration // t_s
	Duration time.Duration // duration_s
	SMUtil   float64       // sm_util: percent, 0 to 100
	Power    units.Power   // power_w: its own power above active idle
}

var processKeys = []string{"gpu", "pid", "comm", "t_s", "duration_s", "sm_util", "power_w"}

func setProcesses(c *Config, raw json.RawMessage) error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf(`processes: want a list of {"pid", "comm", "t_s", "duration_s", "sm_util", "power_w"} objects, got %s`, short(raw))
	}
	var out []Process
	for i, it := range items {
		where := fmt.Sprintf("processes[%d]", i)
		ms, err := members(it, where)
		if err != nil {
			return err
		}
		var p Process
		seen := map[string]bool{}
		for _, m := range ms {
			if !slices.Contains(processKeys, m.key) {
				return unknownKey(where+": ", m.key, processKeys)
			}
			seen[m.key] = true
			if m.key == "comm" {
				if err := json.Unmarshal(m.val, &p.Comm); err != nil {
					return fmt.Errorf("%s: comm: want a string, got %s", where, short(m.val))
				}
				continue
			}
			var v float64
			switch m.key {
			case "t_s", "duration_s":
				v, err = seconds(m.key, m.val)
			case "power_w":
				v, err = numberOf(m.key, "watts", m.val)
			default:
				v, err = numberOf(m.key, "a number", m.val)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			switch m.key {
			case "gpu":
				p.GPU = int(v)
			case "pid":
				p.PID = int(v)
			case "t_s":
				p.T = sensormodel.Seconds(v)
			case "duration_s":
				p.Duration = sensormodel.Seconds(v)
			case "sm_util":
				p.SMUtil = v
			case "power_w":
				p.Power = units.Power(v)
			}
		}
		for _, k := range []string{"pid", "t_s", "duration_s", "sm_util", "power_w"} {
			if !seen[k] {
				return fmt.Errorf("%s: missing key %q", where, k)
			}
		}
		out = append(out, p)
	}
	c.Processes = out
	return nil
}

func processesJSON(ps []Process) any {
	out := []map[string]any{}
	for _, p := range ps {
		out = append(out, map[string]any{"gpu": p.GPU, "pid": p.PID, "comm": p.Comm, "t_s": p.T.Seconds(),
			"duration_s": p.Duration.Seconds(), "sm_util": p.SMUtil, "power_w": float64(p.Power)})
	}
	return out
}

func (c Config) validateProcesses() error {
	for i, p := range c.Processes {
		where := fmt.Sprintf("processes[%d]", i)
		switch {
		case p.GPU < 0 || p.GPU >= max(c.GPUs, 1):
			return fmt.Errorf("%s: gpu: want 0 to %d (gpus is %d), got %d", where, max(c.GPUs, 1)-1, c.GPUs, p.GPU)
		case p.PID <= 0:
			return fmt.Errorf("%s: pid: want > 0, got %d", where, p.PID)
		case p.T < 0:
			return fmt.Errorf("%s: t_s: want >= 0, got %g", where, p.T.Seconds())
		case p.Duration <= 0:
			return fmt.Errorf("%s: duration_s: want > 0, got %g", where, p.Duration.Seconds())
		case !(p.SMUtil >= 0 && p.SMUtil <= 100):
			return fmt.Errorf("%s: sm_util: want 0 to 100 (percent), got %g", where, p.SMUtil)
		case !(p.Power >= 0) || math.IsInf(float64(p.Power), 0) || p.Power > maxPlausibleW:
			return fmt.Errorf("%s: power_w: want 0 to %g, got %g", where, float64(maxPlausibleW), float64(p.Power))
		}
	}
	return nil
}

// processActivities are the loads the processes of GPU index make: one per stretch of time
// in which the same processes run, at active idle plus their powers.
func processActivities(c Config, index int, load func(start, end time.Duration, p units.Power) activity) []activity {
	var mine []Process
	var edges []time.Duration
	for _, p := range c.Processes {
		if p.GPU == index {
			mine = append(mine, p)
			edges = append(edges, p.T, p.T+p.Duration)
		}
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i] < edges[j] })
	edges = compact(edges)
	var out []activity
	for i := 0; i+1 < len(edges); i++ {
		a, b := edges[i], edges[i+1]
		sum, n := units.Power(0), 0
		for _, p := range mine {
			if p.T <= a && p.T+p.Duration >= b {
				sum += p.Power
				n++
			}
		}
		if n == 0 {
			continue
		}
		pw := c.ActiveIdle + sum
		if c.PowerLimit > 0 {
			pw = min(pw, c.PowerLimit)
		}
		out = append(out, load(a, b, pw))
	}
	return out
}

// Processes implements gpu.ProcessLister: the scripted processes that ran on the device
// since the previous call (the first call: the second before it), each with its SM
// utilisation averaged over that span.
func (d *Device) Processes() ([]gpu.ProcessUse, error) {
	now := d.clk.Now()
	d.mu.Lock()
	from := d.procSeen
	if !d.procAsked {
		from = now - time.Second
	}
	d.procSeen, d.procAsked = now, true
	d.mu.Unlock()
	span := now - from
	if span <= 0 {
		return nil, nil
	}
	var out []gpu.ProcessUse
	for _, p := range d.cfg.Processes {
		if p.GPU != d.info.Index {
			continue
		}
		ov := min(now, p.T+p.Duration) - max(from, p.T)
		if ov <= 0 {
			continue
		}
		out = append(out, gpu.ProcessUse{PID: p.PID, Comm: p.Comm, SMUtil: p.SMUtil * ov.Seconds() / span.Seconds()})
	}
	return out, nil
}

// TrueProcessEnergy is process pid's true energy over [t0, t1]: its own power over the
// time it ran there (the board's active idle not included).
func (d *Device) TrueProcessEnergy(pid int, t0, t1 time.Duration) units.Energy {
	var e units.Energy
	for _, p := range d.cfg.Processes {
		if p.GPU != d.info.Index || p.PID != pid {
			continue
		}
		if ov := min(t1, p.T+p.Duration) - max(t0, p.T); ov > 0 {
			e += units.Energy(float64(p.Power) * ov.Seconds())
		}
	}
	return e
}

var _ gpu.ProcessLister = (*Device)(nil)
