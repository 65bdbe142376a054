package raplsensor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// tree writes a powercap tree: zone dir -> files.
func tree(t *testing.T, zones map[string]map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for z, files := range zones {
		d := filepath.Join(root, z)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, v := range files {
			if err := os.WriteFile(filepath.Join(d, f), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// A two-socket server: packages, their DRAM, a core sub-zone (left out), an mmio duplicate
// (left out) and psys.
func server(t *testing.T) string {
	return tree(t, map[string]map[string]string{
		"intel-rapl:0":      {"name": "package-0", "energy_uj": "1000", "max_energy_range_uj": "262143328850"},
		"intel-rapl:0:0":    {"name": "core", "energy_uj": "5", "max_energy_range_uj": "262143328850"},
		"intel-rapl:0:1":    {"name": "dram", "energy_uj": "70", "max_energy_range_uj": "65712999613"},
		"intel-rapl:1":      {"name": "package-1", "energy_uj": "2000", "max_energy_range_uj": "262143328850"},
		"intel-rapl:1:0":    {"name": "dram", "energy_uj": "80", "max_energy_range_uj": "65712999613"},
		"intel-rapl:2":      {"name": "psys", "energy_uj": "9", "max_energy_range_uj": "262143328850"},
		"intel-rapl-mmio:0": {"name": "package-0", "energy_uj": "1000"},
		"intel-rapl":        {"enabled": "1"},
	})
}

func TestFindZones(t *testing.T) {
	zs, err := Find(server(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, z := range zs {
		got = append(got, z.Channel())
	}
	if want := "cpu.dram.0 cpu.dram.1 cpu.package.0 cpu.package.1 cpu.psys"; strings.Join(got, " ") != want {
		t.Errorf("zones %q, want %q", strings.Join(got, " "), want)
	}
	s, _ := Open(server(t))
	ch := s[0].Channel()
	if ch.GPU != trace.HostGPU || !ch.Cumulative || ch.Quantity != trace.QEnergy || ch.Unit != "J" {
		t.Errorf("channel %+v", ch)
	}
}

// TestWhyUnreadable: where nothing can be read, one line says why.
func TestWhyUnreadable(t *testing.T) {
	cases := []struct {
		name, says string
		root       func(t *testing.T) string
	}{
		{"no tree", "no powercap tree", func(t *testing.T) string { return filepath.Join(t.TempDir(), "absent") }},
		{"no zones", "no RAPL zone", func(t *testing.T) string { return tree(t, map[string]map[string]string{"dtpm": {"name": "x"}}) }},
		{"broken", "cannot be read", func(t *testing.T) string {
			return tree(t, map[string]map[string]string{"intel-rapl:0": {"name": "package-0", "energy_uj": "lots"}})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.root(t))
			if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "CPU and DRAM energy not read") {
				t.Errorf("error %v, want one line saying %q", err, c.says)
			}
		})
	}
}

// TestWrap: energy_uj wrapping at max_energy_range_uj is unwrapped into a counter that only
// grows by what was used.
func TestWrap(t *testing.T) {
	root := tree(t, map[string]map[string]string{"intel-rapl:0": {"name": "package-0", "energy_uj": "900", "max_energy_range_uj": "1000"}})
	ss, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	file := filepath.Join(root, "intel-rapl:0", "energy_uj")
	var got []float64
	for _, raw := range []string{"900", "950", "20", "500", "990", "10"} {
		os.WriteFile(file, []byte(raw+"\n"), 0o644)
		rs, err := s.Read(nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rs[0].Value*1e6)
	}
	// 900, +50, +50+20 (wrap), +480, +490, +10+10 (wrap)
	want := []float64{900, 950, 1020, 1500, 1990, 2010}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("unwrapped µJ %v, want %v", got, want)
		}
	}
	os.WriteFile(file, []byte("x\n"), 0o644)
	if _, err := s.Read(nil); err == nil {
		t.Error("a bad energy_uj read without error")
	}
}

var _ sensor.Sensor = (*Sensor)(nil)
