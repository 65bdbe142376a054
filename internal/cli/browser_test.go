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
)

// browserWidth is the window width the pages must fit: a laptop's browser.
const browserWidth = 1280

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
  var res = {page: frame.getAttribute('data-page'), svgs: 0, bad_svgs: [], duplicate_ids: []};
  try {
    var d = frame.contentDocument, w = frame.contentWindow;
    res.scroll_width = d.documentElement.scrollWidth;
    res.inner_width = w.innerWidth;
    // An element sticks out if its right edge is past the window's, even where a
    // scrolling box (.tablewrap) keeps the page itself from growing: a table one must
    // scroll sideways to read is wider than the page.
    var best = null, bestW = -1, right = 0;
    d.body.querySelectorAll('*').forEach(function (el) {
      var r = el.getBoundingClientRect();
      right = Math.max(right, r.right);
      if (r.right > res.inner_width + 0.5 && r.width > bestW) { best = el; bestW = r.width; }
    });
    res.scroll_width = Math.max(res.scroll_width, Math.ceil(right));
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

// browserCheck loads every page in one headless chromium at browserWidth and returns what
// it found for each, in the order given.
func browserCheck(t *testing.T, chromium string, pages map[string]string) []pageCheck {
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
		fmt.Fprintf(&b, "<iframe data-page=\"%s\" src=\"%s\" width=\"%d\" height=\"900\"></iframe>\n", html.EscapeString(name), html.EscapeString(u.String()), browserWidth)
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
		"--user-data-dir="+filepath.Join(dir, "profile"), fmt.Sprintf("--window-size=%d,900", browserWidth+40),
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
// of two characterize runs, in headless chromium 1280 px wide. It fails if a page is wider
// than the window or any element reaches past its right edge (naming the widest such
// element), if an inline SVG does not parse or renders empty, or if an element id is used
// twice. GPUWATT_BROWSER_PAGES=a.html,b.html checks more pages the same way.
func TestReportsInBrowser(t *testing.T) {
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

	for _, pc := range browserCheck(t, chromium, pages) {
		t.Run(pc.Page, func(t *testing.T) {
			if pc.Error != "" {
				t.Fatalf("the browser could not check the page: %s", pc.Error)
			}
			if pc.InnerWidth != browserWidth {
				t.Errorf("the window is %d px wide, want %d", pc.InnerWidth, browserWidth)
			}
			if pc.ScrollWidth > pc.InnerWidth {
				t.Errorf("%s is %d px wide in a %d px window; widest element sticking out: %s", pages[pc.Page], pc.ScrollWidth, pc.InnerWidth, pc.Widest)
			}
			if pc.SVGs == 0 {
				t.Errorf("%s has no plots", pages[pc.Page])
			}
			for _, s := range pc.BadSVGs {
				t.Errorf("%s: %s", pages[pc.Page], s)
			}
			if len(pc.DuplicateID) > 0 {
				t.Errorf("%s uses these element ids more than once: %s", pages[pc.Page], strings.Join(pc.DuplicateID, ", "))
			}
		})
	}
}
