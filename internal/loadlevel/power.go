package loadlevel

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/ptd"
)

// Window describes a recording period to a Meter.
type Window struct {
	Length      time.Duration
	BusySeconds float64 // user-seconds of transaction work inside the window (virtual clock)
	Users       int
}

// Meter measures the average power of each recording period.
type Meter interface {
	Name() string
	// Begin starts a recording period labelled label (e.g. "_004_lvl_rc_").
	Begin(label string) error
	// End ends it and returns its average power in watts.
	End(w Window) (float64, error)
}

// RAPL reads CPU package energy from the powercap tree (root is normally
// /sys/class/powercap): the sum over the top-level intel-rapl:N zones (packages), with
// counter wrap-around handled through max_energy_range_uj.
type RAPL struct {
	clk   clock.Clock
	zones []string
	start []uint64
	t0    time.Duration
}

// OpenRAPL finds the package zones under root; it fails when none is readable.
func OpenRAPL(root string, clk clock.Clock) (*RAPL, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("rapl: %w", err)
	}
	r := &RAPL{clk: clk}
	for _, e := range ents {
		n := e.Name()
		// top-level zones are intel-rapl:N (sub-zones are intel-rapl:N:M)
		if !strings.HasPrefix(n, "intel-rapl:") || strings.Count(n, ":") != 1 {
			continue
		}
		dir := filepath.Join(root, n)
		if _, err := readUint(filepath.Join(dir, "energy_uj")); err != nil {
			continue
		}
		r.zones = append(r.zones, dir)
	}
	if len(r.zones) == 0 {
		return nil, fmt.Errorf("rapl: no readable package zone under %s", root)
	}
	return r, nil
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// Name implements Meter.
func (r *RAPL) Name() string { return "rapl (CPU packages)" }

// Kind implements MeterKind.
func (r *RAPL) Kind() string { return KindHost }

// Begin implements Meter.
func (r *RAPL) Begin(string) error {
	r.start = r.start[:0]
	for _, z := range r.zones {
		v, err := readUint(filepath.Join(z, "energy_uj"))
		if err != nil {
			return err
		}
		r.start = append(r.start, v)
	}
	r.t0 = r.clk.Now()
	return nil
}

// End implements Meter.
func (r *RAPL) End(Window) (float64, error) {
	dt := (r.clk.Now() - r.t0).Seconds()
	if len(r.start) != len(r.zones) || dt <= 0 {
		return 0, fmt.Errorf("rapl: End without Begin")
	}
	var uj float64
	for i, z := range r.zones {
		v, err := readUint(filepath.Join(z, "energy_uj"))
		if err != nil {
			return 0, err
		}
		d := v - r.start[i]
		if v < r.start[i] {
			mx, err := readUint(filepath.Join(z, "max_energy_range_uj"))
			if err != nil {
				return 0, fmt.Errorf("rapl: counter wrapped and no max_energy_range_uj: %w", err)
			}
			d = mx - r.start[i] + v
		}
		uj += float64(d)
	}
	return uj / 1e6 / dt, nil
}

// PTDMeter measures through a PTDaemon: per recording period Go, Mark with the period's
// label, Stop, then Watts (the average of the samples between Go and Stop).
type PTDMeter struct {
	C        *ptd.Client
	Interval time.Duration // sampling period asked with Go; 0 = the analyzer's default
}

// Name implements Meter.
func (p *PTDMeter) Name() string { return "ptd (external analyzer)" }

// Kind implements MeterKind.
func (p *PTDMeter) Kind() string { return KindWall }

// Begin implements Meter.
func (p *PTDMeter) Begin(label string) error {
	if err := p.C.Go(p.Interval, ""); err != nil {
		return err
	}
	return p.C.Mark(label)
}

// End implements Meter.
func (p *PTDMeter) End(Window) (float64, error) {
	if err := p.C.Stop(); err != nil {
		return 0, err
	}
	r, err := p.C.Watts()
	if err != nil {
		return 0, err
	}
	return r.Avg, nil
}
