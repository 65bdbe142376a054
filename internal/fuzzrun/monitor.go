// Package fuzzrun runs the module's fuzz targets as a check that can fail: each target is
// fuzzed for a while, then stopped only when no input is being minimised, and judged from
// its log. `go test -fuzz X -fuzztime T` is not such a check: where T runs out while the
// fuzzer minimises an input (a large seed takes the whole default minimise time of 60 s),
// it says PASS though it fuzzed nothing (FuzzResultsJSON: 54 executions in 60 s, all of
// them minimising), and a failing input the minimiser found by then is dropped unreported.
package fuzzrun

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Monitor reads a fuzzing run's output (with GODEBUG=fuzzdebug=1, which logs each input
// queued for minimisation and each one minimised) line by line and says where it stands.
type Monitor struct {
	Fuzzing  bool   // the baseline was gathered and fuzzing began
	Execs    int64  // executions so far, as the last stats line says
	Failed   bool   // a --- FAIL line
	Failing  string // where the failing input was written
	NoTarget bool   // "no fuzz tests to fuzz"
	// Minimising holds the ids queued for minimisation and not yet minimised;
	// CrashMinimising: the fuzzer minimises a failing input.
	Minimising      map[string]bool
	CrashMinimising bool
	// Stopped: the fuzzer began to stop; CutAtStop is how many minimisations were in
	// flight then; DroppedCrash: a minimisation ended with a failing input after the stop,
	// which the fuzzer ignores.
	Stopped      bool
	CutAtStop    int
	DroppedCrash bool
	last         []string
}

var (
	reQueued    = regexp.MustCompile(`queueing input for minimization, id: (\S+?),.*crasher: (true|false)`)
	reMinimised = regexp.MustCompile(`input minimized, id: \S+?, original id: (\S+?), crasher: (true|false)`)
	reExecs     = regexp.MustCompile(`^fuzz: elapsed: \S+, execs: (\d+)`)
	reWritten   = regexp.MustCompile(`Failing input written to (\S+)`)
)

// Line takes one line of the run's output.
func (m *Monitor) Line(s string) {
	if m.Minimising == nil {
		m.Minimising = map[string]bool{}
	}
	if len(m.last) == 20 {
		m.last = m.last[1:]
	}
	m.last = append(m.last, s)
	switch {
	case strings.Contains(s, "now fuzzing with"):
		m.Fuzzing = true
	case strings.Contains(s, "no fuzz tests to fuzz"):
		m.NoTarget = true
	case strings.Contains(s, "fuzz: minimizing") && strings.Contains(s, "failing input"):
		m.CrashMinimising = true
	case strings.Contains(s, "DEBUG stop called"):
		if !m.Stopped {
			m.Stopped, m.CutAtStop = true, len(m.Minimising)
			if m.CrashMinimising {
				m.CutAtStop++
			}
		}
	case strings.HasPrefix(s, "--- FAIL"):
		m.Failed = true
	}
	if g := reQueued.FindStringSubmatch(s); g != nil {
		m.Minimising[g[1]] = true
	}
	if g := reMinimised.FindStringSubmatch(s); g != nil {
		delete(m.Minimising, g[1])
		if g[2] == "true" && m.Stopped {
			m.DroppedCrash = true
		}
	}
	if g := reExecs.FindStringSubmatch(s); g != nil {
		m.Execs, _ = strconv.ParseInt(g[1], 10, 64)
	}
	if g := reWritten.FindStringSubmatch(s); g != nil {
		m.Failing, m.Failed = g[1], true
	}
}

// Quiet says whether the run may be stopped now without cutting anything short: fuzzing
// has begun and no input is being minimised.
func (m *Monitor) Quiet() bool {
	return m.Fuzzing && len(m.Minimising) == 0 && !m.CrashMinimising
}

// Verdict judges the finished run: nil only where the target was fuzzed, every
// minimisation finished before the stop, and nothing failed. exit is the process's exit
// code.
func (m *Monitor) Verdict(exit int) error {
	switch {
	case m.Failed || m.Failing != "":
		where := ""
		if m.Failing != "" {
			where = ": failing input written to " + m.Failing
		}
		return fmt.Errorf("FAIL%s", where)
	case m.NoTarget:
		return fmt.Errorf("no fuzz target matched: nothing was fuzzed")
	case exit != 0:
		return fmt.Errorf("exit %d without a failing input: %s", exit, strings.Join(m.last, " | "))
	case m.DroppedCrash:
		return fmt.Errorf("a minimisation found a failing input after the fuzzer began to stop, which it then dropped: not a pass")
	case m.CutAtStop > 0:
		return fmt.Errorf("the run ended while %d inputs were being minimised: not a pass (a failing input found by the minimiser then is dropped); give it more time or a shorter -fuzzminimizetime", m.CutAtStop)
	case !m.Fuzzing:
		return fmt.Errorf("never began fuzzing (the seed corpus's baseline was not gathered)")
	case m.Execs == 0:
		return fmt.Errorf("no input was fuzzed")
	}
	return nil
}
