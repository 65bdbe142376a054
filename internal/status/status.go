// Package status holds what every capability's result shares: warnings as values (with a
// code, a subject and a figure, so output can group and deduplicate them without parsing
// text), whether the run is incomplete and why, and the progress event every long run emits.
package status

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ErrInput marks errors caused by the caller's input (a flag, an option, a file): the cli
// prints them as usage errors and exits 2. Every capability wraps its bad-input errors
// with it ("%w: ...").
var ErrInput = errors.New("bad input")

// InputError is a bad-input error whose message is the input's own (no "bad input: "
// before it, so nothing has to cut it off): errors.Is(err, ErrInput) holds.
type InputError struct{ Err error }

func (e *InputError) Error() string        { return e.Err.Error() }
func (e *InputError) Unwrap() error        { return e.Err }
func (e *InputError) Is(target error) bool { return target == ErrInput }

// Inputf is an InputError with a formatted message.
func Inputf(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// Code names the kind of a warning, e.g. "missed_updates", "channel_disagreement",
// "throttling", "coverage". Warnings with one Code and one Message template across many
// subjects (kernels, points, levels) are told once on output (see Group).
type Code string

// Warning is one thing a reader must know about a result.
type Warning struct {
	Code Code `json:"code"`
	// Subject is what the warning is about within a run of many: a kernel, an archline
	// point, a load level, a channel. Empty for run-wide warnings.
	Subject string `json:"subject,omitempty"`
	// Key groups warnings of one Code that say the same thing (e.g. the channel pair and
	// the reason of a disagreement, or the channel whose updates were missed); warnings
	// of one Code and Key across several subjects are told once.
	Key string `json:"key,omitempty"`
	// Message is the full sentence, without the subject.
	Message string `json:"message"`
	// Value is the warning's figure where it has one (a disagreement in %, a count of
	// missed updates), used to give the range of a group; NaN-free, 0 when none.
	Value float64 `json:"value,omitempty"`
	// Unit of Value ("%", "updates", ...), for the group's range.
	Unit string `json:"unit,omitempty"`
}

// String is the warning as one line: "subject: message", or the message alone.
func (w Warning) String() string {
	if w.Subject == "" {
		return w.Message
	}
	return w.Subject + ": " + w.Message
}

// UnmarshalJSON reads a warning object, or a plain string as results.json files written
// before warnings had codes hold them (the string becomes the Message, with no Code).
func (w *Warning) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*w = Warning{Message: s}
		return nil
	}
	type plain Warning // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*w = Warning(p)
	return nil
}

// Warnf builds a warning without subject, key or value.
func Warnf(code Code, format string, args ...any) Warning {
	return Warning{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Status is the part of every result that says how far to trust it.
type Status struct {
	Warnings   []Warning `json:"warnings"`
	Incomplete bool      `json:"incomplete"`
	// Reason says why the run is incomplete (interrupted, a stage failed, the GPU was lost).
	// Its key is the one results.json files have always used.
	Reason string `json:"incomplete_reason,omitempty"`
}

// Warn appends a warning.
func (s *Status) Warn(w Warning) { s.Warnings = append(s.Warnings, w) }

// Warnf appends a run-wide warning.
func (s *Status) Warnf(code Code, format string, args ...any) {
	s.Warn(Warnf(code, format, args...))
}

// MarkIncomplete marks the result incomplete; the first reason given is kept, later ones are
// appended once.
func (s *Status) MarkIncomplete(reason string) {
	s.Incomplete = true
	switch {
	case reason == "" || strings.Contains(s.Reason, reason):
	case s.Reason == "":
		s.Reason = reason
	default:
		s.Reason += "; " + reason
	}
}

// Merge adds another result's status: its warnings (with subject set where they have none,
// or put before theirs as "subject: theirs") and its incompleteness.
func (s *Status) Merge(subject string, o Status) {
	for _, w := range o.Warnings {
		if w.Subject == "" {
			w.Subject = subject
		} else if subject != "" {
			w.Subject = subject + ": " + w.Subject
		}
		s.Warn(w)
	}
	if o.Incomplete {
		r := o.Reason
		if subject != "" && r != "" {
			r = subject + ": " + r
		}
		s.MarkIncomplete(r)
	}
}

// MaxPerCode is how many warnings of one Code Cap keeps.
const MaxPerCode = 20

// Cap keeps the first n warnings of each Code and adds, for each Code that had more, one
// warning counting the rest: a warning per bad line of a 200 000-line input was 23 MB of
// stderr. The rest keep their order.
func Cap(ws []Warning, n int) []Warning {
	seen := map[Code]int{}
	var order []Code
	out := ws[:0:0]
	for _, w := range ws {
		if seen[w.Code] == 0 {
			order = append(order, w.Code)
		}
		seen[w.Code]++
		if seen[w.Code] <= n {
			out = append(out, w)
		}
	}
	for _, c := range order {
		if k := seen[c] - n; k > 0 {
			out = append(out, Warning{Code: c, Key: "capped", Value: float64(k), Unit: "warnings",
				Message: fmt.Sprintf("%d more warnings like the %d above (%s) are not shown", k, n, c)})
		}
	}
	return out
}

// GroupMin is how many subjects must share one warning (Code and Key) before it is told once.
const GroupMin = 3

// Group returns the warnings as lines for a reader: exact duplicates are dropped, and a
// warning of one Code and Key shared by GroupMin or more subjects becomes one line that
// counts them, gives the range of their figures and names them; the rest keep their order.
// total is the number of subjects in the run (kernels, points), 0 if unknown. Subjects
// with a stage before them ("micro: int32.add") group within their stage only.
func Group(ws []Warning, total int) []string {
	return GroupEach(ws, func(string) int { return total })
}

// GroupEach is Group where each stage has its own number of subjects: total("micro") is
// how many kernels micro measured; total("") is for subjects without a stage.
func GroupEach(ws []Warning, total func(stage string) int) []string {
	type group struct {
		first   Warning
		members []Warning
	}
	var order []*group
	byKey := map[string]*group{}
	seen := map[string]bool{}
	for _, w := range ws {
		line := w.String()
		if seen[line] {
			continue
		}
		seen[line] = true
		k := string(w.Code) + "\x00" + w.Key + "\x00" + stageOf(w.Subject)
		if w.Key == "" {
			k += "\x00" + w.Message // no key: only identical messages group
		}
		g := byKey[k]
		if g == nil {
			g = &group{first: w}
			byKey[k] = g
			order = append(order, g)
		}
		g.members = append(g.members, w)
	}
	var out []string
	for _, g := range order {
		subjects := 0
		for _, m := range g.members {
			if m.Subject != "" {
				subjects++
			}
		}
		if subjects < GroupMin {
			for _, m := range g.members {
				out = append(out, m.String())
			}
			continue
		}
		out = append(out, groupLine(g.first, g.members, total(stageOf(g.first.Subject))))
	}
	return out
}

func groupLine(first Warning, ms []Warning, total int) string {
	lo, hi := ms[0].Value, ms[0].Value
	var names []string
	hasValue := false
	prefix := commonPrefix(ms)
	for _, m := range ms {
		lo, hi = min(lo, m.Value), max(hi, m.Value)
		if m.Value != 0 {
			hasValue = true
		}
		if n := strings.TrimPrefix(m.Subject, prefix); m.Subject != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	of := ""
	if total > 0 {
		of = fmt.Sprintf(" of %d", total)
	}
	head := fmt.Sprintf("on %d%s", len(names), of)
	if hasValue {
		f := "%g"
		if first.Unit == "%" {
			f = "%.1f" // one decimal throughout: "-7.0 … +13.0 %", not "-7 … +13 %"
		}
		if lo < 0 {
			f = "%+" + f[1:] // a signed figure (a disagreement): both signs shown
		}
		if lo == hi {
			head += fmt.Sprintf(", "+f+" %s", lo, first.Unit)
		} else {
			head += fmt.Sprintf(", "+f+" … "+f+" %s", lo, hi, first.Unit)
		}
	}
	msg := first.Message
	if first.Key != "" {
		msg = first.Key
	}
	return fmt.Sprintf("%s%s (%s: %s)", prefix, msg, head, strings.Join(names, ", "))
}

// stageOf is the stage a subject names before ": " ("micro" of "micro: int32.add"), or "".
func stageOf(subject string) string {
	st, _, ok := strings.Cut(subject, ": ")
	if !ok {
		return ""
	}
	return st
}

// commonPrefix is the "stage: " part that every member's subject starts with ("micro: "
// of "micro: int32.add"), told once before the group's line instead of before each name.
func commonPrefix(ms []Warning) string {
	p, _, ok := strings.Cut(ms[0].Subject, ": ")
	if !ok {
		return ""
	}
	p += ": "
	for _, m := range ms {
		if !strings.HasPrefix(m.Subject, p) || len(m.Subject) == len(p) {
			return ""
		}
	}
	return p
}

// WithSubject returns copies of ws about subject (put before a subject they have, as
// "subject: theirs"); ws is not changed.
func WithSubject(subject string, ws []Warning) []Warning {
	var s Status
	s.Merge(subject, Status{Warnings: ws})
	return s.Warnings
}

// Strings returns the warnings one per line, ungrouped (for JSON consumers of old fields).
func Strings(ws []Warning) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

// Event is one step of a long run's progress, rendered by the cli (a live line on a
// terminal, one plain line per step otherwise, nothing with --quiet).
type Event struct {
	Stage string // "micro", "archline", "sensor", "loadlevel", "profile", ...
	Step  string // what is being done: a kernel's name, a point, a phase, a level
	I, N  int    // step I (1-based) of N; N 0 when unknown
	// Detail is an optional result of the step to show beside it ("12.3 pJ", "valid").
	Detail string
}

// Progress receives events; nil discards them.
type Progress func(Event)

// Stage returns p telling events that name no stage of their own as stage's (a package
// emitting under its name, a verb passing its steps through); nil stays nil.
func (p Progress) Stage(stage string) Progress {
	if p == nil {
		return nil
	}
	return func(e Event) {
		if e.Stage == "" {
			e.Stage = stage
		}
		p(e)
	}
}

// Emit calls p if it is not nil.
func (p Progress) Emit(e Event) {
	if p != nil {
		p(e)
	}
}

// WriteText writes grouped warning lines under a "warnings:" heading, each line marked
// with "!", indented by indent; nothing when there are none.
func WriteText(w io.Writer, indent string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%swarnings:\n", indent)
	for _, l := range lines {
		fmt.Fprintf(w, "%s! %s\n", indent, l)
	}
}

// Interrupted says what cut a run short, for its incomplete reason: "interrupted by
// SIGTERM" where a signal ended ctx (its cause, set by the cli, says which), else
// "interrupted".
func Interrupted(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) && !errors.Is(c, context.DeadlineExceeded) {
		return c.Error()
	}
	return "interrupted"
}
