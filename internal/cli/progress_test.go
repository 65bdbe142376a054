package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// fixedProgress is a renderer whose clock reads 0, then 2 s on.
func fixedProgress(w *bytes.Buffer, verb string, live bool) *progress {
	t0 := time.Unix(0, 0)
	n := 0
	return &progress{w: w, verb: verb, live: live, t0: t0, now: func() time.Time {
		n++
		return t0.Add(time.Duration(n-1) * 2 * time.Second)
	}}
}

var progressEvents = []status.Event{
	{Step: "micro: energy per operation", I: 2, N: 4},
	{Stage: "micro", Step: "int32.add", I: 3, N: 39},
	{Stage: "loadlevel", Step: "level 75 %", Detail: "005_lvl", I: 5, N: 7},
	{Stage: "sensor", Step: "idle"},
}

// TestProgressPlainLines: not on a terminal each event is one line, with the stage (where
// it is not the verb's), the count padded to the total's width, the step, its detail and
// the time elapsed.
func TestProgressPlainLines(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := fixedProgress(&b, "characterize", false)
	for _, e := range progressEvents {
		p.emit(e)
	}
	p.done()
	want := "gpuwatt characterize: [2/4] micro: energy per operation (0s elapsed)\n" +
		"gpuwatt characterize:   micro: [ 3/39] int32.add (2s elapsed)\n" +
		"gpuwatt characterize:   loadlevel: [5/7] level 75 % (005_lvl) (4s elapsed)\n" +
		"gpuwatt characterize:   sensor: idle (6s elapsed)\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// TestProgressPlainPerStage: not on a terminal a stage of many kernels gives a line where
// it starts, one where it ends and one per heartbeat, not one per kernel.
func TestProgressPlainPerStage(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := fixedProgress(&b, "characterize", false) // 2 s per event
	p.emit(status.Event{Step: "micro", I: 2, N: 4})
	for i := 1; i <= 39; i++ {
		p.emit(status.Event{Stage: "micro", Step: "kernel", I: i, N: 39})
	}
	p.emit(status.Event{Step: "archline", I: 3, N: 4})
	p.emit(status.Event{Stage: "archline", Step: "point", I: 1, N: 40})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// [2/4] micro, kernel 1, kernels 16 and 31 (30 s on), kernel 39, [3/4] archline, point 1
	if len(lines) != 7 || !strings.Contains(lines[1], "[ 1/39]") || !strings.Contains(lines[2], "[16/39]") || !strings.Contains(lines[4], "[39/39]") || !strings.Contains(lines[5], "[3/4] archline") {
		t.Errorf("%d lines:\n%s", len(lines), b.String())
	}
}

// TestProgressLiveLine: on a terminal each event rewrites one line in place (carriage
// return, clear to the end of the line, no newline), and done ends it with one newline.
func TestProgressLiveLine(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := fixedProgress(&b, "micro", true)
	p.emit(status.Event{Stage: "micro", Step: "baseline", I: 1, N: 2})
	p.emit(status.Event{Stage: "micro", Step: "fp32.fma", I: 2, N: 2})
	want := "\r\x1b[Kgpuwatt micro: [1/2] baseline (0s elapsed)\r\x1b[Kgpuwatt micro: [2/2] fp32.fma (2s elapsed)"
	if b.String() != want {
		t.Fatalf("got %q\nwant %q", b.String(), want)
	}
	p.done()
	p.done()
	if b.String() != want+"\n" {
		t.Errorf("after done: %q", b.String())
	}
}

// TestProgressQuiet: --quiet gives no renderer at all, and its done does nothing.
func TestProgressQuiet(t *testing.T) {
	t.Parallel()
	a, _, stderr, _ := testApp(t)
	p, done := a.newProgress("micro", true)
	p.Emit(status.Event{Step: "x"})
	done()
	if p != nil || stderr.Len() != 0 {
		t.Errorf("quiet: renderer %v, stderr %q", p != nil, stderr)
	}
	p, done = a.newProgress("micro", false)
	p.Emit(status.Event{Step: "x"})
	done()
	if !strings.HasPrefix(stderr.String(), "gpuwatt micro: x (") || strings.Contains(stderr.String(), "\r") {
		t.Errorf("not quiet, not a terminal: %q", stderr)
	}
}

// wantProgress fails unless every line of want is a progress line of stderr (elapsed
// times left out).
func wantProgress(t *testing.T, stderr string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(stderr, w+" (") {
			t.Errorf("no progress line %q in stderr:\n%s", w, stderr)
		}
	}
}
