package region

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// disagreeRe matches agreement's warning (disagreeFormat): "A and B disagree by +6.2 % (x J vs
// y J): why".
var disagreeRe = regexp.MustCompile(`^(.+?) and (.+?) disagree by ([+-]?[0-9.]+) % \([^)]*\): (.*)$`)

// runRe is the run length inside the moving-average channels' reason.
var runRe = regexp.MustCompile(`over an? (\S+ \S+) run\b`)

// GroupMin is how many kernels must share one channel disagreement before it is told once.
const GroupMin = 3

// Named are the warnings of one kernel (or point) of a run of many.
type Named struct {
	Name     string
	Warnings []string
}

// GroupDisagreements turns the per-kernel warnings of a run of many regions into one list.
// A channel disagreement (agreement's warning) that GroupMin or more kernels share for one reason (with --quick's
// 2 s runs the 1 s moving-average channels miss on many kernels) becomes one warning that
// gives the range and names every kernel with its figure; everything else is kept as it
// was, prefixed with its kernel, in the order met.
func GroupDisagreements(rows []Named) []string {
	type member struct {
		kernel, text, run string
		pct               float64
	}
	type group struct {
		a, b, why string
		members   []member
	}
	type item struct {
		text string // a warning kept as it was
		g    *group // or the first place a group was met
	}
	var items []item
	groups := map[string]*group{}
	for _, r := range rows {
		for _, w := range r.Warnings {
			m := disagreeRe.FindStringSubmatch(w)
			var pct float64
			var err error
			if m != nil {
				pct, err = strconv.ParseFloat(m[3], 64)
			}
			if m == nil || err != nil {
				items = append(items, item{text: r.Name + ": " + w})
				continue
			}
			run := ""
			if rm := runRe.FindStringSubmatch(m[4]); rm != nil {
				run = rm[1]
			}
			why := runRe.ReplaceAllString(m[4], "over a RUN run")
			key := m[1] + "\x00" + m[2] + "\x00" + why
			g := groups[key]
			if g == nil {
				g = &group{a: m[1], b: m[2], why: why}
				groups[key] = g
				items = append(items, item{g: g})
			}
			g.members = append(g.members, member{kernel: r.Name, text: r.Name + ": " + w, run: run, pct: pct})
		}
	}
	var out []string
	for _, it := range items {
		if it.g == nil {
			out = append(out, it.text)
			continue
		}
		g := it.g
		if len(g.members) < GroupMin {
			for _, mb := range g.members {
				out = append(out, mb.text)
			}
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		var runs, each []string
		for _, mb := range g.members {
			lo, hi = math.Min(lo, mb.pct), math.Max(hi, mb.pct)
			if mb.run != "" && !slices.Contains(runs, mb.run) {
				runs = append(runs, mb.run)
			}
			each = append(each, fmt.Sprintf("%s %+.1f %%", mb.kernel, mb.pct))
		}
		slices.Sort(runs)
		run := "the"
		switch len(runs) {
		case 0:
		case 1:
			run = "a " + runs[0]
		default:
			run = "a " + runs[0] + " … " + runs[len(runs)-1]
		}
		why := strings.ReplaceAll(g.why, "a RUN", run)
		out = append(out, fmt.Sprintf("%s and %s disagree by more than %g %% on %d of %d kernels, %+.1f … %+.1f %% (%s): %s",
			g.a, g.b, 100*ChannelDisagreement, len(g.members), len(rows), lo, hi, strings.Join(each, ", "), why))
	}
	return out
}
