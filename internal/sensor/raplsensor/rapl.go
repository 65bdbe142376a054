// Package raplsensor reads the host's RAPL energy counters through Linux's powercap tree
// (/sys/class/powercap, injectable for tests): one cumulative channel per CPU package, its
// DRAM domain and the platform (psys) where the tree has them, on trace.HostGPU.
//
// energy_uj counts microjoules and wraps at max_energy_range_uj (every ~60 s to hours,
// depending on the part and the load): Read unwraps it, so the channel is a counter that
// only grows, in joules, from the first reading's raw value. RAPL updates its counters about
// every millisecond (Intel SDM vol. 3B 15.10); gpuwatt's energy over a region brackets each
// edge between readings (energy.HostRegion).
package raplsensor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// DefaultRoot is the powercap tree.
const DefaultRoot = "/sys/class/powercap"

// UpdatePeriod is how often RAPL's counters update (about 1 ms on Intel and AMD parts).
const UpdatePeriod = time.Millisecond

// Domain kinds.
const (
	Package = "package"
	DRAM    = "dram"
	Psys    = "psys"
)

// Zone is one RAPL domain as channel cpu.KIND.N (cpu.package.0, cpu.dram.0, cpu.psys).
type Zone struct {
	Dir  string // the zone's directory (root/intel-rapl:0:1)
	Kind string // Package, DRAM or Psys
	// Socket is the package the domain belongs to (-1: psys, the whole platform).
	Socket int
	// MaxRangeUJ is max_energy_range_uj: energy_uj wraps to 0 after it (0: not known).
	MaxRangeUJ uint64
}

// Channel is the zone's channel name.
func (z Zone) Channel() string {
	if z.Kind == Psys {
		return "cpu.psys"
	}
	return fmt.Sprintf("cpu.%s.%d", z.Kind, z.Socket)
}

// Find lists the readable package, DRAM and psys zones under root (core and uncore are
// parts of a package and left out). Where none can be read, the error is one line saying
// why: no powercap tree (a virtual machine, or a kernel without intel_rapl), no RAPL zone
// in it, or counters readable by root only.
func Find(root string) ([]Zone, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no powercap tree at %s (a virtual machine, or a kernel without the intel_rapl driver): CPU and DRAM energy not read", root)
		}
		return nil, fmt.Errorf("cannot read the powercap tree %s: %v: CPU and DRAM energy not read", root, unwrap(err))
	}
	var zones []Zone
	var denied, broken []string
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "intel-rapl:") {
			continue // intel-rapl (the control type), mmio zones (duplicates), dtpm
		}
		parts := strings.Split(strings.TrimPrefix(n, "intel-rapl:"), ":")
		sock, err := strconv.Atoi(parts[0])
		if err != nil || len(parts) > 2 {
			continue
		}
		dir := filepath.Join(root, n)
		name, err := readSmall(filepath.Join(dir, "name"))
		if err != nil {
			continue
		}
		z := Zone{Dir: dir, Socket: sock}
		switch {
		case name == "psys":
			z.Kind, z.Socket = Psys, -1
		case len(parts) == 1 && strings.HasPrefix(name, "package-"):
			z.Kind = Package
			if s, err := strconv.Atoi(strings.TrimPrefix(name, "package-")); err == nil {
				z.Socket = s
			}
		case len(parts) == 2 && name == "dram":
			z.Kind = DRAM
			if pn, err := readSmall(filepath.Join(root, "intel-rapl:"+parts[0], "name")); err == nil {
				if s, err := strconv.Atoi(strings.TrimPrefix(pn, "package-")); err == nil {
					z.Socket = s
				}
			}
		default:
			continue // core, uncore: inside the package's figure
		}
		if _, err := readUJ(filepath.Join(dir, "energy_uj")); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				denied = append(denied, n)
			} else {
				broken = append(broken, fmt.Sprintf("%s: %v", n, unwrap(err)))
			}
			continue
		}
		if mx, err := readUJ(filepath.Join(dir, "max_energy_range_uj")); err == nil {
			z.MaxRangeUJ = mx
		}
		zones = append(zones, z)
	}
	sort.Slice(zones, func(i, j int) bool { return zones[i].Channel() < zones[j].Channel() })
	if len(zones) > 0 {
		return zones, nil
	}
	switch {
	case len(denied) > 0:
		return nil, fmt.Errorf("the RAPL counters under %s are readable by root only (energy_uj is mode 0400 since Linux 5.10): run as root, or grant read access to %s/*/energy_uj; CPU and DRAM energy not read", root, root)
	case len(broken) > 0:
		return nil, fmt.Errorf("the RAPL counters under %s cannot be read (%s): CPU and DRAM energy not read", root, strings.Join(broken, "; "))
	}
	return nil, fmt.Errorf("no RAPL zone under %s (no intel-rapl:N; a virtual machine, or a CPU without RAPL): CPU and DRAM energy not read", root)
}

// Open returns a sensor per zone found under root, or Find's one-line reason.
func Open(root string) ([]sensor.Sensor, error) {
	zones, err := Find(root)
	if err != nil {
		return nil, err
	}
	out := make([]sensor.Sensor, len(zones))
	for i, z := range zones {
		out[i] = &Sensor{Zone: z}
	}
	return out, nil
}

// Sensor is one zone's counter, unwrapped.
type Sensor struct {
	Zone Zone
	c    Counter
}

// Counter unwraps a RAPL energy_uj count that wraps at MaxRangeUJ.
type Counter struct {
	MaxRangeUJ uint64
	have       bool
	last       uint64  // the previous raw reading
	acc        float64 // unwrapped µJ: the first raw reading plus every increase since
}

// Advance takes the next raw reading and returns the unwrapped count in joules: across a
// wrap (a reading below the previous one) the rest of the range up to MaxRangeUJ, then
// the reading.
func (c *Counter) Advance(v uint64) float64 {
	switch {
	case !c.have:
		c.have, c.acc = true, float64(v)
	case v >= c.last:
		c.acc += float64(v - c.last)
	case c.MaxRangeUJ > c.last:
		c.acc += float64(c.MaxRangeUJ-c.last) + float64(v)
	default:
		// No range known (or a bad one): count from 0 again, losing at most what went
		// unread before the wrap.
		c.acc += float64(v)
	}
	c.last = v
	return c.acc / 1e6
}

var (
	_ sensor.Sensor       = (*Sensor)(nil)
	_ sensor.PeriodHinter = (*Sensor)(nil)
	_ sensor.Paced        = (*Sensor)(nil)
)

// Channel implements sensor.Sensor.
func (s *Sensor) Channel() trace.Channel {
	what := What(s.Zone.Kind)
	return ChannelOf(s.Zone.Channel(), what, "powercap "+filepath.Base(s.Zone.Dir)+"/energy_uj")
}

// ChannelOf describes a RAPL channel (the twin's too).
func ChannelOf(name, what, source string) trace.Channel {
	return trace.Channel{GPU: trace.HostGPU, Name: name, Quantity: trace.QEnergy, Unit: "J",
		Description: "RAPL: " + what + ", unwrapped at max_energy_range_uj, updated about every 1 ms",
		Source:      source, Cumulative: true}
}

// What says what a domain kind measures.
func What(kind string) string {
	return map[string]string{
		Package: "the CPU package's energy (cores, caches, uncore)",
		DRAM:    "the DRAM energy of the package's memory channels",
		Psys:    "the platform's energy (psys: the SoC and what the platform reports)",
	}[kind]
}

// PollInterval is how often gpuwatt reads a RAPL counter: each edge of a region is then
// bracketed within ~10 ms of the domain's power, for ~5 µs of CPU a read.
const PollInterval = 10 * time.Millisecond

// PollInterval implements sensor.Paced.
func (s *Sensor) PollInterval() time.Duration { return PollInterval }

// RangeUJ is where the zone's energy_uj wraps (0: not known): a reading of another process
// is unwrapped against a recording with it.
func (s *Sensor) RangeUJ() uint64 { return s.Zone.MaxRangeUJ }

// PeriodHint implements sensor.PeriodHinter.
func (s *Sensor) PeriodHint() time.Duration { return UpdatePeriod }

// Read implements sensor.Sensor: the unwrapped counter in joules.
func (s *Sensor) Read(dst []sensor.Reading) ([]sensor.Reading, error) {
	v, err := readUJ(filepath.Join(s.Zone.Dir, "energy_uj"))
	if err != nil {
		return dst, fmt.Errorf("rapl %s: %w", s.Zone.Channel(), err)
	}
	s.c.MaxRangeUJ = s.Zone.MaxRangeUJ
	return append(dst, sensor.Reading{Value: s.c.Advance(v)}), nil
}

// readSmall reads a small sysfs file (at most 256 bytes) trimmed.
func readSmall(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func readUJ(path string) (uint64, error) {
	s, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a count of microjoules", path, s)
	}
	return v, nil
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
