package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/device"
)

// shared are the flags every verb shares, with the same names and help text everywhere.
type shared struct {
	dev   deviceFlags
	gpu   int
	out   string
	force bool // --force: write into a --out that holds files
	// resume is set by a verb whose --resume reads --out (characterize): its files are
	// expected there.
	resume bool
	json   bool
	quiet  bool
}

// Which shared flags a verb registers (--device and --sim-config always).
const (
	withGPU = 1 << iota
	withOut
	withJSON
	withQuiet
	// withRealAuto: --device auto means this machine's GPUs and nothing else (no driver:
	// exit 2), for the verbs that record or account (measure, job, serve, call).
	withRealAuto
	withAll = withGPU | withOut | withJSON | withQuiet
)

// Help texts of the shared flags.
const (
	gpuHelp   = "index of the GPU (as the driver numbers them) to run on and measure (default 0: the first)"
	forceHelp = "write into an --out directory that already holds files, replacing those of the same names"
	jsonHelp  = "print the results as JSON to stdout"
	quietHelp = "no progress lines on stderr"
)

// register adds --device and --sim-config, and the shared flags in which, to fs. out is
// --out's default ("" for none).
func (s *shared) register(fs *flag.FlagSet, which int, out string) {
	help := device.DeviceHelp
	if which&withRealAuto != 0 {
		help, s.dev.realOnly = device.RealDeviceHelp, true
	}
	fs.StringVar(&s.dev.device, "device", "auto", help)
	fs.StringVar(&s.dev.simConfig, "sim-config", "", device.SimConfigHelp)
	if which&withGPU != 0 {
		fs.IntVar(&s.gpu, "gpu", 0, gpuHelp)
	}
	if which&withOut != 0 {
		fs.StringVar(&s.out, "out", out, outHelp(fs.Name(), out))
		fs.BoolVar(&s.force, "force", false, forceHelp)
	}
	if which&withJSON != 0 {
		fs.BoolVar(&s.json, "json", false, jsonHelp)
	}
	if which&withQuiet != 0 {
		fs.BoolVar(&s.quiet, "quiet", false, quietHelp)
	}
}

// OutFiles are the files each verb writes into --out, as its --out help names them (the
// help test runs each verb and checks that every one is written).
var OutFiles = map[string][]string{
	"measure":      {"trace.csv", "trace.json", "summary.json", "report.html", "marks.txt (where the command wrote markers)"},
	"micro":        {"results.json", "results.csv", "report.html", "trace.csv", "trace.json"},
	"archline":     {"results.json", "report.html", "trace.csv", "trace.json"},
	"sensor":       {"sensor.json", "results.json", "report.html", "trace.csv", "trace.json"},
	"profile":      {"profile.json", "profile.csv", "report.html"},
	"loadlevel":    {"results.json", "report.html"},
	"characterize": {"report.html", "results.json", "sensor.json"},
}

// outHelp is --out's help for a verb: the files it writes there, and what happens without
// --out where it has no default (nothing is written).
func outHelp(verb, def string) string {
	files := "the verb's files"
	if fs := OutFiles[verb]; len(fs) > 0 {
		files = strings.Join(fs[:len(fs)-1], ", ") + " and " + fs[len(fs)-1]
	}
	h := "directory to write " + files + " into (created; an existing one must be empty, or see --force)"
	if def == "" {
		h += "; default: none, nothing is written"
	}
	return h
}

// parseTime reads a time on a trace's axis: a duration with a unit ("3.2s", "3200ms",
// "-0.1s"). "" means not given (nil).
func parseTime(flagName, s string) (*time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return nil, fmt.Errorf("%s %s: a bare number; want a time with a unit, such as %ss or %sms", flagName, s, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, fmt.Errorf("%s %s: want a time on the trace's t_s axis with a unit, such as 3.2s or 3200ms", flagName, s)
	}
	return &d, nil
}

// parseWatts reads a power in watts: "52.5" or "52.5W".
func parseWatts(s string) (float64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(t, "W"), "w"))
	w, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
		return 0, errors.New("want a power in watts >= 0, such as 52.5 or 52.5W")
	}
	return w, nil
}
