package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/testkit"
)

// browserWidths are the window widths the pages must fit: a laptop's browser and a phone's.
// At the phone's width a wide table may scroll inside its own box (.tablewrap); nothing else
// may reach past the window.
var browserWidths = []int{1280, 390}

// findChromium returns Debian's chromium (or the browser named by GPUWATT_CHROMIUM). Without
// one the browser check is skipped, saying why, unless GPUWATT_REQUIRE_BROWSER is set (as
// .ci/run sets it), which makes the absence a failure.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("GPUWATT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	why := "no chromium on PATH: the pages are not checked in a browser (apt-get install chromium; .ci/run does)"
	if os.Getenv("GPUWATT_REQUIRE_BROWSER") != "" {
		t.Fatal(why + "; GPUWATT_REQUIRE_BROWSER is set, so this is a failure")
	}
	t.Skip(why)
	return ""
}

// pageCheck is what the browser reports for one page.
type pageCheck struct {
	Page        string   `json:"page"`
	Error       string   `json:"error"`
	ScrollWidth int      `json:"scroll_width"`
	InnerWidth  int      `json:"inner_width"`
	Widest      string   `json:"widest"`
	SVGs        int      `json:"svgs"`
	BadSVGs     []string `json:"bad_svgs"`
	DuplicateID []string `json:"duplicate_ids"`
	// Clipped are the plots' labels that reach outside their plot (cut off where drawn).
	Clipped []string `json:"clipped"`
	// NoInterval are the figures in a column whose header promises a 95 % interval that
	// carry none and say no reason (in parentheses) for it.
	NoInterval []string `json:"no_interval"`
}

// checkScript runs in a wrapper page that holds every page under test in an iframe
// browserWidth wide; once all have loaded it measures each and writes the findings as
// JSON into <pre id="gpuwatt-check">, which --dump-dom prints.
const checkScript = `
function describe(el) {
  var parts = [];
  for (var e = el; e && e.tagName && parts.length < 4; e = e.parentElement) {
    var s = e.tagName.toLowerCase();
    if (e.id) s += '#' + e.id;
    if (typeof e.className === 'string' && e.className) s += '.' + e.className.trim().split(/\s+/).join('.');
    parts.unshift(s);
  }
  var r = el.getBoundingClientRect();
  var text = (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 60);
  return parts.join(' > ') + ' (' + Math.round(r.width) + ' px wide, right edge at ' + Math.round(r.right) + ' px; "' + text + '")';
}
function check(frame) {
  var res = {page: frame.getAttribute('data-page'), svgs: 0, bad_svgs: [], duplicate_ids: [], clipped: [], no_interval: []};
  try {
    var d = frame.contentDocument, w = frame.contentWindow;
    // Folded parts are opened: what they hold must fit as well.
    d.querySelectorAll('details').forEach(function (el) { el.open = true; });
    res.scroll_width = d.documentElement.scrollWidth;
    res.inner_width = w.innerWidth;
    // An element sticks out if its right edge is past the window's, even where a
    // scrolling box (.tablewrap) keeps the page itself from growing: a table one must
    // scroll sideways to read is wider than the page.
    var best = null, bestW = -1, right = 0;
    d.body.querySelectorAll('*').forEach(function (el) {
      // At a phone's width a table may scroll inside its own box; the box must fit.
      if (res.inner_width < 600 && el.closest('.tablewrap') && !el.classList.contains('tablewrap')) return;
      var r = el.getBoundingClientRect();
      right = Math.max(right, r.right);
      if (r.right > res.inner_width + 0.5 && r.width > bestW) { best = el; bestW = r.width; }
    });
    res.scroll_width = Math.max(res.scroll_width, Math.ceil(right));
    if (res.scroll_width > res.inner_width && !best) {
      // Text wider than its own box (a long word that does not break) sticks out unseen by
      // the boxes' edges: name the element it overflows.
      d.body.querySelectorAll('*').forEach(function (el) {
        if (el.closest('.tablewrap') || el.closest('svg')) return;
        var over = el.scrollWidth - el.clientWidth;
        if (el.clientWidth > 0 && over > 0.5 && over > bestW) { best = el; bestW = over; }
      });
    }
    if (res.scroll_width > res.inner_width && !best) {
      // Nothing outside a table's own box sticks out: name what inside one does.
      d.body.querySelectorAll('*').forEach(function (el) {
        var r = el.getBoundingClientRect();
        if (r.right > res.inner_width + 0.5 && r.width > bestW) { best = el; bestW = r.width; }
      });
    }
    if (res.scroll_width > res.inner_width) {
      res.widest = best ? describe(best) : '(no element sticks out; the overflow is a margin)';
    }
    var seen = {};
    d.querySelectorAll('[id]').forEach(function (el) {
      if (seen[el.id] === 1) res.duplicate_ids.push(el.id);
      seen[el.id] = (seen[el.id] || 0) + 1;
    });
    var svgNS = 'http://www.w3.org/2000/svg';
    d.querySelectorAll('svg').forEach(function (svg, i) {
      res.svgs++;
      var name = 'svg ' + (i + 1) + (svg.id ? ' #' + svg.id : '');
      var title = svg.querySelector('title');
      if (title) name += ' "' + title.textContent.trim().slice(0, 60) + '"';
      if (svg.namespaceURI !== svgNS) { res.bad_svgs.push(name + ': not in the SVG namespace'); return; }
      var xml = new XMLSerializer().serializeToString(svg);
      var doc = new DOMParser().parseFromString(xml, 'image/svg+xml');
      var perr = doc.getElementsByTagName('parsererror');
      if (perr.length) { res.bad_svgs.push(name + ': ' + perr[0].textContent.trim().slice(0, 200)); return; }
      var r = svg.getBoundingClientRect();
      if (!(r.width > 0 && r.height > 0) || svg.childElementCount === 0) res.bad_svgs.push(name + ': renders empty (' + r.width + ' x ' + r.height + ')');
      // Every label lies inside the plot's own box: the SVG clips what lies outside.
      svg.querySelectorAll('text').forEach(function (tx) {
        var b = tx.getBoundingClientRect();
        if (!(b.width > 0)) return;
        if (b.left < r.left - 0.5 || b.right > r.right + 0.5 || b.top < r.top - 0.5 || b.bottom > r.bottom + 0.5) {
          res.clipped.push(name + ': "' + tx.textContent.trim().slice(0, 60) + '" reaches ' +
            Math.round(Math.max(r.left - b.left, b.right - r.right, r.top - b.top, b.bottom - r.bottom)) + ' px outside the plot');
        }
      });
    });
    // A column whose header promises a 95 % interval has one in every figure it holds, or
    // says why not.
    d.querySelectorAll('table').forEach(function (tb) {
      var heads = tb.querySelectorAll('thead th');
      heads.forEach(function (th, c) {
        if (th.textContent.indexOf('95 %') < 0) return;
        tb.querySelectorAll('tbody tr').forEach(function (tr) {
          var td = tr.children[c];
          if (!td) return;
          var t = td.textContent.trim();
          if (!/^[-+−]?[0-9]/.test(t) || t.indexOf('±') >= 0 || /\(.+\)/.test(t) || / – | to /.test(t)) return;
          res.no_interval.push('"' + th.textContent.trim().slice(0, 40) + '": "' + t.slice(0, 60) + '" (row "' + tr.children[0].textContent.trim().slice(0, 50) + '")');
        });
      });
    });
  } catch (e) {
    res.error = String(e);
  }
  return res;
}
window.addEventListener('load', function () {
  var out = [];
  document.querySelectorAll('iframe').forEach(function (f) { out.push(check(f)); });
  var pre = document.createElement('pre');
  pre.id = 'gpuwatt-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
`

// browserCheck loads every page in one headless chromium in a window width px wide and
// returns what it found for each, in the order given.
func browserCheck(t *testing.T, chromium string, pages map[string]string, width int) []pageCheck {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gpuwatt browser check</title></head><body>\n")
	for name, path := range pages {
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		u := url.URL{Scheme: "file", Path: abs}
		fmt.Fprintf(&b, "<iframe data-page=\"%s\" src=\"%s\" width=\"%d\" height=\"900\"></iframe>\n", html.EscapeString(name), html.EscapeString(u.String()), width)
	}
	fmt.Fprintf(&b, "<script>%s</script>\n</body></html>\n", checkScript)
	wrapper := filepath.Join(dir, "check.html")
	if err := os.WriteFile(wrapper, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--allow-file-access-from-files",
		"--user-data-dir="+filepath.Join(dir, "profile"), fmt.Sprintf("--window-size=%d,900", width+40),
		"--dump-dom", "file://"+wrapper)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --dump-dom: %v\n%s", chromium, err, stderr.String())
	}
	_, rest, ok := strings.Cut(string(dom), `<pre id="gpuwatt-check">`)
	js, _, ok2 := strings.Cut(rest, "</pre>")
	if !ok || !ok2 {
		t.Fatalf("chromium printed no findings (did the check script run?); stderr:\n%s", stderr.String())
	}
	var got []pageCheck
	if err := json.Unmarshal([]byte(html.UnescapeString(js)), &got); err != nil {
		t.Fatalf("the findings: %v\n%s", err, js)
	}
	if len(got) != len(pages) {
		t.Fatalf("the browser checked %d pages, want %d", len(got), len(pages))
	}
	return got
}

// TestReportsInBrowser renders every verb's report.html on the sim, and the comparison page
// of two characterize runs, in headless chromium 1280 and 390 px wide, every folded part
// opened. It fails if a page is wider than the window or any element reaches past its right
// edge (naming the widest such element; at 390 px a table may scroll in its own box), if an
// inline SVG does not parse or renders empty, if a plot's label reaches outside its plot,
// if a column headed "95 %" has a figure without an interval (or a reason for none), or if an
// element id is used twice. GPUWATT_BROWSER_PAGES=a.html,b.html checks more pages the same way.
func TestReportsInBrowser(t *testing.T) {
	t.Parallel()
	testkit.Slow(t) // chromium renders every verb's page twice: CI runs it
	chromium := findChromium(t)
	dir := t.TempDir()
	pages := map[string]string{}
	run := func(name string, args ...string) {
		t.Helper()
		out := filepath.Join(dir, name)
		a, _, stderr, ctx := testApp(t)
		if code := a.Main(ctx, append(append([]string{}, args[0], "--out", out), args[1:]...)); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		pages[name] = filepath.Join(out, "report.html")
	}
	run("measure", "measure", "--device", "sim:h200", "--", "fake", "5s")
	run("sensor", "sensor", "--device", "sim:h200", "--quick")
	run("profile", "profile", "--device", "sim:h100", "--channel", "power.instant", "--kernel", "5ms", "--runs", "200")
	run("micro", "micro", "--device", "sim:h200", "--only", "baseline,fp32.fma,dram.copy,coalesce.*")
	run("archline", "archline", "--device", "sim:h200", "--quick")
	run("loadlevel", append([]string{"loadlevel", "--contexts", "2", "--levels", "100,50", "--size", "1024,4096"}, loadlevelArgs...)...)
	run("characterize", "characterize", "--device", "sim:h200", "--quick")
	// The comparison page of the run and a copy of it: every plot twice, the case where
	// plots' ids used to collide.
	again := filepath.Join(dir, "again")
	if err := os.CopyFS(again, os.DirFS(filepath.Join(dir, "characterize"))); err != nil {
		t.Fatal(err)
	}
	cmp := filepath.Join(dir, "compare.html")
	a, _, stderr, ctx := testApp(t)
	if code := a.Main(ctx, []string{"report", "--out", cmp, filepath.Join(dir, "characterize"), again}); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	pages["report (comparison)"] = cmp
	// GPUWATT_BROWSER_PAGES adds pages of one's own (comma-separated paths), such as a
	// datasheet re-rendered from results/ with gpuwatt report.
	for _, p := range strings.Split(os.Getenv("GPUWATT_BROWSER_PAGES"), ",") {
		if p != "" {
			pages[p] = p
		}
	}

	for _, width := range browserWidths {
		for _, pc := range browserCheck(t, chromium, pages, width) {
			t.Run(fmt.Sprintf("%s@%d", pc.Page, width), func(t *testing.T) {
				for _, f := range pc.findings(width, pages[pc.Page]) {
					t.Error(f)
				}
			})
		}
	}
}

// findings are what is wrong with a page in a window width px wide, in words.
func (pc pageCheck) findings(width int, path string) []string {
	if pc.Error != "" {
		return []string{"the browser could not check the page: " + pc.Error}
	}
	var fs []string
	if pc.InnerWidth != width {
		fs = append(fs, fmt.Sprintf("the window is %d px wide, want %d", pc.InnerWidth, width))
	}
	if pc.ScrollWidth > pc.InnerWidth {
		fs = append(fs, fmt.Sprintf("%s is %d px wide in a %d px window; widest element sticking out: %s", path, pc.ScrollWidth, pc.InnerWidth, pc.Widest))
	}
	if pc.SVGs == 0 {
		fs = append(fs, path+" has no plots")
	}
	for _, s := range pc.BadSVGs {
		fs = append(fs, path+": "+s)
	}
	if len(pc.DuplicateID) > 0 {
		fs = append(fs, fmt.Sprintf("%s uses these element ids more than once: %s", path, strings.Join(pc.DuplicateID, ", ")))
	}
	for _, c := range pc.Clipped {
		fs = append(fs, path+": a label is clipped: "+c)
	}
	for _, c := range pc.NoInterval {
		fs = append(fs, path+": a figure without its interval: "+c)
	}
	return fs
}

// TestBrowserCheckFindsFaults: the check itself fails a page with a label drawn outside its
// plot and a page with a figure missing its interval, and passes the same pages mended.
func TestBrowserCheckFindsFaults(t *testing.T) {
	t.Parallel()
	testkit.Slow(t)
	chromium := findChromium(t)
	dir := t.TempDir()
	page := func(name, label string, x int, cell string) string {
		p := filepath.Join(dir, name+".html")
		doc := `<!DOCTYPE html><html><head><meta charset="utf-8"/><title>t</title></head><body>` +
			`<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200" viewBox="0 0 300 200"><rect x="0" y="0" width="300" height="200" fill="none" stroke="#000"/>` +
			fmt.Sprintf(`<text x="%d" y="100" transform="rotate(-90 %d 100)" text-anchor="middle" font-size="14">%s</text></svg>`, x, x, label) +
			`<table><thead><tr><th>figure</th><th>energy (± 95 %)</th></tr></thead><tbody><tr><td>run</td><td>` + cell + `</td></tr></tbody></table></body></html>`
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pages := map[string]string{
		"clipped":  page("clipped", "transactions per joule (tx/J)", 4, "1.18 kJ ± 42 J"),
		"interval": page("interval", "power (W)", 20, "1.181 kJ"),
		"good":     page("good", "power (W)", 20, "1.18 kJ ± 42 J"),
	}
	got := map[string]pageCheck{}
	for _, pc := range browserCheck(t, chromium, pages, 390) {
		got[pc.Page] = pc
	}
	if c := got["clipped"]; len(c.Clipped) != 1 || len(c.NoInterval) != 0 {
		t.Errorf("a y label cut off at the plot's edge: clipped %q, no interval %q", c.Clipped, c.NoInterval)
	}
	if c := got["interval"]; len(c.NoInterval) != 1 || len(c.Clipped) != 0 || !strings.Contains(c.NoInterval[0], "1.181 kJ") {
		t.Errorf("an energy without its interval: no interval %q, clipped %q", c.NoInterval, c.Clipped)
	}
	if f := got["good"].findings(390, "good"); len(f) != 0 {
		t.Errorf("the mended page: %q", f)
	}
}
