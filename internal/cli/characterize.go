package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"github.com/gpuwatt/gpuwatt/internal/characterize"
	"github.com/gpuwatt/gpuwatt/internal/correct"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/status"
)

const characterizeSynopsis = "[--device ...] [--gpu N] [--quick] [--stages sensor,micro,archline,loadlevel] [--resume] [--repeat N] [--out DIR] [--json]"

// characterize is `gpuwatt characterize`: the energy datasheet of a GPU in one command
// (internal/characterize runs the stages and renders the page).
func (a *App) characterize(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("characterize", flag.ContinueOnError)
	var sh shared
	sh.register(fs, withAll, "gpuwatt-characterize")
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
	if *repeat < 1 || *repeat > 100 {
		return a.usageError("characterize", fmt.Errorf("--repeat %d: want 1 to 100 runs", *repeat))
	}
	if *repeat > 1 && *resume {
		return a.usageError("characterize", fmt.Errorf("--repeat and --resume: resume each run-K directory on its own"))
	}
	var stages []string
	if *stagesFlag != "" {
		for _, st := range strings.Split(*stagesFlag, ",") {
			if st = strings.TrimSpace(st); !slices.Contains(stages, st) {
				stages = append(stages, st)
			}
		}
	}
	opt := characterize.Options{GPU: sh.gpu, Quick: *quick, Stages: stages, LoadContexts: *contexts, OpenGPU: openGPUFFT}
	if err := opt.Validate(); err != nil { // before --resume reads anything
		return a.usageError("characterize", err)
	}
	var prev *characterize.Results
	if *resume {
		var err error
		if prev, err = loadResults(sh.out); err != nil {
			return a.usageError("characterize", fmt.Errorf("--resume: %v", err))
		}
		if *quick != prev.Quick {
			return a.usageError("characterize", fmt.Errorf("--resume: the run in %s was %s; resume it the same way (with%s --quick)", sh.out, map[bool]string{true: "--quick", false: "a full run"}[prev.Quick], map[bool]string{true: "", false: "out"}[prev.Quick]))
		}
	}
	opt.Resume = prev
	sh.resume = *resume
	r, code := a.start("characterize", sh, nil)
	if r == nil {
		return code
	}
	defer r.close()
	t0 := time.Now()
	if *repeat > 1 {
		return a.characterizeRepeat(ctx, r, opt, sh, args, *repeat, t0)
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

func writeCharacterize(dir string, res *characterize.Results) error {
	var files []outFile
	if res.SensorProfile != nil {
		files = append(files, outFile{"sensor.json", func(dir string) error {
			return atomicfile.Write(filepath.Join(dir, "sensor.json"), func(w io.Writer) error { return correct.WriteProfile(w, *res.SensorProfile) })
		}})
	}
	files = append(files, outFile{"report.html", func(dir string) error { return res.Page().WriteFile(filepath.Join(dir, "report.html")) }})
	return writeFiles(dir, &res.Status, files, outFile{"results.json", func(dir string) error { return report.WriteJSON(filepath.Join(dir, "results.json"), res) }})
}

// characterizeRepeat runs the stages n times into DIR/run-K and writes the
// reproducibility page (DIR/report.html) and DIR/repeat.json; an interrupted run keeps
// the runs finished and the one cut short (marked incomplete).
func (a *App) characterizeRepeat(ctx context.Context, r *run, opt characterize.Options, sh shared, args []string, n int, t0 time.Time) int {
	var rs []*characterize.Results
	var names []string
	var failed []string
	for k := 1; k <= n && ctx.Err() == nil; k++ {
		r.env.Progress.Emit(status.Event{Step: fmt.Sprintf("run %d of %d", k, n), I: k, N: n})
		res, err := opt.Run(ctx, r.env)
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
		dir := filepath.Join(sh.out, fmt.Sprintf("run-%d", k))
		if err := writeCharacterize(dir, res); err != nil {
			r.done()
			return a.fail("characterize", fmt.Errorf("--out %s: %v", dir, err))
		}
		for _, s := range res.Stages {
			if s.Status == characterize.StatusFailed {
				failed = append(failed, fmt.Sprintf("run-%d %s", k, s.Name))
			}
		}
		rs, names = append(rs, res), append(names, fmt.Sprintf("run-%d", k))
	}
	r.done()
	if len(rs) > 0 {
		rp := characterize.Reproducibility(rs, names)
		page := characterize.Compare(rs, names)
		if len(rs) == 1 {
			page.Sections = append(page.Sections, rp.Section())
		}
		if err := page.WriteFile(filepath.Join(sh.out, "report.html")); err != nil {
			return a.fail("characterize", fmt.Errorf("--out %s: %v", sh.out, err))
		}
		if err := report.WriteJSON(filepath.Join(sh.out, "repeat.json"), rp); err != nil {
			return a.fail("characterize", fmt.Errorf("--out %s: %v", sh.out, err))
		}
		if sh.json {
			if err := report.WriteJSONTo(a.Stdout, rp); err != nil {
				return a.fail("characterize", err)
			}
		}
		if !sh.quiet {
			fmt.Fprintf(a.Stderr, "gpuwatt characterize: %d runs; wrote %s and %s (%s)\n", len(rs),
				filepath.Join(sh.out, "report.html"), filepath.Join(sh.out, "repeat.json"), time.Since(t0).Round(time.Millisecond))
			for _, f := range rp.Figures {
				fmt.Fprintf(a.Stderr, "  %-44s mean %-10s CV %.2f %%\n", f.Name, fmt.Sprintf("%.4g", f.Mean), f.CVPct)
			}
		}
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(a.Stderr, "gpuwatt characterize: interrupted after %d of %d runs: what was measured is in %s\n", len(rs), n, sh.out)
		return interruptedCode(ctx)
	case len(failed) > 0:
		fmt.Fprintf(a.Stderr, "gpuwatt characterize: stage(s) failed: %s (see the report)\n", strings.Join(failed, ", "))
		return ExitFailure
	}
	return ExitOK
}
