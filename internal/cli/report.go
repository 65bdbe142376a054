package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuwatt/gpuwatt/internal/archline"
	"github.com/gpuwatt/gpuwatt/internal/characterize"
	"github.com/gpuwatt/gpuwatt/internal/infile"
	"github.com/gpuwatt/gpuwatt/internal/report"
	"github.com/gpuwatt/gpuwatt/internal/trace"
)

const reportSynopsis = "[--out FILE] [--json] [--refit] DIR [DIR2 ...]"

// report is `gpuwatt report`: re-render report.html from the results.json of one or more
// `gpuwatt characterize` runs; several are compared side by side.
func (a *App) report(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	// --device is accepted as in every verb, and checked, but report opens no device: it
	// re-renders what each results.json recorded (its device, simulated or not).
	var sh shared
	sh.register(fs, withJSON, "")
	fs.Lookup("json").Usage = "also print the reproducibility table (each headline figure over the directories: values, intervals, mean, CV, card to card) as JSON"
	fs.Lookup("device").Usage = "accepted as in every verb and checked, but unused: report opens no device; it re-renders what each results.json recorded (" + fs.Lookup("device").Usage + ")"
	refit := fs.Bool("refit", false, "fit each archline again from its stored points with this gpuwatt's analysis (intervals, checks, memory split) before rendering")
	out := fs.String("out", "", "the HTML file to write (default DIR/report.html for one DIR; required for several)")
	if code, ok := a.parseFlags(fs, args, reportSynopsis); !ok {
		return code
	}
	if err := sh.dev.spec().Validate(); err != nil {
		return a.exitFor("report", err)
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		return a.usageError("report", fmt.Errorf("no directory: gpuwatt report %s", reportSynopsis))
	}
	if len(dirs) > 1 && *out == "" {
		return a.usageError("report", fmt.Errorf("%d directories: --out FILE names the comparison page", len(dirs)))
	}
	var rs []*characterize.Result
	for _, d := range dirs {
		r, err := loadReport(d, *refit)
		if err != nil {
			return a.usageError("report", err)
		}
		rs = append(rs, r)
	}
	dest := *out
	if dest == "" {
		dest = filepath.Join(dirs[0], "report.html")
	}
	var inputs []string
	for _, d := range dirs {
		inputs = append(inputs, filepath.Join(d, "results.json"))
		inputs = append(inputs, traceFiles(d)...)
	}
	if err := overwritesInput("--out", dest, inputs...); err != nil {
		return a.usageError("report", err)
	}
	page := characterize.Compare(rs, dirs)
	if err := page.WriteFile(dest); err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			// A directory that is not there, or not ours: a bad --out.
			return a.usageError("report", fmt.Errorf("--out %s: %v", dest, unwrapPath(err)))
		}
		return a.fail("report", fmt.Errorf("--out %s: %v", dest, err)) // a full disk: a failure
	}
	if sh.json {
		if err := report.WriteJSONTo(a.Stdout, characterize.Reproducibility(rs, characterize.ShortNames(dirs))); err != nil {
			return a.fail("report", err)
		}
		return ExitOK
	}
	fmt.Fprintf(a.Stdout, "wrote %s\n", dest)
	return ExitOK
}

// loadResults reads DIR/results.json as written by `gpuwatt characterize`.
func loadResults(dir string) (*characterize.Result, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", dir, unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory (want the --out DIR of gpuwatt characterize)", dir)
	}
	path := filepath.Join(dir, "results.json")
	b, err := infile.ReadFile(path, infile.JSONLimit)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, unwrapPath(err))
	}
	return characterize.ParseResults(b, path)
}

// loadReport reads DIR/results.json as `report` compares it: characterize's, or archline's
// (with DIR/trace.csv, where there is one, giving points recorded before they carried
// their memory power that figure); refit fits every archline again from its points.
func loadReport(dir string, refit bool) (*characterize.Result, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", dir, unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory (want the --out DIR of gpuwatt characterize or archline)", dir)
	}
	path := filepath.Join(dir, "results.json")
	b, err := infile.ReadFile(path, infile.JSONLimit)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, unwrapPath(err))
	}
	r, err := characterize.ParseReport(b, path)
	if err != nil {
		return nil, err
	}
	if r.Archline != nil {
		if tp := filepath.Join(dir, "trace.csv"); fileExists(tp) {
			if tr, err := trace.Load(tp); err == nil && archline.FillMemory(r.Archline, tr) {
				refit = true
			}
		}
		if refit {
			archline.Reanalyse(r.Archline)
		}
	}
	return r, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
