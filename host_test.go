package gpuwatt_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt"
	"github.com/gpuwatt/gpuwatt/sim"
)

// TestRegionsHostEnergy: on an H200 twin in a two-socket host, each region gets each CPU
// package's and DRAM's energy with the truth inside its interval, and the node's total
// (the GPU, the packages and the DRAM); without a host, none, and Result says why.
func TestRegionsHostEnergy(t *testing.T) {
	s, err := sim.New(sim.Options{Preset: "h200", Host: &sim.Host{Sockets: 2, PackageIdleW: 55, PackageBusyW: 100, DRAMW: 7}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := gpuwatt.Start(context.Background(), gpuwatt.Options{Sim: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{300 * time.Millisecond, 2 * time.Second} {
		r := rec.Begin("step")
		s.Launch(d, 500)
		s.Synchronize()
		r.End()
		s.Sleep(time.Second)
	}
	res, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.HostUnavailable != "" || len(res.Regions) != 2 {
		t.Fatalf("host unavailable %q, %d regions", res.HostUnavailable, len(res.Regions))
	}
	for _, g := range res.Regions {
		if len(g.Host) != 4 || g.Node == nil {
			t.Fatalf("%s #%d: host %+v node %v", g.Name, g.Instance, g.Host, g.Node)
		}
		sum := g.GPUs[0].Joules
		for _, h := range g.Host {
			truth := s.TrueHostEnergy(h.Kind, g.Start, g.End)
			if !h.OK || truth < h.Low || truth > h.High || !h.Partial {
				t.Errorf("%s #%d %s: %.3f J [%.3f, %.3f], truth %.3f J", g.Name, g.Instance, h.Domain, h.Joules, h.Low, h.High, truth)
			}
			sum += h.Joules
		}
		if d := g.Node.Joules - sum; d > 1e-6*sum || d < -1e-6*sum {
			t.Errorf("node %.3f J, want %.3f J", g.Node.Joules, sum)
		}
	}

	s2, _ := sim.New(sim.Options{Preset: "h200"})
	rec2, err := gpuwatt.Start(context.Background(), gpuwatt.Options{Sim: s2})
	if err != nil {
		t.Fatal(err)
	}
	r := rec2.Begin("w")
	s2.Launch(time.Second, 300)
	s2.Synchronize()
	r.End()
	res2, _ := rec2.Stop()
	if res2.HostUnavailable == "" || len(res2.Regions[0].Host) != 0 || res2.Regions[0].Node != nil {
		t.Errorf("without a host: %q, %+v", res2.HostUnavailable, res2.Regions[0])
	}
}
