package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// measureScript is injected into a copy of the report (the report itself
// has no script): it measures, as Chromium laid them out, every
// collection box, every label and every arrow of the model diagram, and
// writes them as JSON into the page, which --dump-dom prints.
const measureScript = `<script>
(function () {
  const r = e => { const b = e.getBoundingClientRect(); return {x: b.left, y: b.top, w: b.width, h: b.height}; };
  const out = {boxes: [], labels: [], arrows: []};
  for (const g of document.querySelectorAll('svg.model g.m-coll')) {
    out.boxes.push(Object.assign({name: g.dataset.collection}, r(g.querySelector('rect.m-box'))));
  }
  for (const t of document.querySelectorAll('svg.model text.m-label')) {
    out.labels.push(Object.assign({in: t.dataset.in, text: t.textContent}, r(t)));
  }
  const svg = document.querySelector('svg.model');
  const o = svg ? svg.getBoundingClientRect() : {left: 0, top: 0};
  for (const p of document.querySelectorAll('svg.model path.m-arrow[data-from]')) {
    const n = p.getTotalLength(), a = p.getPointAtLength(0), b = p.getPointAtLength(n);
    out.arrows.push({from: p.dataset.from, to: p.dataset.to, field: p.dataset.field, length: n,
      x0: a.x + o.left, y0: a.y + o.top, x1: b.x + o.left, y1: b.y + o.top});
  }
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

type measured struct {
	Boxes []struct {
		Name       string
		X, Y, W, H float64
	}
	Labels []struct {
		In, Text   string
		X, Y, W, H float64
	}
	Arrows []struct {
		From, To, Field        string
		Length, X0, Y0, X1, Y1 float64
	}
}

// measureInBrowser renders page with measureScript in headless Chromium
// and returns what it measured.
func measureInBrowser(t *testing.T, bin, page string) measured {
	t.Helper()
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing loaded from anywhere (the data may hold URLs as text).
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=", `href="http`} {
		if strings.Contains(string(src), bad) {
			t.Errorf("%s is not self-contained: it contains %q", page, bad)
		}
	}
	if u := regexp.MustCompile(`url\([^#]`).FindString(string(src)); u != "" {
		t.Errorf("%s is not self-contained: it refers to %q", page, u)
	}
	probe := strings.TrimSuffix(page, ".html") + "-measure.html"
	body := strings.Replace(string(src), "</body>", measureScript+"</body>", 1)
	if err := os.WriteFile(probe, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := headless(t, bin, probe, "--dump-dom")
	m := regexp.MustCompile(`(?s)<pre id="measured">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the measuring script wrote nothing:\n%.2000s", dom)
	}
	var out measured
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &out); err != nil {
		t.Fatalf("measured: %v", err)
	}
	return out
}

type diagramPlanJSON struct {
	Collections []struct {
		Name       string
		References []struct{ Path, Collection string }
	}
}

// checkDiagram runs plan on mapping (html and json), and checks in
// Chromium that the diagram draws every collection once, an arrow for
// every reference and id array the JSON report lists, each from its
// collection's box to the referenced one, and that no two boxes overlap,
// no two labels of a box overlap, and every label lies inside its box.
func checkDiagram(t *testing.T, bin, src, mapping, dir string) {
	t.Helper()
	name := strings.TrimSuffix(filepath.Base(mapping), ".yaml")
	page := filepath.Join(dir, name+".html")
	if code, out, errs := runCLI(t, "plan", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--format", "html", "--output", page); code != 0 {
		t.Fatalf("plan html exit %d\n%s%s", code, out, errs)
	}
	js := filepath.Join(dir, name+".json")
	if code, out, errs := runCLI(t, "plan", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--format", "json", "--output", js); code != 0 {
		t.Fatalf("plan json exit %d\n%s%s", code, out, errs)
	}
	wantBoxes, wantArrows := planModel(t, js)
	checkDiagramPage(t, bin, page, name, wantBoxes, wantArrows)
}

// planModel reads plan's JSON report: the collections, and the
// references and id arrays as "collection.field -> collection".
func planModel(t *testing.T, js string) (wantBoxes, wantArrows []string) {
	t.Helper()
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep diagramPlanJSON
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Collections {
		if !slices.Contains(wantBoxes, c.Name) {
			wantBoxes = append(wantBoxes, c.Name)
		}
		for _, r := range c.References {
			wantArrows = append(wantArrows, fmt.Sprintf("%s.%s -> %s", c.Name, strings.TrimSuffix(r.Path, "[]"), r.Collection))
		}
	}
	return wantBoxes, wantArrows
}

// checkDiagramPage checks page's diagram in Chromium against the
// collections and arrows wanted (see checkDiagram).
func checkDiagramPage(t *testing.T, bin, page, name string, wantBoxes, wantArrows []string) {
	t.Helper()
	got := measureInBrowser(t, bin, page)
	var gotBoxes, gotArrows []string
	box := map[string]int{}
	for i, b := range got.Boxes {
		gotBoxes = append(gotBoxes, b.Name)
		box[b.Name] = i
		if b.W <= 0 || b.H <= 0 {
			t.Errorf("%s: box %q is not drawn: %+v", name, b.Name, b)
		}
		for _, o := range got.Boxes[i+1:] {
			if b.X < o.X+o.W && o.X < b.X+b.W && b.Y < o.Y+o.H && o.Y < b.Y+b.H {
				t.Errorf("%s: boxes %q and %q overlap on screen", name, b.Name, o.Name)
			}
		}
	}
	slices.Sort(gotBoxes)
	slices.Sort(wantBoxes)
	if !slices.Equal(gotBoxes, wantBoxes) {
		t.Errorf("%s: boxes %q, want one per collection %q", name, gotBoxes, wantBoxes)
	}
	const slack = 1.5 // pixels: antialiasing of the box's stroke
	for _, a := range got.Arrows {
		gotArrows = append(gotArrows, fmt.Sprintf("%s.%s -> %s", a.From, a.Field, a.To))
		s, okS := box[a.From]
		d, okD := box[a.To]
		if !okS || !okD || a.Length <= 0 {
			t.Errorf("%s: arrow %+v joins no boxes", name, a)
			continue
		}
		sb, db := got.Boxes[s], got.Boxes[d]
		if abs(a.X0-(sb.X+sb.W)) > slack || a.Y0 < sb.Y || a.Y0 > sb.Y+sb.H {
			t.Errorf("%s: arrow %s.%s starts at %.1f,%.1f, not on %q's right edge %+v", name, a.From, a.Field, a.X0, a.Y0, a.From, sb)
		}
		if abs(a.X1-db.X) > slack || a.Y1 < db.Y || a.Y1 > db.Y+db.H {
			t.Errorf("%s: arrow %s.%s ends at %.1f,%.1f, not on %q's left edge %+v", name, a.From, a.Field, a.X1, a.Y1, a.To, db)
		}
	}
	slices.Sort(gotArrows)
	slices.Sort(wantArrows)
	if !slices.Equal(gotArrows, wantArrows) {
		t.Errorf("%s: arrows\n%q\nwant one per reference and id array\n%q", name, gotArrows, wantArrows)
	}
	labels := 0
	for i, l := range got.Labels {
		if l.W <= 0 {
			t.Errorf("%s: label %q is not drawn", name, l.Text)
		}
		if l.In != "" {
			labels++
			b := got.Boxes[box[l.In]]
			if l.X < b.X || l.X+l.W > b.X+b.W || l.Y < b.Y || l.Y+l.H > b.Y+b.H {
				t.Errorf("%s: label %q %+v is not inside its box %q %+v", name, l.Text, l, l.In, b)
			}
		}
		for _, o := range got.Labels[i+1:] {
			if o.In != l.In {
				continue
			}
			// Glyph boxes of adjacent lines may touch by a pixel.
			if l.X < o.X+o.W && o.X < l.X+l.W && l.Y+1 < o.Y+o.H && o.Y+1 < l.Y+l.H {
				t.Errorf("%s: labels %q and %q overlap on screen", name, l.Text, o.Text)
			}
		}
	}
	t.Logf("%s: %d boxes, %d arrows, %d labels checked in Chromium", name, len(got.Boxes), len(got.Arrows), labels)
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestModelDiagramRendersExamples draws the model of every bundled example
// mapping on the examples' database, and of a mapping with hostile names,
// and checks each in headless Chromium (checkDiagram).
func TestModelDiagramRendersExamples(t *testing.T) {
	bin := chromium(t)
	src := seedDB(t)
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(testenv.Root(t), "mappings", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if filepath.Base(f) == "pagila.yaml" {
			continue // its own database: TestModelDiagramRendersPagila
		}
		checkDiagram(t, bin, src, f, dir)
		n++
	}
	if n != 8 {
		t.Errorf("%d example mappings drawn, want the 8 bundled with the examples' database", n)
	}
	// The README's picture (scripts/screenshot.sh).
	checkDiagram(t, bin, src, filepath.Join(testenv.Root(t), "docs", "images", "model.yaml"), dir)
	hostile := filepath.Join(dir, "hostile.yaml")
	if err := os.WriteFile(hostile, []byte(`version: 1
collections:
  - name: '<b>posts&"x'
    table: post
    fields:
      - name
      - name: 'recent<i>'
        embed: {table: comment, join: {post_id: id}, orderBy: id, limit: 3, fields: [id, {name: 'by&"who', column: author}]}
  - name: "c<script>alert(1)"
    table: comment
    fields:
      - comment
      - {name: 'post<&>', column: post_id, ref: '<b>posts&"x'}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	checkDiagram(t, bin, src, hostile, dir)
	raw, err := os.ReadFile(filepath.Join(dir, "hostile.html"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "<script>alert") || strings.Contains(string(raw), "<b>posts") || strings.Contains(string(raw), "recent<i>") {
		t.Error("a hostile name reached the HTML unescaped")
	}
}

// TestModelDiagramRendersPagila draws Pagila's model
// (mappings/examples/pagila.yaml: 7 collections, buckets, nested objects,
// id arrays both ways of a link) and checks it in headless Chromium.
func TestModelDiagramRendersPagila(t *testing.T) {
	bin := chromium(t)
	db := pagilaDB(t)
	checkDiagram(t, bin, db, filepath.Join(testenv.Root(t), "mappings", "examples", "pagila.yaml"), t.TempDir())
}

// TestAdviseDiagram drafts a mapping of the examples' database with
// advise --diagram, as an HTML page and as an SVG file, and checks the
// page in Chromium against plan's reading of the draft: every collection
// and every reference and id array drawn, nothing overlapping.
func TestAdviseDiagram(t *testing.T) {
	bin := chromium(t)
	src := seedDB(t)
	dir := t.TempDir()
	draft, page, svg := filepath.Join(dir, "draft.yaml"), filepath.Join(dir, "draft.html"), filepath.Join(dir, "draft.svg")
	for _, out := range []string{page, svg} {
		if code, stdout, errs := runCLI(t, "advise", "-q", "--source", src, "--output", draft, "--diagram", out); code != 0 {
			t.Fatalf("advise exit %d\n%s%s", code, stdout, errs)
		}
	}
	js := filepath.Join(dir, "draft.json")
	if code, out, errs := runCLI(t, "plan", "-q", "--progress", "none", "--mapping", draft, "--source", src, "--format", "json", "--output", js); code != 0 {
		t.Fatalf("plan json exit %d\n%s%s", code, out, errs)
	}
	wantBoxes, wantArrows := planModel(t, js)
	if len(wantBoxes) < 5 || len(wantArrows) < 3 {
		t.Fatalf("the draft has %d collections and %d references: too few for the test", len(wantBoxes), len(wantArrows))
	}
	checkDiagramPage(t, bin, page, "advise", wantBoxes, wantArrows)
	// The SVG file: well-formed XML, one group per collection, one path
	// per arrow.
	raw, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(raw))
	groups, arrows := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", svg, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "data-collection":
					groups++
				case "data-from":
					arrows++
				}
			}
		}
	}
	if groups != len(wantBoxes) || arrows != len(wantArrows) {
		t.Errorf("%s draws %d collections and %d arrows, want %d and %d", svg, groups, arrows, len(wantBoxes), len(wantArrows))
	}
}
