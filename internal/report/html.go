package report

import (
	"bytes"
	"fmt"
	"github.com/gpuwatt/gpuwatt/internal/atomicfile"
	"html/template"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Page is one self-contained HTML report: a title, an optional highlighted notice, and
// sections of text, warnings, a table and plots. Render writes it as a single HTML5 file
// with inline CSS and inline SVG: no scripts, fonts, images or links to anything outside
// the file. The output is also well-formed XML (every tag closed), so it can be checked
// with encoding/xml.
type Page struct {
	Title    string // also the document title; empty means "gpuwatt report"
	Subtitle string // a line under the title: device, date, command
	// Notice is shown in a highlighted banner at the top, e.g. "Measured on the sim
	// device: no GPU was found".
	Notice   string
	Sections []Section
}

// Section is one part of a Page, rendered in this order: title, text, warnings, table,
// plots, raw HTML.
type Section struct {
	Title string
	// Text is plain text (escaped); blank lines separate paragraphs.
	Text  string
	Table *Table
	Plots []Plot
	// Raw is inserted as is. It is the caller's job to keep it safe and well-formed.
	Raw template.HTML
	// Warnings are shown as a highlighted list, e.g. the warnings of an analysis.
	Warnings []string
	// Fold, where set, puts the section in a folded part of the page (<details>) named
	// Fold, closed until the reader opens it; consecutive sections with the same Fold share
	// one, their titles as subheadings. The page's first screen stays short.
	Fold string
	// Side sets the table and the plots side by side where the window is wide enough (a
	// page's first screen: the figures beside their picture).
	Side bool
}

// Table is a simple table of strings.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
	// Align gives each column's alignment, "l" or "r". Without it, columns whose cells
	// all start with a number are right-aligned and the others left-aligned.
	Align []string
}

// Render writes the page as one HTML document to w. Nothing is written if rendering fails.
func (p Page) Render(w io.Writer) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p.view()); err != nil {
		return fmt.Errorf("report: rendering page %q: %w", p.Title, err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteFile renders the page to path atomically (a temporary file, then a rename).
func (p Page) WriteFile(path string) error {
	var buf bytes.Buffer
	if err := p.Render(&buf); err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, buf.Bytes())
}

type pageView struct {
	Title, Subtitle, Notice string
	TOC                     bool
	Sections                []sectionView
}

type sectionView struct {
	ID, Title string
	// FoldStart opens a <details> named FoldStart before the section; FoldEnd closes it
	// after; InFold renders the title as a subheading.
	FoldStart       string
	FoldEnd, InFold bool
	Side            bool
	Paragraphs      []string
	Warnings        []string
	Table           *tableView
	Plots           []template.HTML
	Raw             template.HTML
}

type tableView struct {
	Caption string
	Header  []cellView
	Rows    [][]cellView
}

type cellView struct {
	Text  string
	Right bool
}

// clean replaces what XML cannot carry (control characters, invalid UTF-8) with U+FFFD,
// keeping tabs and newlines; html/template does the escaping.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || xmlChar(r) {
			return r
		}
		return '\uFFFD'
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return notANumber.ReplaceAllString(s, "${1}unavailable")
}

// notANumber is a NaN formatted into a page's text (fmt's %g, %f, strconv): no page shows
// one, whatever its input (a results.json found by the fuzzer put "NaN" on report's page,
// issue 29); "unavailable" stands in its place. A table cell goes further (cleanCell).
var notANumber = regexp.MustCompile(`(^|[^\pL\pN_])[+-]?NaN\b`)

// infinite is an infinity formatted as a table cell's figure ("+Inf W"); prose may name
// one ("chains grow to +Inf"), a figure may not.
var infinite = regexp.MustCompile(`^(\s*)[+-]?Inf\b`)

// cleanCell is clean for a table's cell, its infinities unavailable too.
func cleanCell(s string) string {
	return infinite.ReplaceAllString(clean(s), "${1}unavailable")
}

func (p Page) view() pageView {
	v := pageView{
		Title:    clean(p.Title),
		Subtitle: clean(p.Subtitle),
		Notice:   clean(p.Notice),
		TOC:      len(p.Sections) >= 3,
	}
	for _, s := range p.Sections {
		if s.Fold != "" {
			v.TOC = false // the folds' names are the contents
		}
	}
	if v.Title == "" {
		v.Title = "gpuwatt report"
	}
	ids := clipIDs{}
	for i, s := range p.Sections {
		sv := sectionView{
			ID:         "s" + strconv.Itoa(i+1),
			Title:      clean(s.Title),
			Paragraphs: paragraphs(clean(s.Text)),
			Raw:        s.Raw,
			Side:       s.Side,
		}
		if sv.Title == "" {
			sv.Title = "Section " + strconv.Itoa(i+1)
		}
		for _, w := range s.Warnings {
			sv.Warnings = append(sv.Warnings, clean(w))
		}
		if s.Table != nil {
			sv.Table = s.Table.view()
		}
		for _, pl := range s.Plots {
			sv.Plots = append(sv.Plots, template.HTML(ids.unique(pl.SVG())))
		}
		sv.Raw = template.HTML(ids.unique(string(sv.Raw)))
		if s.Fold != "" {
			sv.InFold = true
			if i == 0 || p.Sections[i-1].Fold != s.Fold {
				sv.FoldStart = clean(s.Fold)
			}
			sv.FoldEnd = i == len(p.Sections)-1 || p.Sections[i+1].Fold != s.Fold
		}
		v.Sections = append(v.Sections, sv)
	}
	return v
}

// clipIDs counts the clip-path ids of the plots on a page. A plot's id is a hash of the
// plot, so the same plot twice on one page (a run compared with itself, or two runs with
// identical plots) would give two elements one id, which HTML forbids.
type clipIDs map[string]int

var clipIDPattern = regexp.MustCompile(`gwclip-[0-9a-f]{16}`)

// unique renames the ids in svg already used on the page (gwclip-HASH becomes
// gwclip-HASH-2, -3 ...), definitions and references alike.
func (seen clipIDs) unique(svg string) string {
	found := clipIDPattern.FindAllString(svg, -1)
	done := map[string]bool{}
	for _, id := range found {
		if done[id] {
			continue
		}
		done[id] = true
		seen[id]++
		if n := seen[id]; n > 1 {
			svg = strings.ReplaceAll(svg, id, id+"-"+strconv.Itoa(n))
		}
	}
	return svg
}

// breakable escapes a table cell and lets a browser break it after each comma: a sensor
// model ("boxcar:window=1.001917s,period=100.247ms,delay=25.125ms") has no space in it,
// so it would otherwise set the width of its column.
func breakable(s string) template.HTML {
	return template.HTML(strings.ReplaceAll(template.HTMLEscapeString(s), ",", ",<wbr/>"))
}

// paragraphs splits text at blank lines.
func paragraphs(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var out []string
	for _, p := range strings.Split(s, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (t *Table) view() *tableView {
	ncol := len(t.Header)
	for _, r := range t.Rows {
		ncol = max(ncol, len(r))
	}
	right := make([]bool, ncol)
	for c := range ncol {
		if c < len(t.Align) && (t.Align[c] == "l" || t.Align[c] == "r") {
			right[c] = t.Align[c] == "r"
			continue
		}
		numeric, has := true, false
		for _, r := range t.Rows {
			if c < len(r) && strings.TrimSpace(r[c]) != "" {
				has = true
				numeric = numeric && startsWithNumber(r[c])
			}
		}
		right[c] = has && numeric
	}
	tv := &tableView{Caption: clean(t.Caption)}
	if len(t.Header) > 0 {
		for c := range ncol {
			tv.Header = append(tv.Header, cellView{Text: clean(at(t.Header, c)), Right: right[c]})
		}
	}
	for _, r := range t.Rows {
		row := make([]cellView, ncol)
		for c := range ncol {
			row[c] = cellView{Text: cleanCell(at(r, c)), Right: right[c]}
		}
		tv.Rows = append(tv.Rows, row)
	}
	return tv
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

// startsWithNumber reports whether the first word of s is a number ("712.3", "-5",
// "1e3", "12.5 %", "690 W").
func startsWithNumber(s string) bool {
	f := strings.Fields(s)
	if len(f) == 0 {
		return false
	}
	w := strings.TrimSuffix(strings.TrimPrefix(f[0], "±"), "%")
	_, err := strconv.ParseFloat(w, 64)
	return err == nil
}

const pageCSS = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: #1b1b1b;
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  overflow-wrap: break-word; /* a long path or command line breaks rather than widen the page */ }
@media (max-width: 600px) { main { padding: 16px 12px 32px; } }
main { max-width: 1232px; margin: 0 auto; padding: 28px 24px 48px; }
/* Text and plots keep a readable measure; tables may use the whole width (a 1280 px window). */
header, nav, p, .notice, ul.warnings, figure, h2 { max-width: 880px; }
h1 { font-size: 26px; line-height: 1.25; margin: 0 0 4px; font-weight: 650; }
details.fold { margin: 10px 0; border-top: 1px solid #ccc; border-bottom: 1px solid #ccc; }
details.fold > summary { cursor: pointer; font-size: 18px; font-weight: 620; padding: 9px 0; }
details.fold[open] > summary { border-bottom: 1px solid #ddd; }
h3 { font-size: 16px; line-height: 1.3; margin: 22px 0 8px; font-weight: 620; max-width: 880px; }
h2 { font-size: 19px; line-height: 1.3; margin: 36px 0 10px; padding-bottom: 4px;
  border-bottom: 1px solid #ddd; font-weight: 620; }
p { margin: 8px 0; }
.subtitle { color: #555; margin: 0 0 12px; }
.notice { margin: 16px 0; padding: 10px 14px; background: #fff5d9; border: 1px solid #f0d58c;
  border-left: 5px solid #E69F00; border-radius: 3px; }
nav { margin: 16px 0; font-size: 14px; color: #555; }
nav ol { margin: 4px 0; padding-left: 22px; }
a { color: #0a5fa4; }
ul.warnings { margin: 10px 0; padding: 8px 14px 8px 32px; background: #fdeee8;
  border: 1px solid #f3c5b3; border-left: 5px solid #D55E00; border-radius: 3px; }
ul.warnings li { margin: 2px 0; }
figure { margin: 18px 0; }
figure svg { display: block; max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 12px 0; font-size: 14px; font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; color: #555; padding: 0 0 6px; font-size: 13px; }
th, td { padding: 4px 7px; text-align: left; vertical-align: top; border-bottom: 1px solid #e4e4e4; }
th { font-weight: 600; border-bottom: 2px solid #999; }
td { overflow-wrap: break-word; }
tbody tr:nth-child(even) { background: #f8f8f8; }
.r { text-align: right; }
td.r { white-space: nowrap; }
.tablewrap { overflow-x: auto; }
.side { display: flex; flex-wrap: wrap; gap: 0 28px; align-items: flex-start; }
.side > .tablewrap { flex: 0 1 auto; min-width: 0; max-width: 100%; }
.side > figure { flex: 1 1 400px; min-width: 0; margin-top: 4px; }
footer { margin-top: 40px; color: #888; font-size: 12px; }
@media print {
  body { font-size: 11pt; }
  main { max-width: none; padding: 0; }
  nav { display: none; }
  h2 { break-after: avoid; }
  figure, table, ul.warnings { break-inside: avoid; }
  details.fold { border: none; padding: 0; }
  .notice, ul.warnings, tbody tr { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
`

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"breakable": breakable}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<meta name="generator" content="gpuwatt"/>
<title>{{.Title}}</title>
<style>` + pageCSS + `</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
{{- with .Subtitle}}
<p class="subtitle">{{.}}</p>
{{- end}}
{{- with .Notice}}
<div class="notice" role="note">{{.}}</div>
{{- end}}
</header>
{{- if .TOC}}
<nav><strong>Contents</strong>
<ol>
{{- range .Sections}}
<li><a href="#{{.ID}}">{{.Title}}</a></li>
{{- end}}
</ol>
</nav>
{{- end}}
{{- range .Sections}}
{{- with .FoldStart}}
<details class="fold"><summary>{{.}}</summary>
{{- end}}
<section id="{{.ID}}">
{{- if .InFold}}
<h3>{{.Title}}</h3>
{{- else}}
<h2>{{.Title}}</h2>
{{- end}}
{{- range .Paragraphs}}
<p>{{.}}</p>
{{- end}}
{{- with .Warnings}}
<ul class="warnings">
{{- range .}}
<li>{{.}}</li>
{{- end}}
</ul>
{{- end}}
{{- if .Side}}
<div class="side">
{{- end}}
{{- with .Table}}
<div class="tablewrap"><table>
{{- with .Caption}}
<caption>{{.}}</caption>
{{- end}}
{{- with .Header}}
<thead><tr>{{range .}}<th{{if .Right}} class="r"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
{{- end}}
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td{{if .Right}} class="r"{{end}}>{{breakable .Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
{{- end}}
{{- range .Plots}}
<figure>
{{.}}</figure>
{{- end}}
{{- if .Side}}
</div>
{{- end}}
{{- with .Raw}}
{{.}}
{{- end}}
</section>
{{- if .FoldEnd}}
</details>
{{- end}}
{{- end}}
<footer>Generated by gpuwatt. This file is self-contained: it loads no scripts, fonts or other resources.</footer>
</main>
</body>
</html>
`))
