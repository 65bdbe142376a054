package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/characterize"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/gpu"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

const characterizeSynopsis = "[--device ...] [--gpu N|all|LIST] [--quick] [--stages sensor,micro,archline,loadlevel] [--resume] [--repeat N] [--out DIR] [--json]"

// characterize is `gpuwatt characterize`: the energy datasheet of a GPU in one command
// (internal/characterize runs the stages and renders the page).
func (a *App) characterize(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("characterize", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withOut|withJSON|withQuiet, "gpuwatt-characterize")
	gpuSel := fs.String("gpu", "0", "the GPU to characterize (its index), or all, or indices such as 0,2: every card at once, each into DIR/gpu-N, then DIR/report.html and DIR/compare.json comparing them (a difference named only beyond the intervals)")
	inTurn := fs.Bool("in-turn", false, "with several GPUs: characterize one card after the other in this process, instead of every card at once, each in a gpuwatt process of its own (the default)")
	quick := fs.Bool("quick", false, "shorter stages: about 5 minutes of GPU time instead of about 20")
	stagesFlag := fs.String("stages", "", "run only these stages (comma-separated: "+strings.Join(characterize.Stages, ",")+"); default all")
	resume := fs.Bool("resume", false, "keep the stages an earlier run into --out finished (its results.json) and run the rest")
	repeat := fs.Int("repeat", 1, "run the stages N times on the card, into DIR/run-1 ... DIR/run-N, and write DIR/report.html and DIR/repeat.json with each headline figure's run-to-run CV")
	contexts := fs.Int("contexts", 0, "users of the load-level stage (default 8 on a GPU, the host's cores on the CPU variant)")
	if code, ok := a.parseFlags(fs, args, characterizeSynopsis); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return a.usageError("characterize", fmt.Errorf("unexpected argument %q: gpuwatt characterize %s", fs.Arg(0), characterizeSynopsis))
	}
	if sh.out == "" {
		return a.usageError("characterize", fmt.Errorf("--out: want a directory"))
	}
	var cards []int // several GPUs in turn; nil: one (sh.gpu)
	multi := false
	if n, err := strconv.Atoi(strings.TrimSpace(*gpuSel)); err == nil && n >= 0 {
		sh.gpu = n
	} else {
		idx, err := parseIndices(*gpuSel)
		if err != nil {
			return a.usageError("characterize", err)
		}
		cards, multi = idx, true
	}
	if multi && (*repeat > 1 || *resume) {
		return a.usageError("characterize", fmt.Errorf("--gpu %s with --repeat or --resume: characterize each card on its own for those", *gpuSel))
	}
	if *repeat < 1 || *repeat > 100 {
		return a.usageError("characterize", fmt.Errorf("--repeat %d: want 1 to 100 runs", *repeat))
	}
	if *repeat > 1 && *resume {
		return a.usageError("characterize", fmt.Errorf("--repeat and --resume: resume each run-K directory on its own"))
	}
	opt := characterize.Options{GPU: sh.gpu, Quick: *quick, Stages: stageList(*stagesFlag), LoadContexts: *contexts, OpenGPU: openGPUFFT}
	if err := opt.Validate(); err != nil { // before --resume reads anything
		return a.usageError("characterize", err)
	}
	if *resume {
		prev, err := resumeFrom(sh.out, *quick)
		if err != nil {
			return a.usageError("characterize", err)
		}
		opt.Resume = prev
	}
	sh.resume = *resume
	r, code := a.start("characterize", sh, nil)
	if r == nil {
		return code
	}
	defer r.close()
	t0 := time.Now()
	if *repeat > 1 {
		var items []seriesRun
		for k := 1; k <= *repeat; k++ {
			items = append(items, seriesRun{name: fmt.Sprintf("run-%d", k), opt: opt})
		}
		return a.characterizeSeries(ctx, r, items, sh, args, t0, "repeat.json", "runs")
	}
	if multi {
		items, err := cardRuns(cards, *gpuSel, r.env.System.Devices(), opt)
		if err != nil {
			return a.usageError("characterize", err)
		}
		if *inTurn {
			return a.characterizeSeries(ctx, r, items, sh, args, t0, "compare.json", "cards")
		}
		return a.characterizeCardsAtOnce(ctx, r, fs, items, sh, t0)
	}
	res, err := opt.Run(ctx, r.env)
	r.done()
	if errors.Is(err, status.ErrInput) {
		return a.exitFor("characterize", err)
	}
	if err != nil {
		return a.fail("characterize", err)
	}
	res.Version, res.Host = a.versionString(), a.host()
	res.Command = append([]string{"gpuwatt", "characterize"}, args...)
	res.Date = time.Now().UTC().Format(time.RFC3339)
	res.Runs = append(res.Runs, characterize.Invocation{Command: res.Command, Date: res.Date, Version: res.Version})
	if err := writeCharacterize(sh.out, res); err != nil {
		return a.fail("characterize", fmt.Errorf("--out %s: %v", sh.out, err))
	}
	if sh.json {
		if err := report.WriteJSONTo(a.Stdout, res); err != nil {
			return a.fail("characterize", err)
		}
	} else {
		res.WriteSummary(a.Stdout, filepath.Join(sh.out, "report.html"))
	}
	var failed []string
	for _, s := range res.Stages {
		if s.Status == characterize.StatusFailed {
			failed = append(failed, s.Name)
		}
	}
	if !sh.quiet {
		fmt.Fprintf(a.Stderr, "gpuwatt characterize: wrote %s and %s (%d warnings, %s)\n",
			filepath.Join(sh.out, "report.html"), filepath.Join(sh.out, "results.json"), len(res.WarningLines()), time.Since(t0).Round(time.Millisecond))
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(a.Stderr, "gpuwatt characterize: interrupted: what was measured is in %s, marked incomplete\n", sh.out)
		return interruptedCode(ctx)
	case len(failed) > 0:
		fmt.Fprintf(a.Stderr, "gpuwatt characterize: stage(s) failed: %s (see the report)\n", strings.Join(failed, ", "))
		return ExitFailure
	}
	return ExitOK
}

func writeCharacterize(dir string, res *characterize.Result) error {
	var files []outFile
	if res.SensorProfile != nil {
		files = append(files, outFile{"sensor.json", func(dir string) error {
			return atomicfile.Write(filepath.Join(dir, "sensor.json"), func(w io.Writer) error { return correct.WriteProfile(w, *res.SensorProfile) })
		}})
	}
	files = append(files, outFile{"report.html", func(dir string) error { return res.Page().WriteFile(filepath.Join(dir, "report.html")) }})
	return writeFiles(dir, &res.Status, files, outFile{"results.json", func(dir string) error { return report.WriteJSON(filepath.Join(dir, "results.json"), res) }})
}

// seriesRun is one run of a series: its directory's name and its options.
type seriesRun struct {
	name string
	opt  characterize.Options
}

// characterizeSeries runs the stages once per item (the same card n times for --repeat, or
// each card in turn for --gpu all) into DIR/<name> and writes the comparison page
// (DIR/report.html) and the reproducibility table (DIR/<table>); an interrupted series
// keeps the runs finished and the one cut short (marked incomplete). what names the
// runs in messages ("runs", "cards").
func (a *App) characterizeSeries(ctx context.Context, r *run, items []seriesRun, sh shared, args []string, t0 time.Time, table, what string) int {
	n := len(items)
	var rs []*characterize.Result
	var names []string
	var failed []string
	for k := 1; k <= n && ctx.Err() == nil; k++ {
		it := items[k-1]
		r.env.Progress.Emit(status.Event{Step: fmt.Sprintf("%s (%d of %d)", it.name, k, n), I: k, N: n})
		res, err := it.opt.Run(ctx, r.env)
		if errors.Is(err, status.ErrInput) {
			r.done()
			return a.exitFor("characterize", err)
		}
		if err != nil {
			r.done()
			return a.fail("characterize", err)
		}
		res.Version, res.Host = a.versionString(), a.host()
		res.Command = append([]string{"gpuwatt", "characterize"}, args...)
		res.Date = time.Now().UTC().Format(time.RFC3339)
		res.Runs = append(res.Runs, characterize.Invocation{Command: res.Command, Date: res.Date, Version: res.Version})
		dir := filepath.Join(sh.out, it.name)
		if err := writeCharacterize(dir, res); err != nil {
			r.done()
			return a.fail("characterize", fmt.Errorf("--out %s: %v", dir, err))
		}
		for _, s := range res.Stages {
			if s.Status == characterize.StatusFailed {
				failed = append(failed, it.name+" "+s.Name)
			}
		}
		rs, names = append(rs, res), append(names, it.name)
	}
	r.done()
	return a.finishSeries(ctx, rs, names, failed, n, sh, t0, table, what)
}

// characterizeCardsAtOnce characterizes every card at the same time, each in a gpuwatt
// process of its own (`characterize --gpu N --out DIR/gpu-N` with the other flags as given):
// boards are independent, so n cards take the time of one instead of n times it, and a
// process per card shares no driver context, sampler or (on the twin) virtual clock with
// the others. Then it compares the cards as characterizeSeries does. A card whose process
// failed without writing results is named with the end of its messages; the others are
// still compared. An interrupt reaches every process (SIGTERM), which write what they
// measured, marked incomplete.
func (a *App) characterizeCardsAtOnce(ctx context.Context, r *run, fs *flag.FlagSet, items []seriesRun, sh shared, t0 time.Time) int {
	self, err := a.self()
	if err != nil {
		r.done()
		return a.fail("characterize", err)
	}
	common := childFlags(fs, "gpu", "out", "json", "quiet", "in-turn")
	type outcome struct {
		res  *characterize.Result
		err  error
		tail string
	}
	outs := make([]outcome, len(items))
	var wg sync.WaitGroup
	var mu sync.Mutex
	finished := 0
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := filepath.Join(sh.out, it.name)
			args := append(append([]string{"characterize"}, common...), "--gpu="+strconv.Itoa(it.opt.GPU), "--out="+dir, "--quiet")
			tail, err := runCardProcess(ctx, self, args)
			res, lerr := loadResults(dir)
			if lerr != nil && err == nil {
				err = lerr
			}
			outs[i] = outcome{res: res, err: err, tail: tail}
			mu.Lock()
			finished++
			r.env.Progress.Emit(status.Event{Step: fmt.Sprintf("%s finished (%d of %d cards)", it.name, finished, len(items)), I: finished, N: len(items)})
			mu.Unlock()
		}()
	}
	wg.Wait()
	var rs []*characterize.Result
	var names, failed []string
	for i, o := range outs {
		name := items[i].name
		if o.res == nil {
			failed = append(failed, name)
			fmt.Fprintf(a.Stderr, "gpuwatt characterize: %s: %v%s\n", name, o.err, indentTail(o.tail))
			continue
		}
		for _, s := range o.res.Stages {
			if s.Status == characterize.StatusFailed {
				failed = append(failed, name+" "+s.Name)
			}
		}
		rs, names = append(rs, o.res), append(names, name)
	}
	r.done()
	return a.finishSeries(ctx, rs, names, failed, len(items), sh, t0, "compare.json", "cards")
}

// childFlags is the flags set on fs, but those named in skip, as --name=value arguments: what
// a card's own process is given so that it runs as this one was asked to.
func childFlags(fs *flag.FlagSet, skip ...string) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(skip, f.Name) {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return out
}

// runCardProcess runs gpuwatt with args and waits for it; the end of its standard error
// comes back for the message of a card that failed. Cancelling ctx sends it SIGTERM (it
// writes what it measured) and, a minute later, SIGKILL.
func runCardProcess(ctx context.Context, self, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, self[0], append(append([]string(nil), self[1:]...), args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	var tail tailBuffer
	cmd.Stdout, cmd.Stderr = io.Discard, &tail
	err := cmd.Run()
	return tail.String(), err
}

// tailBuffer keeps the last 2 KiB written to it: a failed card's last messages, bounded.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - 2048; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// indentTail is a process's last messages, indented under the line that names it.
func indentTail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return "\n    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// finishSeries compares the runs of a series (rs, named by names; n were asked for), writes
// DIR/report.html and DIR/<table>, prints the table and says what was cut short or failed.
func (a *App) finishSeries(ctx context.Context, rs []*characterize.Result, names, failed []string, n int, sh shared, t0 time.Time, table, what string) int {
	if len(rs) > 0 {
		rp := characterize.Reproducibility(rs, names)
		page := characterize.Compare(rs, names)
		if len(rs) == 1 {
			page.Sections = append(page.Sections, rp.Section())
		}
		if err := page.WriteFile(filepath.Join(sh.out, "report.html")); err != nil {
			return a.fail("characterize", fmt.Errorf("--out %s: %v", sh.out, err))
		}
		if err := report.WriteJSON(filepath.Join(sh.out, table), rp); err != nil {
			return a.fail("characterize", fmt.Errorf("--out %s: %v", sh.out, err))
		}
		if sh.json {
			if err := report.WriteJSONTo(a.Stdout, rp); err != nil {
				return a.fail("characterize", err)
			}
		} else {
			writeSeriesTable(a.Stdout, rp, what)
		}
		if !sh.quiet {
			fmt.Fprintf(a.Stderr, "gpuwatt characterize: %d %s; wrote %s and %s (%s)\n", len(rs), what,
				filepath.Join(sh.out, "report.html"), filepath.Join(sh.out, table), time.Since(t0).Round(time.Millisecond))
		}
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(a.Stderr, "gpuwatt characterize: interrupted after %d of %d %s: what was measured is in %s\n", len(rs), n, what, sh.out)
		return interruptedCode(ctx)
	case len(failed) > 0:
		fmt.Fprintf(a.Stderr, "gpuwatt characterize: stage(s) failed: %s (see the report)\n", strings.Join(failed, ", "))
		return ExitFailure
	}
	return ExitOK
}

// writeSeriesTable prints a series' figures on stdout, where a single run prints its summary:
// for cards, each card's value and the verdict; for repeats, the mean and the run-to-run CV.
func writeSeriesTable(w io.Writer, rp *characterize.Repro, what string) {
	for _, f := range rp.Figures {
		if what == "cards" {
			vs := make([]string, len(f.Values))
			for i, v := range f.Values {
				vs[i] = fmt.Sprintf("%.4g", v)
			}
			fmt.Fprintf(w, "  %-44s %-30s %s\n", f.Name, strings.Join(vs, " | "), f.Verdict)
			continue
		}
		fmt.Fprintf(w, "  %-44s mean %-10s CV %.2f %%\n", f.Name, fmt.Sprintf("%.4g", f.Mean), f.CVPct)
	}
}

// stageList is --stages as a list, each stage once ("": all).
func stageList(flagValue string) []string {
	var stages []string
	if flagValue == "" {
		return nil
	}
	for _, st := range strings.Split(flagValue, ",") {
		if st = strings.TrimSpace(st); !slices.Contains(stages, st) {
			stages = append(stages, st)
		}
	}
	return stages
}

// resumeFrom reads the results --resume continues from dir; the run must be resumed as
// it was begun (quick or full).
func resumeFrom(dir string, quick bool) (*characterize.Result, error) {
	prev, err := loadResults(dir)
	if err != nil {
		return nil, fmt.Errorf("--resume: %v", err)
	}
	if quick != prev.Quick {
		return nil, fmt.Errorf("--resume: the run in %s was %s; resume it the same way (with%s --quick)", dir, map[bool]string{true: "--quick", false: "a full run"}[prev.Quick], map[bool]string{true: "", false: "out"}[prev.Quick])
	}
	return prev, nil
}

// cardRuns is one run of opt per GPU of --gpu sel (cards; nil: all devs), each into
// DIR/gpu-N; a GPU named twice or beyond devs is bad input.
func cardRuns(cards []int, sel string, devs []gpu.Device, opt characterize.Options) ([]seriesRun, error) {
	n := len(devs)
	if cards == nil {
		for _, d := range devs {
			cards = append(cards, d.Info().Index)
		}
	}
	seen := map[int]bool{}
	var items []seriesRun
	for _, g := range cards {
		if seen[g] {
			return nil, fmt.Errorf("--gpu %s: GPU %d named twice", sel, g)
		}
		seen[g] = true
		if g >= n {
			return nil, fmt.Errorf("--gpu %s: no GPU %d (found %d)", sel, g, n)
		}
		o := opt
		o.GPU = g
		if err := o.Validate(); err != nil {
			return nil, err
		}
		items = append(items, seriesRun{name: fmt.Sprintf("gpu-%d", g), opt: o})
	}
	return items, nil
}
