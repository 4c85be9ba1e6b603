package main

import (
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
)

// chromium returns the headless browser's path: Debian's chromium package
// (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testing.Short() {
		t.Skip("chromium not installed: HTML rendering test skipped in the short suite")
	}
	t.Fatal("chromium is not installed: run `make deps` (scripts/deps.sh installs it)")
	return ""
}

// headless runs chromium on file with the network closed and a fresh
// profile, with extra arguments (--screenshot=..., --dump-dom). A browser
// killed by a signal (it crashes now and then on a loaded machine, before
// it has read the page) is run again, twice at most: a crash says nothing
// about the page; any other failure fails the test.
func headless(t *testing.T, bin, file string, args ...string) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		out, errs, err := headlessOnce(t, bin, file, args...)
		if err == nil {
			return out
		}
		var ee *exec.ExitError
		crashed := errors.As(err, &ee) && !ee.Exited()
		if !crashed || attempt == 3 {
			t.Fatalf("chromium: %v\n%s", err, errs)
		}
		t.Logf("chromium crashed (%v), run again (attempt %d of 3)", err, attempt+1)
	}
}

func headlessOnce(t *testing.T, bin, file string, args ...string) (out, errs string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,3000"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+file)...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = ctx.Err() // hung and killed: not a crash
	}
	return o.String(), e.String(), err
}

// TestPlanHTMLRenders writes the HTML report of a blog mapping that embeds
// an unbounded relation, renders it in headless Chromium, and checks the
// rendered page (DOM) and the screenshot (the colours of the diagram's
// boxes, the histogram bars and the warning badge are on screen).
func TestPlanHTMLRenders(t *testing.T) {
	bin := chromium(t)
	src := seedDB(t)
	testenv.Exec(t, src, `INSERT INTO comment SELECT 1000 + n, 1, 'x', 'hello', now() FROM generate_series(1, 300) n`)
	dir := t.TempDir()
	mapping := filepath.Join(dir, "blog.yaml")
	if err := os.WriteFile(mapping, []byte(`version: 1
collections:
  - name: posts
    table: post
    fields:
      - name
      - name: comments
        embed: {table: comment, join: {post_id: id}, orderBy: id, fields: [id, author, comment]}
  - name: comments
    table: comment
    bucket: {by: post_id, size: 100, orderBy: [created_at, id], items: comments}
    fields: [id, author, comment]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "plan.html")
	// A size limit the largest posts break: error findings beside the
	// unbounded embed's warning and the infos.
	if code, out, errs := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", src, "--format", "html", "--output", page, "--max-doc-size", "20000"); code != 0 {
		t.Fatalf("plan exit %d\n%s%s", code, out, errs)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http://", "https://", "<script", "<link"} {
		if strings.Contains(string(html), bad) {
			t.Errorf("the HTML report is not self-contained: it contains %q", bad)
		}
	}

	dom := headless(t, bin, page, "--dump-dom")
	for _, want := range []string{
		"<h2 id=\"summary\">Summary</h2>", "<h2 id=\"warnings\">Warnings</h2>", "Document shapes",
		"Collection posts", "Collection comments", `class="diagram"`, `class="histogram"`,
		"Size distribution", "Largest arrays", "Inferred shape", "Typical document", "Largest document",
		"unbounded-embed", "up to 550 items per document", "post (id)=(1)", "comments[].author",
		// a contents list linking every section and collection
		`<nav class="contents" id="contents">`, `<a href="#warnings">Warnings</a>`, `<a href="#indexes">Indexes</a>`, `<a href="#c-posts-public.post">posts</a>`, `<a href="#c-comments-public.comment">comments</a>`,
		// totals in the summary, over-limit counts highlighted
		`<tr class="total"><td>total</td>`, `<td class="n over">`,
		// the indexes migrate creates
		`<h2 id="indexes">Indexes</h2>`, "<code>postId_1_page_1</code>", "default: bucket pages are read by parent",
		// counts on the histograms' axes
		`class="tick count"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	// Warnings sorted by severity: every error before every warning,
	// every warning before every info.
	warnings := dom[strings.Index(dom, `<table class="warnings">`):]
	warnings = warnings[:strings.Index(warnings, "</table>")]
	lastErr, firstWarn := strings.LastIndex(warnings, "sev-error-row"), strings.Index(warnings, "sev-warning-row")
	lastWarn, firstInfo := strings.LastIndex(warnings, "sev-warning-row"), strings.Index(warnings, "sev-info-row")
	if lastErr < 0 || firstWarn < 0 || lastErr > firstWarn || (firstInfo >= 0 && lastWarn > firstInfo) {
		t.Errorf("warnings are not sorted by severity (last error at %d, first warning at %d, last warning at %d, first info at %d)", lastErr, firstWarn, lastWarn, firstInfo)
	}
	// Samples pretty-printed: one field a line, indented.
	if !regexp.MustCompile(`<pre class="sample">\{\n  "_id": `).MatchString(dom) {
		t.Error("samples are not pretty-printed")
	}
	// The histogram's count axis: the tallest bar's count and 0.
	if !regexp.MustCompile(`class="tick count"[^>]*>0</text>`).MatchString(dom) || !regexp.MustCompile(`class="tick count"[^>]*>[1-9][0-9]*</text>`).MatchString(dom) {
		t.Error("the histogram's count axis has no labels")
	}

	shot := filepath.Join(dir, "plan.png")
	headless(t, bin, page, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 3000 {
		t.Errorf("screenshot is %v, want 1280x3000", b)
	}
	// Each section draws in its own colour (transform/report/html.go's CSS).
	colours := map[string][3]uint8{
		"root table box (diagram)": {0x1e, 0x3a, 0x5f},
		"embed box (diagram)":      {0x2e, 0x7d, 0x32},
		"histogram bar":            {0x3f, 0x6f, 0xb5},
		"warning badge (warnings)": {0xff, 0xb3, 0x00},
	}
	for what, c := range colours {
		if n := countColour(img, c); n < 200 {
			t.Errorf("screenshot shows %d pixels of the %s colour #%02x%02x%02x, want a visible area", n, what, c[0], c[1], c[2])
		} else {
			t.Logf("%s: %d pixels", what, n)
		}
	}
}

func countColour(img image.Image, c [3]uint8) int {
	n := 0
	b := img.Bounds()
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d >= -3 && d <= 3 }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r, c[0]) && near(g, c[1]) && near(bl, c[2]) {
				n++
			}
		}
	}
	return n
}
