// Package marks turns region markers into regions of a trace, each with its energy per GPU
// from internal/energy's one estimator, and flags a marker that the power shows the work
// ran past (a marker written before the GPU's work finished: unsynchronised).
//
// Markers come from a program measured by `gpuwatt measure`, which appends lines to the
// file named by GPUWATT_MARKS (ParseLines), or from a Go program through the public
// package's Begin and End (Events made in process). A line is
//
//	begin NAME [T]
//	end NAME [T]
//
// NAME is one word (no blanks); T, where given, is the writer's CLOCK_MONOTONIC in seconds
// at the marker (the helpers python/gpuwatt/markers.py and c/gpuwatt_marks.h write it), mapped onto
// the trace's axis exactly (both are the host's monotonic clock); without T the line is
// stamped when measure reads it (it tails the file every ArrivalPoll). Blank lines and lines
// starting with # are skipped; any other line is a warning naming it, never a region.
//
// Regions may nest and names may repeat: `end NAME` closes the innermost open region of
// that name; each begin/end pair is one region, numbered per name in order (Instance).
package marks

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

// EnvVar is the environment variable that names the marks file.
const EnvVar = "GPUWATT_MARKS"

// ArrivalPoll is how often measure reads the marks file while the command runs where the
// kernel cannot tell it of each write: a line without its own time is stamped when it is
// read, up to this late. On Linux (inotify) a line is read as soon as it is written, and
// the file is read every IdlePoll besides: polled every 2 ms, it cost measure about a per
// cent of a core in wakeups (results/nvidia-h200/2026-11-28-cpu-probe).
const ArrivalPoll = 2 * time.Millisecond

// IdlePoll is how often the marks file is read where inotify tells of each write, in case a
// write goes unseen.
const IdlePoll = 100 * time.Millisecond

// Warning codes.
const (
	CodeBadLine      status.Code = "bad_marker"
	CodeUnmatched    status.Code = "unmatched_marker"
	CodeUnended      status.Code = "unended_region"
	CodeOutside      status.Code = "marker_outside_recording"
	CodeUnsynced     status.Code = "unsynchronised_marker"
	CodeArrival      status.Code = "marker_stamped_on_arrival"
	CodeNoRegionFigs status.Code = "region_without_energy"
)

// Line is one line of the marks file as read: its text (without the newline), its number
// (from 1) and when it was read, on the trace's axis.
type Line struct {
	No      int
	Text    string
	Arrived time.Duration
}

// Event is one marker on the trace's axis.
type Event struct {
	Begin bool
	Name  string
	T     time.Duration
	// Line is the marks file's line (0: a marker made in process); Stamped says T is the
	// writer's own time (false: stamped when read, up to ArrivalPoll late).
	Line    int
	Stamped bool
}

func (e Event) verb() string {
	if e.Begin {
		return "begin"
	}
	return "end"
}

// where names the event for a warning: `line 3 ("end step")` or `end step at 1.234 s`.
// Where says where the marker came from: its line in the marks file, else its time.
func (e Event) Where() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d (%q)", e.Line, e.verb()+" "+e.Name)
	}
	return fmt.Sprintf("%s %s at %.3f s", e.verb(), e.Name, e.T.Seconds())
}

// ValidName reports whether name can be a region's name: one word, printable, no blanks.
func ValidName(name string) error {
	if name == "" {
		return fmt.Errorf("a region needs a name")
	}
	if len(name) > 200 {
		return fmt.Errorf("region name %.20q...: longer than 200 bytes", name)
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || r == '\uFFFD' {
			return fmt.Errorf("region name %q: want one word without blanks or control characters", name)
		}
	}
	return nil
}

// ParseLines reads marker lines into events in time order. toAxis maps a writer's
// CLOCK_MONOTONIC seconds onto the trace's axis (nil: stamps are not understood on this
// host, and every line is stamped on arrival). A line that is not a marker is a warning
// naming it and is left out.
func ParseLines(lines []Line, toAxis func(sec float64) time.Duration) ([]Event, []status.Warning) {
	var evs []Event
	var ws []status.Warning
	arrived, nbad := 0, 0
	for _, l := range lines {
		text := strings.TrimSpace(l.Text)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		bad := func(why string) {
			if nbad++; nbad > status.MaxPerCode {
				return // counted: one warning says how many more (status.Cap's words)
			}
			ws = append(ws, status.Warning{Code: CodeBadLine, Key: why,
				Message: fmt.Sprintf("%s line %d %q: %s; the line is ignored", EnvVar, l.No, clip(text), why)})
		}
		if len(f) < 2 || len(f) > 3 || (f[0] != "begin" && f[0] != "end") {
			bad("want `begin NAME [T]` or `end NAME [T]`")
			continue
		}
		if err := ValidName(f[1]); err != nil {
			bad(err.Error())
			continue
		}
		ev := Event{Begin: f[0] == "begin", Name: f[1], T: l.Arrived, Line: l.No}
		if len(f) == 3 {
			sec, err := strconv.ParseFloat(f[2], 64)
			if err != nil || math.IsNaN(sec) || math.IsInf(sec, 0) || sec < 0 || sec > 1e9 {
				bad(fmt.Sprintf("the time %q is not a number of seconds on CLOCK_MONOTONIC", f[2]))
				continue
			}
			if toAxis != nil {
				ev.T, ev.Stamped = toAxis(sec), true
			}
		}
		if !ev.Stamped {
			arrived++
		}
		evs = append(evs, ev)
	}
	if k := nbad - status.MaxPerCode; k > 0 {
		ws = append(ws, status.Warning{Code: CodeBadLine, Key: "capped", Value: float64(k), Unit: "warnings",
			Message: fmt.Sprintf("%d more bad lines in %s (%d in all) are not shown; each is ignored", k, EnvVar, nbad)})
	}
	if arrived > 0 {
		ws = append(ws, status.Warning{Code: CodeArrival, Value: float64(arrived), Unit: "markers",
			Message: fmt.Sprintf("%d marker(s) carry no time of their own and were stamped when read (up to %s late, plus the writer's own delay): a region's edges are that uncertain; the helpers (python/gpuwatt/markers.py, c/gpuwatt_marks.h) write the time", arrived, ArrivalPoll)})
	}
	slices.SortStableFunc(evs, func(a, b Event) int { return cmpDur(a.T, b.T) })
	return evs, ws
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Span is one region: a begin and the end that closed it.
type Span struct {
	Name string
	// Instance counts the regions of one name from 1, in the order they began.
	Instance int
	// Depth is how many regions were open around it when it began (0: top level);
	// Parent is the index (in the slice Pair returns) of the innermost of them, -1 none.
	Depth, Parent int
	Start, End    time.Duration
	Begin, Stop   Event
}

// Pair matches begins and ends in time order: `end NAME` closes the innermost open region
// named NAME. An end without an open region of its name, and a region never ended (still
// open at the last event), are warnings naming their markers, never regions.
func Pair(evs []Event) ([]Span, []status.Warning) {
	var spans []Span
	var ws []status.Warning
	type open struct {
		ev  Event
		idx int // its span's index once closed: reserved at begin
	}
	var stack []open
	count := map[string]int{}
	// Spans are listed in the order they began: reserve a slot at each begin.
	for _, e := range evs {
		if e.Begin {
			count[e.Name]++
			parent := -1
			if n := len(stack); n > 0 {
				parent = stack[n-1].idx
			}
			spans = append(spans, Span{Name: e.Name, Instance: count[e.Name], Depth: len(stack), Parent: parent, Start: e.T, Begin: e})
			stack = append(stack, open{e, len(spans) - 1})
			continue
		}
		i := len(stack) - 1
		for i >= 0 && stack[i].ev.Name != e.Name {
			i--
		}
		if i < 0 {
			ws = append(ws, status.Warning{Code: CodeUnmatched, Key: e.Name,
				Message: fmt.Sprintf("%s: `end %s` with no open region of that name; ignored", e.Where(), e.Name)})
			continue
		}
		s := &spans[stack[i].idx]
		s.End, s.Stop = e.T, e
		stack = append(stack[:i], stack[i+1:]...)
	}
	unended := map[int]bool{}
	for _, o := range stack {
		unended[o.idx] = true
		ws = append(ws, status.Warning{Code: CodeUnended, Key: o.ev.Name,
			Message: fmt.Sprintf("%s: region %s began and never ended; left out (no energy is given for it)", o.ev.Where(), o.ev.Name)})
	}
	if len(unended) == 0 {
		return spans, ws
	}
	// Drop the unended ones and renumber the parents.
	newIdx := make([]int, len(spans))
	var out []Span
	for i, s := range spans {
		if unended[i] {
			newIdx[i] = -1
			continue
		}
		newIdx[i] = len(out)
		out = append(out, s)
	}
	for i := range out {
		p := out[i].Parent
		for p >= 0 && newIdx[p] < 0 {
			p = spans[p].Parent
		}
		if p >= 0 {
			p = newIdx[p]
		}
		out[i].Parent = p
	}
	return out, ws
}

// Within keeps the events inside the recording [from, to] of the trace's axis; one outside
// (a time on another clock, a marker left from an earlier run) is a warning naming it.
func Within(evs []Event, from, to time.Duration) ([]Event, []status.Warning) {
	var out []Event
	var ws []status.Warning
	for _, e := range evs {
		if e.T >= from && e.T <= to {
			out = append(out, e)
			continue
		}
		where := "before the recording began"
		if e.T > to {
			where = "after the recording ended"
		}
		hint := ""
		if e.Stamped {
			hint = " (is its time CLOCK_MONOTONIC seconds, as time.monotonic() and clock_gettime(CLOCK_MONOTONIC) give?)"
		}
		ws = append(ws, status.Warning{Code: CodeOutside, Key: where,
			Message: fmt.Sprintf("%s lies at %.3f s, %s (%.3f to %.3f s)%s; ignored", e.Where(), e.T.Seconds(), where, from.Seconds(), to.Seconds(), hint)})
	}
	return out, ws
}

// FromTrace returns the region marks of a recording ("begin NAME" and "end NAME", as
// measure and the library write them into trace.json) as events on its axis; other
// marks (cmd.start, cmd.end) are left out.
func FromTrace(ms []trace.Mark) []Event {
	var evs []Event
	for _, m := range ms {
		verb, name, ok := strings.Cut(m.Name, " ")
		if !ok || (verb != "begin" && verb != "end") {
			continue
		}
		evs = append(evs, Event{Begin: verb == "begin", Name: name, T: time.Duration(m.T*float64(time.Second) + 0.5)})
	}
	return evs
}
