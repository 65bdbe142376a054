package cli

import (
	"flag"

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
	// exit 2), for the verbs that record or account (measure, job, serve).
	withRealAuto
	withAll = withGPU | withOut | withJSON | withQuiet
)

// Help texts of the shared flags.
const (
	gpuHelp   = "index of the GPU (as the driver numbers them) to run on and measure"
	outHelp   = "directory for results.json, report.html and the verb's other files (created; an existing one must be empty, or see --force)"
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
		fs.StringVar(&s.out, "out", out, outHelp)
		fs.BoolVar(&s.force, "force", false, forceHelp)
	}
	if which&withJSON != 0 {
		fs.BoolVar(&s.json, "json", false, jsonHelp)
	}
	if which&withQuiet != 0 {
		fs.BoolVar(&s.quiet, "quiet", false, quietHelp)
	}
}
