package serve

import (
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
)

// TestCPUEnergyMetric: on a twin in a two-socket host, gpuwatt_cpu_energy_joules_total gives
// each package's and DRAM's energy since serve started, within a poll of the truth, with a
// Xeon's counter range and with one that wraps every ~8 s at the packages' 60 W (500 J:
// the metric keeps growing across 2-3 wraps); a twin without a host serves none and says why.
func TestCPUEnergyMetric(t *testing.T) {
	for _, rangeUJ := range []uint64{262143328850, 500e6} {
		t.Run(strconv.FormatUint(rangeUJ, 10), func(t *testing.T) { cpuEnergyMetric(t, rangeUJ) })
	}
	s2, _, _ := virtualServer(t, simConfig(t, "h200", 1), Options{})
	if !strings.Contains(s2.HostUnavailable(), "models no host RAPL counters") {
		t.Errorf("without a host: %q", s2.HostUnavailable())
	}
}

func cpuEnergyMetric(t *testing.T, rangeUJ uint64) {
	cfg := simConfig(t, "h200", 1)
	cfg.Host = &sim.Host{Sockets: 2, PackageIdle: 60, PackageBusy: 90, DRAM: 8, MaxRangeUJ: rangeUJ, EnergyUnitUJ: 61.035}
	s, v, sys := virtualServer(t, cfg, Options{})
	if s.HostUnavailable() != "" {
		t.Fatal(s.HostUnavailable())
	}
	runTo(s, v, 20*time.Second)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	got := map[string]float64{}
	for _, l := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(l, "gpuwatt_cpu_energy_joules_total{") {
			continue
		}
		i := strings.Index(l, `domain="`) + len(`domain="`)
		name := l[i : i+strings.IndexByte(l[i:], '"')]
		f := strings.Fields(l)
		got[name], _ = strconv.ParseFloat(f[len(f)-1], 64)
	}
	if len(got) != 4 {
		t.Fatalf("metrics %v:\n%s", got, body)
	}
	for name, e := range got {
		kind := strings.Split(name, ".")[1]
		// The first reading at 0 s, the last within a poll (1 s) of 20 s.
		lo := sys.TrueHostEnergy(kind, 0, 19*time.Second).Joules()
		hi := sys.TrueHostEnergy(kind, 0, 20*time.Second).Joules()
		if e < lo-1e-3 || e > hi+1e-3 {
			t.Errorf("%s: %.3f J, truth %.3f to %.3f J", name, e, lo, hi)
		}
		if kind == "package" && e < 2*float64(rangeUJ)/1e6 && rangeUJ < 1e9 {
			t.Errorf("%s: %.3f J: the test wants the counter to wrap at least twice", name, e)
		}
	}
}
