package cli

import (
	"flag"
	"strings"

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
