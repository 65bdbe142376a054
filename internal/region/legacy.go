package region

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/gpuwatt/gpuwatt/internal/status"
)

// The texts of Summarize's two warnings that runs of many kernels repeat, as results.json
// files written before warnings had codes hold them.
var (
	legacyDisagree = regexp.MustCompile(`^(\S+) and (.+?) disagree by ([+-]?[0-9.]+) % \([^)]*\): (.*)$`)
	legacyRun      = regexp.MustCompile(`over an? \S+ \S+ run\b`)
	legacyMissed   = regexp.MustCompile(`^(\S+): about (\d+) of \d+ updates were missed \((.*)\)$`)
)

// Legacy gives the warnings of an old results.json (plain strings: no Code) that Summarize
// raises for every kernel or point the code and key they have now, so that status.Group
// tells them once on a page rendered again from that file; the others are kept as they
// are. New results never go through it.
func Legacy(ws []status.Warning) []status.Warning {
	out := make([]status.Warning, len(ws))
	for i, w := range ws {
		out[i] = w
		if w.Code != "" {
			continue
		}
		if m := legacyDisagree.FindStringSubmatch(w.Message); m != nil {
			if pct, err := strconv.ParseFloat(m[3], 64); err == nil {
				why := legacyRun.ReplaceAllString(m[4], "over a short run")
				out[i].Code, out[i].Value, out[i].Unit = CodeChannelDisagreement, pct, "%"
				out[i].Key = fmt.Sprintf("%s and %s disagree by more than %g %%: %s", m[1], m[2], 100*ChannelDisagreement, why)
			}
		} else if m := legacyMissed.FindStringSubmatch(w.Message); m != nil {
			if n, err := strconv.Atoi(m[2]); err == nil {
				out[i].Code, out[i].Value, out[i].Unit = CodeMissedUpdates, float64(n), "missed updates"
				out[i].Key = fmt.Sprintf("%s: updates were missed (%s)", m[1], m[3])
			}
		}
	}
	return out
}
