// Package record is the recorder behind gpuwatt's Python package (`gpuwatt record`, python/
// and docs/python.md): it records the chosen GPUs as measure does and serves a small line
// protocol on a pair of streams (the recorder's stdin and stdout): a program begins and
// ends windows and gets each window's energy, from internal/marks's estimator (the figure
// measure gives a region marked over the same span), as soon as the window ends.
//
// The protocol is JSON lines, one request and one response each, every object carrying
// the protocol version "v" (ProtocolVersion). The recorder speaks first (a "hello" line
// once every channel has been read); then, per request line, exactly one response line in
// order. Requests: begin, end, result, close (see Request). End of input (the program
// gone) ends the recording as close does, without a reply.
package record

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/clock"
	"github.com/gpuwatt/gpuwatt/internal/device"
	"github.com/gpuwatt/gpuwatt/internal/energy"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/marks"
	"github.com/gpuwatt/gpuwatt/internal/measure"
	"github.com/gpuwatt/gpuwatt/internal/sensor"
	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// ProtocolVersion is the version of the line protocol; a request of another version is
// refused (code "version").
const ProtocolVersion = 1

// MaxLine bounds a request line; a longer one is refused and the rest of it skipped.
const MaxLine = 64 << 10

// Options of a recording.
type Options struct {
	GPUs []int          // indices of the GPUs to record (empty: all)
	Poll sensor.Options // as measure's --poll
	// Margin is recorded before the hello line (default 300 ms): the estimator needs
	// readings before a window's begin.
	Margin time.Duration
	// MaxGuard caps how long an end waits for readings after the window's end (default
	// 1 s): 1.5 update periods of the slowest energy or power channel, as measure's tail.
	MaxGuard time.Duration
	// Out, if set, is where the recording is saved on close (trace.csv and trace.json,
	// the windows as "begin NAME"/"end NAME" marks: `gpuwatt energy --region NAME#K` gives
	// the final figures again).
	Out string
	// HostRoot is the powercap tree for the host's RAPL counters (default
	// /sys/class/powercap); the sim device gives its own where its config models a host.
	HostRoot string
	// NoHost records no host counters.
	NoHost bool
	// AxisOf maps a request's T onto the recording's axis (default marks.Origin: the
	// recorder's real clock against CLOCK_MONOTONIC). On a virtual clock the recorder
	// advances the clock to a request's time (tests script windows on the twin so).
	AxisOf      func(sec float64) time.Duration
	Version     string
	Host        string
	CommandLine []string
}

// Request is one line from the program.
type Request struct {
	V  int             `json:"v"`
	ID json.RawMessage `json:"id,omitempty"` // echoed in the response
	// Op is "begin" (Name), "end" (Name: the innermost open window of that name, or
	// Window), "result" (Window: its figure, waiting for it), or "close".
	Op     string `json:"op"`
	Name   string `json:"name,omitempty"`
	Window int    `json:"window,omitempty"`
	// T is the edge's time as CLOCK_MONOTONIC seconds (Python's time.monotonic()),
	// taken by the program after its sync; absent, the recorder stamps the request's
	// arrival (the pipe's delay then falls inside the window).
	T *float64 `json:"t,omitempty"`
	// NoWait, on end: reply at once with the window's id; its figure comes with a later
	// result request.
	NoWait bool `json:"no_wait,omitempty"`
}

// Response is one line to the program.
type Response struct {
	V     int             `json:"v"`
	ID    json.RawMessage `json:"id,omitempty"`
	Op    string          `json:"op"`
	OK    bool            `json:"ok"`
	Error string          `json:"error,omitempty"`
	// Code classifies an error: "bad_request", "version", "unknown_window", "failed".
	Code string `json:"code,omitempty"`
	// Hello (op "hello") describes the recording.
	Hello *Hello `json:"hello,omitempty"`
	// Window is begin's new window (no figures), end's or result's window with figures.
	Window *Window `json:"window,omitempty"`
	// Windows (close) are every ended window with its final figure, computed over the
	// whole recording as measure computes its regions; Saved the directory it went to.
	Windows []Window `json:"windows,omitempty"`
	Saved   string   `json:"saved,omitempty"`
	// Warnings (close) about the recording as a whole.
	Warnings []status.Warning `json:"warnings,omitempty"`
}

// Hello is the recorder's first line.
type Hello struct {
	Protocol  int         `json:"protocol"`
	Gpuwatt   string      `json:"gpuwatt"`
	PID       int         `json:"pid"`
	Device    string      `json:"device"`
	Simulated bool        `json:"simulated"`
	GPUs      []trace.GPU `json:"gpus"`
	Channels  []string    `json:"channels"`
	// HostUnavailable says why the host's RAPL counters are not recorded ("" when they are).
	HostUnavailable string           `json:"host_unavailable,omitempty"`
	Warnings        []status.Warning `json:"warnings"`
}

// Window is a window and, once it ended, its figures.
type Window struct {
	ID       int     `json:"id"` // from 1, in the order windows began
	Name     string  `json:"name"`
	Instance int     `json:"instance"` // counts the windows of one name from 1
	Depth    int     `json:"depth"`    // windows open around it when it began
	StartS   float64 `json:"start_s"`  // on the recording's axis (trace.csv's t_s)
	EndS     float64 `json:"end_s,omitempty"`
	// DurationS is EndS − StartS.
	DurationS float64 `json:"duration_s,omitempty"`
	Ended     bool    `json:"ended"`
	// Simulated: every figure is the sim device's, not a measurement.
	Simulated bool `json:"simulated"`
	// Final: computed over the whole recording (close), as measure computes its regions;
	// otherwise over the recording up to the moment the figure was asked for: the same
	// estimator, which fits a calibration over what it is given, so a figure from the
	// calibrated ring may move slightly (well within its interval) once the recording is
	// whole.
	Final bool `json:"final"`
	// GPUs holds the window's energy on each GPU (energy.GPUFigure: energy_j with its
	// 95 % interval energy_low_j/energy_high_j and absolute_low_j/absolute_high_j,
	// method, channel, warnings).
	GPUs []energy.GPUFigure `json:"gpus,omitempty"`
	// Host holds the energy of each of the host's RAPL domains (CPU packages, DRAM, psys);
	// HostUnavailable says in one line why there is none (no powercap: a virtual machine;
	// counters readable by root only).
	Host            []energy.HostFigure `json:"host,omitempty"`
	HostUnavailable string              `json:"host_unavailable,omitempty"`
	// Node is the GPUs, CPU packages and DRAM together, only where every part was read.
	Node     *energy.Interval `json:"node,omitempty"`
	Warnings []status.Warning `json:"warnings,omitempty"`

	start, end time.Duration
	parent     int // the index of the innermost window open at its begin, -1 none
}

// recorder is one recording being served.
type recorder struct {
	o      Options
	env    device.Env
	devs   []gpu.Device
	smp    *sensor.Sampler
	toAxis func(sec float64) time.Duration
	guard  time.Duration
	wins   []*Window
	open   []int // indices into wins, in the order they began
	count  map[string]int
	warn   []status.Warning
	out    *json.Encoder
	// commanded: the devices were told a program started (CommandStarted).
	commanded bool
	hostWhy   string // why no host counters are recorded
}

// Serve records env's GPUs and serves the protocol on in and out until a close request,
// the end of in, or ctx (the recording is then saved to Options.Out, if set). The error
// is nil when the recording ended cleanly.
func (o Options) Serve(ctx context.Context, env device.Env, in io.Reader, out io.Writer) error {
	if o.Margin == 0 {
		o.Margin = 300 * time.Millisecond
	}
	if o.MaxGuard == 0 {
		o.MaxGuard = time.Second
	}
	devs, err := measure.SelectDevices(env.System, o.GPUs)
	if err != nil {
		return err
	}
	var sensors []sensor.Sensor
	for _, d := range devs {
		sensors = append(sensors, d.Sensors()...)
	}
	r := &recorder{o: o, env: env, devs: devs, count: map[string]int{}, out: json.NewEncoder(out)}
	if o.NoHost {
		r.hostWhy = "not asked for"
	} else if hs, err := device.HostSensors(env.System, o.HostRoot); err != nil {
		r.hostWhy = err.Error()
	} else {
		sensors = append(sensors, hs...)
	}
	r.smp = sensor.New(env.Clock, sensors, o.Poll)
	if err := r.smp.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	r.toAxis = o.AxisOf
	if r.toAxis == nil {
		r.toAxis = marks.Origin(env.Clock)
	}
	if !clock.IsVirtual(env.Clock) {
		// The sim on the wall clock draws a program's load while it is recorded.
		notify(devs, func(ob gpu.CommandObserver) { ob.CommandStarted(env.Clock.Now()) })
		r.commanded = true
	}
	_ = env.Clock.Sleep(ctx, o.Margin)
	r.smp.Poke()
	r.guard = r.readingGuard()
	if err := r.send(Response{Op: "hello", OK: true, Hello: r.hello()}); err != nil {
		r.finish()
		return err
	}

	lines := make(chan lineOrErr)
	stop := make(chan struct{})
	defer close(stop)
	go readLines(in, lines, stop)
	for {
		var l lineOrErr
		select {
		case <-ctx.Done():
			_, err := r.finish()
			return err
		case l = <-lines:
		}
		if l.err != nil {
			_, err := r.finish() // the program is gone (EOF) or its pipe broke
			if errors.Is(l.err, io.EOF) {
				return err
			}
			return errors.Join(l.err, err)
		}
		if l.tooLong {
			if err := r.send(Response{Op: "", Code: "bad_request", Error: fmt.Sprintf("a request line longer than %d bytes; ignored", MaxLine)}); err != nil {
				r.finish()
				return err
			}
			continue
		}
		resp, done := r.handle(ctx, l.line)
		if err := r.send(resp); err != nil {
			r.finish()
			return err
		}
		if done {
			return nil
		}
	}
}

type lineOrErr struct {
	line    []byte
	tooLong bool
	err     error
}

// readLines reads request lines (each at most MaxLine bytes) until an error.
func readLines(in io.Reader, lines chan<- lineOrErr, stop <-chan struct{}) {
	br := bufio.NewReaderSize(in, 4096)
	for {
		var buf []byte
		tooLong := false
		var err error
		for {
			var part []byte
			part, err = br.ReadSlice('\n')
			if len(buf)+len(part) > MaxLine {
				tooLong = true
			} else {
				buf = append(buf, part...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && (len(buf) == 0 || err != io.EOF) {
			select {
			case lines <- lineOrErr{err: err}:
			case <-stop:
			}
			return
		}
		select {
		case lines <- lineOrErr{line: buf, tooLong: tooLong}:
		case <-stop:
			return
		}
		if err != nil { // a last line without a newline, then EOF
			select {
			case lines <- lineOrErr{err: err}:
			case <-stop:
			}
			return
		}
	}
}

func (r *recorder) send(resp Response) error {
	resp.V = ProtocolVersion
	return r.out.Encode(resp)
}

// handle answers one request; done says the recording was closed.
func (r *recorder) handle(ctx context.Context, line []byte) (Response, bool) {
	var q Request
	bad := func(op, code, format string, args ...any) Response {
		return Response{ID: q.ID, Op: op, Code: code, Error: fmt.Sprintf(format, args...)}
	}
	if err := json.Unmarshal(line, &q); err != nil {
		return bad("", "bad_request", "not a JSON object: %v", err), false
	}
	if q.V != ProtocolVersion {
		return bad(q.Op, "version", "protocol version %d: this gpuwatt speaks version %d (\"v\": %d)", q.V, ProtocolVersion, ProtocolVersion), false
	}
	switch q.Op {
	case "begin":
		if err := marks.ValidName(q.Name); err != nil {
			return bad(q.Op, "bad_request", "begin %q: %v", q.Name, err), false
		}
		t, err := r.at(ctx, q)
		if err != nil {
			return bad(q.Op, "bad_request", "begin %s: %v", q.Name, err), false
		}
		w := r.begin(q.Name, t)
		return Response{ID: q.ID, Op: q.Op, OK: true, Window: w}, false
	case "end":
		i, err := r.find(q)
		if err != nil {
			return bad(q.Op, "unknown_window", "%v", err), false
		}
		t, err := r.at(ctx, q)
		if err != nil {
			return bad(q.Op, "bad_request", "end %s: %v", r.wins[i].Name, err), false
		}
		if t < r.wins[i].start {
			return bad(q.Op, "bad_request", "end %s at %.6f s: before its begin at %.6f s", r.wins[i].Name, t.Seconds(), r.wins[i].start.Seconds()), false
		}
		r.end(i, t)
		if q.NoWait {
			w := *r.wins[i]
			return Response{ID: q.ID, Op: q.Op, OK: true, Window: &w}, false
		}
		w := r.figure(ctx, i)
		return Response{ID: q.ID, Op: q.Op, OK: true, Window: &w}, false
	case "result":
		if q.Window < 1 || q.Window > len(r.wins) {
			return bad(q.Op, "unknown_window", "result: no window %d (%d began)", q.Window, len(r.wins)), false
		}
		if !r.wins[q.Window-1].Ended {
			return bad(q.Op, "unknown_window", "result: window %d (%s) has not ended", q.Window, r.wins[q.Window-1].Name), false
		}
		w := r.figure(ctx, q.Window-1)
		return Response{ID: q.ID, Op: q.Op, OK: true, Window: &w}, false
	case "close":
		resp, err := r.finish()
		resp.ID, resp.Op = q.ID, q.Op
		if err != nil {
			resp.Code, resp.Error = "failed", err.Error()
		} else {
			resp.OK = true
		}
		return resp, true
	}
	return bad(q.Op, "bad_request", "unknown op %q: want begin, end, result or close", q.Op), false
}

// at is the request's time on the recording's axis: its CLOCK_MONOTONIC T where given and
// mappable, else now.
func (r *recorder) at(ctx context.Context, q Request) (time.Duration, error) {
	now := r.env.Clock.Now()
	if q.T == nil || r.toAxis == nil {
		return now, nil
	}
	t := r.toAxis(*q.T)
	if clock.IsVirtual(r.env.Clock) && t > now {
		_ = r.env.Clock.Sleep(ctx, t-now)
		now = r.env.Clock.Now()
	}
	switch {
	case t < 0:
		return 0, fmt.Errorf("t %.6f lies before the recording began (is it CLOCK_MONOTONIC seconds, as time.monotonic() gives?)", *q.T)
	case t > now+time.Second:
		return 0, fmt.Errorf("t %.6f lies %.3f s in the recorder's future (is it CLOCK_MONOTONIC seconds, as time.monotonic() gives?)", *q.T, (t - now).Seconds())
	}
	return min(t, now), nil
}

func (r *recorder) begin(name string, t time.Duration) *Window {
	r.count[name]++
	parent := -1
	if n := len(r.open); n > 0 {
		parent = r.open[n-1]
	}
	w := &Window{ID: len(r.wins) + 1, Name: name, Instance: r.count[name], Depth: len(r.open), StartS: t.Seconds(),
		Simulated: r.env.System.Simulated(), start: t, parent: parent}
	r.wins = append(r.wins, w)
	r.open = append(r.open, len(r.wins)-1)
	c := *w
	return &c
}

// find is the window an end request names: Window, else the innermost open one of Name.
func (r *recorder) find(q Request) (int, error) {
	if q.Window > 0 {
		i := slices.Index(r.open, q.Window-1)
		if i < 0 {
			return 0, fmt.Errorf("end: window %d is not open", q.Window)
		}
		return q.Window - 1, nil
	}
	for k := len(r.open) - 1; k >= 0; k-- {
		if r.wins[r.open[k]].Name == q.Name {
			return r.open[k], nil
		}
	}
	return 0, fmt.Errorf("end %q: no open window of that name", q.Name)
}

func (r *recorder) end(i int, t time.Duration) {
	w := r.wins[i]
	w.end, w.Ended, w.EndS, w.DurationS = t, true, t.Seconds(), (t - w.start).Seconds()
	r.open = slices.DeleteFunc(r.open, func(k int) bool { return k == i })
}

// readingGuard is how long after a window's end the recording must go on before its
// figure is computed: every energy and power channel has published an update after the
// end (1.5 update periods of the slowest, at most MaxGuard).
func (r *recorder) readingGuard() time.Duration {
	var g time.Duration
	for _, ch := range r.smp.Channels() {
		if (ch.Quantity == trace.QPower && !ch.Setting) || ch.Quantity == trace.QEnergy {
			g = max(g, r.smp.UpdatePeriod(ch.GPU, ch.Name)*3/2)
		}
	}
	return min(g, r.o.MaxGuard)
}

// figure gives window i its energy over the recording so far, once the recording has
// gone on for the guard past its end.
func (r *recorder) figure(ctx context.Context, i int) Window {
	w := r.wins[i]
	if wait := w.end + r.guard - r.env.Clock.Now(); wait > 0 {
		_ = r.env.Clock.Sleep(ctx, wait)
	}
	r.smp.Poke()
	tr := r.snapshot()
	// The window with every other window that could bear on its figure (the sync check
	// looks after its end for the next begin, or a window still open at it).
	spans := []marks.Span{r.span(w, tr)}
	for k, o := range r.wins {
		if k == i || o.start > w.end+energy.LookAfter || (o.Ended && o.end < w.start) {
			continue
		}
		spans = append(spans, r.span(o, tr))
	}
	regs := energy.Marked(tr, spans, energy.MarkedOptions{Cache: &energy.Cache{}, SyncCheck: true})
	return r.withFigure(w, regs[0], tr, false)
}

// span is window w as the estimator takes a region; a window still open ends at the end
// of tr.
func (r *recorder) span(w *Window, tr *trace.Trace) marks.Span {
	end := w.end
	if !w.Ended {
		end = time.Duration(tr.Meta.Duration * float64(time.Second))
	}
	return marks.Span{Name: w.Name, Instance: w.Instance, Depth: w.Depth, Parent: -1, Start: w.start, End: end,
		Begin: marks.Event{Begin: true, Name: w.Name, T: w.start}, Stop: marks.Event{Name: w.Name, T: end}}
}

func (r *recorder) withFigure(w *Window, reg energy.MarkedRegion, tr *trace.Trace, final bool) Window {
	c := *w
	c.GPUs, c.Warnings, c.Final = reg.GPUs, reg.Warnings, final
	c.HostUnavailable = r.hostWhy
	if r.hostWhy != "" {
		return c
	}
	c.Host = energy.HostRegions(tr, w.start, w.end)
	if len(c.Host) == 0 {
		c.HostUnavailable = "no host channel was read"
		return c
	}
	if len(r.devs) < len(r.env.System.Devices()) {
		return c // some of the node's GPUs are not recorded: no node total
	}
	var parts []energy.Interval
	for _, g := range c.GPUs {
		if g.NoFigure || !g.OK() {
			return c
		}
		parts = append(parts, g.Interval)
	}
	for _, h := range c.Host {
		if !h.OK() {
			return c
		}
		if h.Kind == "psys" {
			continue // the platform's figure holds the packages and DRAM: not added to them
		}
		parts = append(parts, h.Interval)
	}
	if n, ok := energy.NodeTotal(parts); ok {
		c.Node = &n
	}
	return c
}

// snapshot is the trace recorded so far.
func (r *recorder) snapshot() *trace.Trace {
	chans, samples := r.smp.Snapshot()
	return &trace.Trace{Meta: r.meta(chans, r.env.Clock.Now()), Samples: samples}
}

func (r *recorder) meta(chans []trace.Channel, end time.Duration) trace.Meta {
	sys := r.env.System
	m := trace.Meta{
		Format: trace.Format, Version: r.o.Version, Host: r.o.Host, Device: sys.Name(), Simulated: sys.Simulated(),
		DriverVersion: sys.DriverVersion(), NVMLVersion: sys.NVMLVersion(), Command: r.o.CommandLine,
		Start: r.env.Clock.Epoch(), Duration: end.Seconds(), Poll: trace.Poll{Mode: r.o.Poll.String()}, Channels: chans,
		Unavailable: r.smp.Unavailable(), Marks: []trace.Mark{}, VirtualClock: clock.IsVirtual(r.env.Clock),
	}
	if r.o.Poll.Mode == sensor.Fixed {
		m.Poll = trace.Poll{Mode: "fixed", Interval: r.o.Poll.Interval.Seconds()}
	}
	for _, d := range r.devs {
		m.GPUs = append(m.GPUs, d.Info())
	}
	return m
}

func (r *recorder) hello() *Hello {
	h := &Hello{Protocol: ProtocolVersion, Gpuwatt: r.o.Version, PID: os.Getpid(), Device: r.env.System.Name(),
		Simulated: r.env.System.Simulated(), Warnings: []status.Warning{}}
	for _, d := range r.devs {
		h.GPUs = append(h.GPUs, d.Info())
	}
	for _, ch := range r.smp.Channels() {
		if ch.GPU == trace.HostGPU {
			h.Channels = append(h.Channels, "host/"+ch.Name)
			continue
		}
		h.Channels = append(h.Channels, fmt.Sprintf("gpu%d/%s", ch.GPU, ch.Name))
	}
	h.HostUnavailable = r.hostWhy
	for _, m := range r.smp.Unavailable() {
		h.Warnings = append(h.Warnings, status.Warning{Code: "channel_unavailable", Subject: fmt.Sprintf("gpu%d/%s", m.GPU, m.Name), Message: m.Reason})
	}
	if r.env.System.Simulated() {
		h.Warnings = append(h.Warnings, status.Warnf("simulated", "recording on %s: every figure is simulated, none is a measurement", r.env.System.Name()))
	}
	return h
}

// finish stops the recording, gives every ended window its final figure over the whole
// recording (as measure gives its regions), and saves the trace where Options.Out says.
// A second call returns what the first did.
func (r *recorder) finish() (Response, error) {
	if r.smp == nil {
		return Response{}, errors.New("the recording was already closed")
	}
	clk := r.env.Clock
	// Every window that ended has readings after its end, as measure's tail gives.
	_ = clk.Sleep(context.Background(), r.guard)
	r.smp.Poke()
	if r.commanded {
		notify(r.devs, func(ob gpu.CommandObserver) { ob.CommandEnded(clk.Now()) })
	}
	chans, samples := r.smp.Stop()
	_, end := r.smp.Span()
	meta := r.meta(chans, end)
	var spans []marks.Span
	idx := map[int]int{}
	var ended []*Window
	for k, w := range r.wins {
		if !w.Ended {
			continue
		}
		idx[k] = len(spans)
		parent := -1
		for p := w.parent; p >= 0; p = r.wins[p].parent {
			if j, ok := idx[p]; ok {
				parent = j
				break
			}
		}
		spans = append(spans, marks.Span{Name: w.Name, Instance: w.Instance, Depth: w.Depth, Parent: parent, Start: w.start, End: w.end,
			Begin: marks.Event{Begin: true, Name: w.Name, T: w.start}, Stop: marks.Event{Name: w.Name, T: w.end}})
		meta.Marks = append(meta.Marks, trace.Mark{T: w.start.Seconds(), Name: "begin " + w.Name}, trace.Mark{T: w.end.Seconds(), Name: "end " + w.Name})
		ended = append(ended, w)
	}
	slices.SortStableFunc(meta.Marks, func(a, b trace.Mark) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	var warns []status.Warning
	for _, k := range r.open {
		w := r.wins[k]
		warns = append(warns, status.Warning{Code: marks.CodeUnended, Subject: w.Name,
			Message: fmt.Sprintf("window %s #%d began at %.3f s and was not ended before close; left out (no energy is given for it)", w.Name, w.Instance, w.start.Seconds())})
	}
	if hung := r.smp.Hung(); len(hung) > 0 {
		meta.Incomplete, meta.IncompleteWhy = true, "a driver call hangs: "+strings.Join(hung, "; ")
		warns = append(warns, status.Warnf("incomplete", "%s", meta.IncompleteWhy))
	}
	tr := &trace.Trace{Meta: meta, Samples: samples}
	// The final figures are those of the saved recording (energy --region on it gives them
	// again): its times to the µs, as trace.csv stores them.
	tr.RoundToStored()
	resp := Response{Windows: []Window{}, Warnings: warns}
	regs := energy.Marked(tr, spans, energy.MarkedOptions{Cache: &energy.Cache{}, SyncCheck: true})
	for k, w := range ended {
		resp.Windows = append(resp.Windows, r.withFigure(w, regs[k], tr, true))
	}
	r.smp = nil
	var err error
	if r.o.Out != "" {
		if err = trace.Save(r.o.Out, tr); err == nil {
			resp.Saved = r.o.Out
		} else {
			err = fmt.Errorf("saving the recording to %s: %w", r.o.Out, err)
		}
	}
	return resp, err
}

func notify(devs []gpu.Device, f func(gpu.CommandObserver)) {
	for _, d := range devs {
		if o, ok := d.(gpu.CommandObserver); ok {
			f(o)
		}
	}
}
