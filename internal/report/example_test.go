package report_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/gpuwatt/gpuwatt/internal/report"
)

// A power trace: sensor readings drawn as steps, the command's run shaded and marked,
// and the board's power limit as a reference line.
func ExamplePlot() {
	p := report.Plot{
		Title:  "Power during the command",
		XLabel: "time (s)",
		YLabel: "power (W)",
		Series: []report.Series{{
			Name:  "power.instant",
			X:     []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5},
			Y:     []float64{62, 410, 655, 690, 120, 64},
			Style: report.Step,
		}},
		VLines: []report.VLine{{X: 0.1, Label: "cmd start"}, {X: 0.4, Label: "cmd end"}},
		HLines: []report.HLine{{Y: 700, Label: "power limit 700 W"}},
		Bands:  []report.Band{{X0: 0.1, X1: 0.4, Label: "command"}},
		YMin:   report.Float(0),
	}
	svg := p.SVG()
	fmt.Println(strings.SplitN(svg, "\n", 2)[0])
	// Output:
	// <svg xmlns="http://www.w3.org/2000/svg" width="800" height="360" viewBox="0 0 800 360" font-family="system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif" font-size="12" fill="#222">
}

// A page with a notice, a table, warnings and a plot, written as one self-contained HTML file.
func ExamplePage() {
	page := report.Page{
		Title:  "gpuwatt measure",
		Notice: "Measured on the sim device: no GPU was found",
		Sections: []report.Section{{
			Title: "Energy",
			Text:  "Energy of the command, integrated over its run.",
			Table: &report.Table{
				Header: []string{"region", "energy (J)"},
				Rows:   [][]string{{"command", "3851.2"}},
			},
			Warnings: []string{"coverage 97.5 % < 100 %"},
			Plots: []report.Plot{{
				XLabel: "time (s)", YLabel: "power (W)",
				Series: []report.Series{{Name: "power", X: []float64{0, 1, 2}, Y: []float64{60, 650, 70}, Style: report.Step}},
			}},
		}},
	}
	if err := page.Render(os.Stdout); err != nil {
		fmt.Println(err)
	}
}
