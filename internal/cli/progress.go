package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// progress is the one renderer of every verb's progress (status.Event) on stderr: a live
// line, rewritten in place, on a terminal; otherwise (the logs of batch jobs) a plain line
// where a stage starts and where it ends, and one every heartbeat in between, not one per
// kernel; nothing with --quiet (a nil status.Progress).
type progress struct {
	w    io.Writer
	verb string
	live bool
	t0   time.Time
	now  func() time.Time

	mu   sync.Mutex
	open bool // a live line is on the screen, without its newline
	// lastStage and lastLine are the stage and time of the last plain line printed.
	lastStage string
	lastLine  time.Time
	printed   bool
}

// heartbeat is how often a plain progress line is printed within a long list of steps;
// shortList is the longest list whose every step gets a line.
const (
	heartbeat = 30 * time.Second
	shortList = 12
)

// newProgress returns the verb's progress renderer and the function that ends its live
// line (call it before printing anything else); with quiet both do nothing.
func (a *App) newProgress(verb string, quiet bool) (status.Progress, func()) {
	if quiet {
		return nil, func() {}
	}
	p := &progress{w: a.Stderr, verb: verb, live: a.interactive(), now: time.Now}
	p.t0 = p.now()
	return p.emit, p.done
}

func (p *progress) emit(e status.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	line := fmt.Sprintf("gpuwatt %s: %s (%s elapsed)", p.verb, eventLabel(p.verb, e), now.Sub(p.t0).Round(time.Second))
	if !p.live {
		if p.plainLine(e, now) {
			fmt.Fprintln(p.w, line)
		}
		return
	}
	// \r to the start of the line, ESC[K to clear what a longer line left.
	fmt.Fprint(p.w, "\r\x1b[K"+line)
	p.open = true
}

// plainLine decides whether an event gets a plain line: a stage's step always (the stages
// of characterize, loadlevel's levels, sensor's tests: lists of at most shortList steps or
// steps not counted); in a long list (micro's kernels, archline's points) its first event,
// its last (I == N) and one per heartbeat.
func (p *progress) plainLine(e status.Event, now time.Time) bool {
	print := e.Stage == "" || e.N <= shortList || !p.printed || e.Stage != p.lastStage ||
		e.I == e.N || now.Sub(p.lastLine) >= heartbeat
	if print {
		p.printed, p.lastStage, p.lastLine = true, e.Stage, now
	}
	return print
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// eventLabel is an event as a reader sees it: the stage where it is not the verb's own
// (indented under the verb's own steps: characterize's "[2/4] micro: ..." then
// "  micro: [ 3/39] int32.add"), "[ 3/39]" where the count is known, the step and its
// detail.
func eventLabel(verb string, e status.Event) string {
	var b strings.Builder
	if e.Stage != "" && e.Stage != verb {
		b.WriteString("  " + e.Stage + ": ")
	}
	if e.N > 0 {
		w := len(strconv.Itoa(e.N))
		fmt.Fprintf(&b, "[%*d/%d] ", w, e.I, e.N)
	}
	b.WriteString(e.Step)
	if e.Detail != "" {
		b.WriteString(" (" + e.Detail + ")")
	}
	return b.String()
}
