package record

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu/sim"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/testkit/simtest"
	"github.com/gpuwatt/gpuwatt/internal/trace"
	"github.com/gpuwatt/gpuwatt/internal/units"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// session is a recorder served over pipes, as the Python package talks to it.
type session struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func serve(t *testing.T, s simtest.Sim, o Options) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	if o.AxisOf == nil {
		o.AxisOf = func(sec float64) time.Duration { return time.Duration(sec * float64(time.Second)) }
	}
	done := make(chan error, 1)
	go func() {
		err := o.Serve(context.Background(), device.Env{System: s.Sys, Clock: s.Clock}, inR, outW)
		outW.Close()
		done <- err
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<24)
	return &session{t: t, in: inW, out: sc, done: done}
}

func (s *session) read() Response {
	s.t.Helper()
	if !s.out.Scan() {
		s.t.Fatalf("no response: %v", s.out.Err())
	}
	var r Response
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil {
		s.t.Fatalf("response %q: %v", s.out.Text(), err)
	}
	if r.V != ProtocolVersion {
		s.t.Fatalf("response without version %d: %s", ProtocolVersion, s.out.Text())
	}
	return r
}

func (s *session) ask(line string) Response {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
	return s.read()
}

// onScale is the true energy as the figure's source sees it (the counter's gain for the
// counter and the calibrated ring; the channel's own gain and offset for an inversion):
// the relative interval leaves the board's gain error out, as it says.
func onScale(s simtest.Sim, g energy.GPUFigure, truth float64, d time.Duration) float64 {
	if g.Method == "counter" || g.Method == "calibrated_ring" {
		c, _ := s.Dev.Model(trace.ChEnergyTotal)
		return c.Gain * truth
	}
	m, _ := s.Dev.Model(g.Channel)
	gain := m.Gain
	if gain == 0 {
		gain = 1
	}
	return gain*truth + float64(m.Offset)*d.Seconds()
}

// TestWindowsHoldTruth: on the twin, windows of 0.1 to 1.5 s begun and ended through the
// protocol get figures whose 95 % intervals hold the true energy, both at once (end) and
// over the whole recording (close); close's figures are those `gpuwatt energy --region`
// and measure give the saved trace's marks (the same estimator on the same readings).
func TestWindowsHoldTruth(t *testing.T) {
	t.Parallel()
	cfg := simtest.Preset(t, "h200")
	cfg.Host = &sim.Host{Sockets: 1, PackageIdle: 70, PackageBusy: 110, DRAM: 10, DRAMBusy: 6, MaxRangeUJ: 262143328850, EnergyUnitUJ: 61.035}
	s := simtest.OpenConfig(t, cfg)
	type win struct {
		name     string
		from, to float64
		watts    float64
		work     bool // a load runs over the window
	}
	wins := []win{
		{"warmup", 1.0, 2.5, 450, true},
		{"step", 3.0, 3.1, 640, true},
		{"step", 3.3, 3.5, 600, true},
		{"step", 3.7, 4.2, 520, true},
		{"idle", 5.0, 6.0, 0, false},
		{"step", 6.5, 8.0, 610, true},
	}
	for _, w := range wins {
		if w.work {
			s.Dev.AddLoad(sec(w.from), sec(w.to), units.Power(w.watts))
		}
	}
	dir := t.TempDir()
	ss := serve(t, s, Options{Out: dir})
	hello := ss.read()
	if hello.Op != "hello" || !hello.OK || hello.Hello == nil || !hello.Hello.Simulated || len(hello.Hello.GPUs) != 1 || hello.Hello.HostUnavailable != "" {
		t.Fatalf("hello %+v", hello)
	}
	var live []Window
	for _, w := range wins {
		b := ss.ask(fmt.Sprintf(`{"v":1,"op":"begin","name":%q,"t":%g,"id":"b"}`, w.name, w.from))
		if !b.OK || b.Window == nil || string(b.ID) != `"b"` {
			t.Fatalf("begin: %+v", b)
		}
		e := ss.ask(fmt.Sprintf(`{"v":1,"op":"end","name":%q,"t":%g}`, w.name, w.to))
		if !e.OK || e.Window == nil || len(e.Window.GPUs) != 1 || e.Window.Final || !e.Window.Simulated {
			t.Fatalf("end: %+v", e)
		}
		live = append(live, *e.Window)
	}
	c := ss.ask(`{"v":1,"op":"close"}`)
	if !c.OK || len(c.Windows) != len(wins) || c.Saved != dir {
		t.Fatalf("close: %+v", c)
	}
	if err := <-ss.done; err != nil {
		t.Fatal(err)
	}
	check := func(kind string, w Window, spec win) {
		g := w.GPUs[0]
		truth := s.Dev.TrueEnergy(sec(spec.from), sec(spec.to)).Joules()
		scaled := onScale(s, g, truth, sec(spec.to-spec.from))
		t.Logf("%s %s #%d %.2f-%.2f s: %.3f J [%.3f, %.3f] abs [%.3f, %.3f] (%s), truth %.3f J (%.3f on the board's scale)",
			kind, w.Name, w.Instance, w.StartS, w.EndS, g.EnergyJ, g.LowJ, g.HighJ, g.AbsoluteLowJ, g.AbsoluteHighJ, g.Method, truth, scaled)
		if g.NoFigure || scaled < g.LowJ || scaled > g.HighJ {
			t.Errorf("%s %s #%d: the truth on the board's scale %.3f J lies outside [%.3f, %.3f]", kind, w.Name, w.Instance, scaled, g.LowJ, g.HighJ)
		}
		if truth < g.AbsoluteLowJ || truth > g.AbsoluteHighJ {
			t.Errorf("%s %s #%d: the truth %.3f J lies outside the absolute interval [%.3f, %.3f]", kind, w.Name, w.Instance, truth, g.AbsoluteLowJ, g.AbsoluteHighJ)
		}
		// The host's RAPL domains, and the node: the GPU, the package and its DRAM.
		if len(w.Host) != 2 || w.HostUnavailable != "" || w.Node == nil {
			t.Fatalf("%s %s: host %+v (%q), node %v", kind, w.Name, w.Host, w.HostUnavailable, w.Node)
		}
		sum := g.EnergyJ
		for _, h := range w.Host {
			ht := s.Sys.TrueHostEnergy(h.Kind, sec(spec.from), sec(spec.to)).Joules()
			t.Logf("  %s %.3f J [%.3f, %.3f], truth %.3f J", h.Name, h.EnergyJ, h.LowJ, h.HighJ, ht)
			if ht < h.LowJ || ht > h.HighJ {
				t.Errorf("%s %s #%d %s: the truth %.3f J lies outside [%.3f, %.3f]", kind, w.Name, w.Instance, h.Name, ht, h.LowJ, h.HighJ)
			}
			sum += h.EnergyJ
		}
		if !near(w.Node.EnergyJ, sum) || !w.Node.Partial {
			t.Errorf("%s %s: node %+v, want the sum %.3f J, partial", kind, w.Name, *w.Node, sum)
		}
	}
	for i, spec := range wins {
		check("live", live[i], spec)
		check("final", c.Windows[i], spec)
		if !c.Windows[i].Final || c.Windows[i].ID != live[i].ID {
			t.Errorf("close's window %d: %+v", i, c.Windows[i])
		}
	}

	// The saved trace, as `gpuwatt energy --region` and measure read it: the same figures.
	tr, err := trace.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The host's counters are saved on GPU -1 and read back (CSV and JSON).
	if hc := energy.HostChannels(tr); len(hc) != 2 {
		t.Errorf("saved host channels: %+v", hc)
	} else if f := energy.HostRegion(tr, hc[1].Name, sec(c.Windows[0].StartS), sec(c.Windows[0].EndS)); !near(f.EnergyJ, c.Windows[0].Host[1].EnergyJ) {
		t.Errorf("saved %s: %.6f J, close gave %.6f J", hc[1].Name, f.EnergyJ, c.Windows[0].Host[1].EnergyJ)
	}
	spans, ws := marks.Pair(marks.FromTrace(tr.Meta.Marks))
	if len(ws) != 0 || len(spans) != len(wins) {
		t.Fatalf("saved marks: %d spans, %v", len(spans), ws)
	}
	regs := energy.Marked(tr, spans, energy.MarkedOptions{Cache: &energy.Cache{}, SyncCheck: true})
	for i, r := range regs {
		a, b := r.GPUs[0], c.Windows[i].GPUs[0]
		// The CSV keeps each reading to 9 significant digits: the figures agree to 1e-6.
		if !near(a.EnergyJ, b.EnergyJ) || !near(a.LowJ, b.LowJ) || !near(a.HighJ, b.HighJ) || a.Method != b.Method {
			t.Errorf("window %d: close gave %.6f J [%.6f, %.6f], the saved trace gives %.6f J [%.6f, %.6f]", i, b.EnergyJ, b.LowJ, b.HighJ, a.EnergyJ, a.LowJ, a.HighJ)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Abs(b) }

// TestBadRequests: every bad request gets one response naming what was wrong (the
// recording goes on), and the end of input ends the recording cleanly.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	s := simtest.Open(t, "h100")
	ss := serve(t, s, Options{})
	if h := ss.read(); !strings.Contains(h.Hello.HostUnavailable, "models no host RAPL counters") {
		t.Errorf("a twin without a host: hello says %q", h.Hello.HostUnavailable)
	}
	cases := []struct{ line, code, says string }{
		{`not json`, "bad_request", "not a JSON object"},
		{`{"v":2,"op":"begin","name":"a"}`, "version", "protocol version 2"},
		{`{"op":"begin","name":"a"}`, "version", "protocol version 0"},
		{`{"v":1,"op":"launch"}`, "bad_request", `unknown op "launch"`},
		{`{"v":1,"op":"begin","name":"two words"}`, "bad_request", "two words"},
		{`{"v":1,"op":"end","name":"nothing"}`, "unknown_window", `no open window`},
		{`{"v":1,"op":"result","window":9}`, "unknown_window", "no window 9"},
		{`{"v":1,"op":"begin","name":"a","t":-5}`, "bad_request", "before the recording began"},
		{`{"v":1,"op":"` + strings.Repeat("x", MaxLine) + `"}`, "bad_request", "longer than"},
	}
	for _, c := range cases {
		r := ss.ask(c.line)
		if r.OK || r.Code != c.code || !strings.Contains(r.Error, c.says) {
			t.Errorf("%.40s: got ok %v code %q error %q; want code %q saying %q", c.line, r.OK, r.Code, r.Error, c.code, c.says)
		}
	}
	// Still recording: a window ends with a figure, and one ended without waiting has
	// its figure on request.
	if r := ss.ask(`{"v":1,"op":"begin","name":"a","t":1}`); !r.OK {
		t.Fatal(r.Error)
	}
	r := ss.ask(`{"v":1,"op":"end","name":"a","t":2,"no_wait":true}`)
	if !r.OK || r.Window.ID != 1 || r.Window.GPUs != nil {
		t.Fatalf("end without waiting: %+v", r)
	}
	if r := ss.ask(`{"v":1,"op":"end","window":1,"t":2.5}`); r.OK || r.Code != "unknown_window" {
		t.Errorf("a second end of window 1: %+v", r)
	}
	r = ss.ask(`{"v":1,"op":"result","window":1}`)
	if !r.OK || len(r.Window.GPUs) != 1 || r.Window.GPUs[0].NoFigure || r.Window.DurationS != 1 {
		t.Fatalf("result: %+v", r)
	}
	ss.in.Close()
	if err := <-ss.done; err != nil {
		t.Errorf("end of input: %v", err)
	}
}
