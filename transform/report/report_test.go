package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// sized hands docs to a Collector as the plan engine does: with their
// BSON sizes (the package encodes nothing itself).
func sized(t *testing.T, docs []transform.Document) []Sized {
	t.Helper()
	out := make([]Sized, len(docs))
	for i := range docs {
		b, err := load.AppendDocument(nil, docs[i].Body)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = Sized{Doc: &docs[i], Size: len(b)}
	}
	return out
}

func TestPercentile(t *testing.T) {
	vals := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		name string
		p    float64
		want int
	}{
		{"median", 50, 5}, {"p95", 95, 10}, {"p99", 99, 10}, {"p10", 10, 1}, {"max", 100, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(vals, tc.p); got != tc.want {
				t.Errorf("percentile(%v) = %d, want %d", tc.p, got, tc.want)
			}
		})
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %d", got)
	}
}

func TestReservoirBounded(t *testing.T) {
	r := newReservoir()
	for i := 0; i < 3*ReservoirSize; i++ {
		r.add(i)
	}
	if len(r.vals) != ReservoirSize || r.n != 3*ReservoirSize {
		t.Fatalf("kept %d of %d", len(r.vals), r.n)
	}
	// a uniform sample: about a third of the kept values come from each third
	low := 0
	for _, v := range r.vals {
		if v < ReservoirSize {
			low++
		}
	}
	if low < ReservoirSize/4 || low > ReservoirSize*5/12 {
		t.Errorf("%d of %d kept values from the first third: not uniform", low, ReservoirSize)
	}
}

func TestHistogramCountsEverything(t *testing.T) {
	vals := []int{10, 10, 11, 50, 99, 100}
	bins := histogram(vals, 10, 100, 1)
	var n int64
	for _, b := range bins {
		n += b.Count
	}
	if n != int64(len(vals)) || bins[0].From != 10 || bins[len(bins)-1].To <= 100 {
		t.Errorf("bins %+v count %d", bins, n)
	}
}

// plan is a minimal compiled plan: person with an embedded address array
// holding a reference.
func testPlan() *mappings.CollectionPlan {
	pt := &mappings.Table{Schema: "public", Name: "person"}
	at := &mappings.Table{Schema: "public", Name: "address"}
	addr := &mappings.Node{Kind: mappings.NodeEmbed, Path: "people.addresses", Table: at,
		Fields: []mappings.FieldPlan{{Kind: mappings.FieldColumn, Name: "city"}, {Kind: mappings.FieldColumn, Name: "cityId", RefCollection: "cities"}}}
	root := &mappings.Node{Kind: mappings.NodeRoot, Path: "people", Table: pt, Children: []*mappings.Node{addr},
		Fields: []mappings.FieldPlan{{Kind: mappings.FieldColumn, Name: "name"}, {Kind: mappings.FieldEmbed, Name: "addresses", Embed: addr}}}
	return &mappings.CollectionPlan{Name: "people", Root: root, IDCols: []int{0}}
}

func doc(id int32, name any, addrs ...transform.Doc) transform.Document {
	body := transform.Doc{{Key: "_id", Value: id}}
	if name != nil {
		body = append(body, transform.Field{Key: "name", Value: name})
	}
	arr := transform.Array{}
	for _, a := range addrs {
		arr = append(arr, a)
	}
	body = append(body, transform.Field{Key: "addresses", Value: arr})
	return transform.Document{Collection: "people", ID: id, Body: body, Source: "person (id)=(" + string(rune('0'+id)) + ")"}
}

func TestCollectorShapeArraysRefs(t *testing.T) {
	cp := testPlan()
	col := NewCollector(cp, 120, load.AppendExtJSON)
	a := func(city string, ref any) transform.Doc {
		d := transform.Doc{{Key: "city", Value: city}}
		if ref != nil {
			d = append(d, transform.Field{Key: "cityId", Value: ref})
		}
		return d
	}
	docs := []transform.Document{
		doc(1, "ann", a("Oslo", int32(1)), a("Rome", int32(7))),
		doc(2, nil),
		doc(3, "cy", a("Oslo", int32(1)), a("Bonn", int32(2)), a("Nice", nil)),
	}
	col.Add(3, sized(t, docs), 0)
	var asked []string
	err := col.CheckRefs(func(coll string, values []string) (map[string]bool, error) {
		if coll != "cities" {
			t.Errorf("checked collection %q", coll)
		}
		asked = values
		return map[string]bool{"7": true}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1", "7", "2"}, asked); diff != "" {
		t.Errorf("distinct values checked (-want +got):\n%s", diff)
	}
	c := col.Finish(1)
	if c.Documents != 3 || c.Seen != 3 || c.Rows != 3 {
		t.Errorf("documents %d seen %d rows %d", c.Documents, c.Seen, c.Rows)
	}
	if len(c.Arrays) != 1 || c.Arrays[0].Path != "addresses" || c.Arrays[0].Max != 3 || c.Arrays[0].MaxSource != "person (id)=(3)" {
		t.Errorf("arrays %+v", c.Arrays)
	}
	shape := map[string][2]int64{}
	for _, p := range c.Shape {
		shape[p.Path] = [2]int64{p.Present, p.Of}
	}
	want := map[string][2]int64{
		"_id": {3, 3}, "name": {2, 3}, "addresses": {3, 3},
		"addresses[]": {5, 5}, "addresses[].city": {5, 5}, "addresses[].cityId": {4, 5},
	}
	if diff := cmp.Diff(want, shape); diff != "" {
		t.Errorf("shape (-want +got):\n%s", diff)
	}
	r := c.References[0]
	if r.Path != "addresses[].cityId" || r.Checked != 4 || r.Dangling != 1 || r.Examples[0] != (Dang{Value: "7", Source: "person (id)=(1)"}) {
		t.Errorf("references %+v", r)
	}
	if c.Size.Max <= c.Size.Min || c.Largest.Source != "person (id)=(3)" || c.Largest.ID != "3" {
		t.Errorf("size %+v largest %+v", c.Size, c.Largest)
	}
	if c.TooLarge.Count == 0 || c.TooLarge.Docs[0].Size <= 120 {
		t.Errorf("too large %+v (limit 120)", c.TooLarge)
	}
}

func TestSampleTruncatesArrays(t *testing.T) {
	arr := transform.Array{}
	for i := 0; i < 12; i++ {
		arr = append(arr, int32(i))
	}
	d := transform.Document{Body: transform.Doc{{Key: "_id", Value: int32(1)}, {Key: "a", Value: arr}}, ID: int32(1)}
	s := NewCollector(testPlan(), 1<<20, load.AppendExtJSON).sample(&d, 100)
	if !s.Truncated || !strings.Contains(s.JSON, `"... 7 more items"`) || strings.Contains(s.JSON, "11") {
		t.Errorf("sample %+v", s)
	}
}

func TestWarningsUnboundedAndJoinTable(t *testing.T) {
	cp := testPlan()
	jt := &mappings.Table{Schema: "public", Name: "book_author", PrimaryKey: []string{"book_id", "author_id"},
		Columns:     []mappings.Column{{Name: "book_id", Category: "S"}, {Name: "author_id", Category: "S"}},
		ForeignKeys: []mappings.ForeignKey{{Columns: []string{"book_id"}}, {Columns: []string{"author_id"}}}}
	jcp := &mappings.CollectionPlan{Name: "bookAuthors", Root: &mappings.Node{Kind: mappings.NodeRoot, Table: jt}}
	plan := &mappings.Plan{Collections: []*mappings.CollectionPlan{cp, jcp}}
	cols := []*Collection{
		{Name: "people", Arrays: []ArrayStat{{Path: "addresses", Max: 5000, P99: 40, P50: 2, MaxSource: "person (id)=(9)"}}, Largest: &Sample{}},
		{Name: "bookAuthors", Largest: &Sample{}},
	}
	stats := map[string]mappings.TableActivity{"public.address": {Rows: 100, Updates: 1000, Inserts: 50}}
	ws := Warnings(plan, cols, stats, 16<<20)
	rules := map[string]string{}
	for _, w := range ws {
		rules[w.Rule] = w.Message
	}
	if m := rules["unbounded-embed"]; !strings.Contains(m, "up to 5000 items") || !strings.Contains(m, "person (id)=(9)") || !strings.Contains(m, "50 rows inserted") {
		t.Errorf("unbounded-embed: %q", m)
	}
	if m := rules["hot-embed"]; !strings.Contains(m, "1000 updates on 100 rows") {
		t.Errorf("hot-embed: %q", m)
	}
	if m := rules["join-table-collection"]; !strings.Contains(m, "book_author") {
		t.Errorf("join-table-collection: %q", m)
	}
}

// formatReport is a report holding one of everything a format shows: a
// collection of 100 documents of growing sizes (so that min, p50, p95,
// p99 and max read differently) with an array, a reference with a dangling value, documents
// over the size limit, and a warning with a suggestion; beside an empty
// collection.
func formatReport(t *testing.T) *Report {
	t.Helper()
	a := func(city string, ref int32) transform.Doc {
		return transform.Doc{{Key: "city", Value: city}, {Key: "cityId", Value: ref}}
	}
	var docs []transform.Document
	for i := int32(1); i <= 100; i++ {
		addrs := transform.Array{}
		switch i {
		case 1:
			addrs = append(addrs, a("Oslo", 1))
		case 3:
			addrs = append(addrs, a("Oslo", 1), a("Bonn", 2), a("Nice", 7))
		}
		body := transform.Doc{{Key: "_id", Value: i}, {Key: "name", Value: strings.Repeat("x", int(i*i))}, {Key: "addresses", Value: addrs}}
		docs = append(docs, transform.Document{Collection: "people", ID: i, Body: body, Source: fmt.Sprintf("person (id)=(%d)", i)})
	}
	sd := sized(t, docs)
	col := NewCollector(testPlan(), sd[98].Size-1, load.AppendExtJSON) // documents 99 and 100 are over
	col.Add(len(docs), sd, 0)
	if err := col.CheckRefs(func(string, []string) (map[string]bool, error) { return map[string]bool{"7": true}, nil }); err != nil {
		t.Fatal(err)
	}
	empty := NewCollector(testPlan(), 120, load.AppendExtJSON).Finish(1)
	empty.Name = "nobody"
	return &Report{SchemaVersion: SchemaVersion, Mapping: "m.yaml", MaxDocSize: sd[98].Size - 1, SamplePercent: 100,
		Generated:   time.Date(2026, 11, 23, 10, 30, 0, 0, time.UTC),
		Collections: []*Collection{col.Finish(1), empty},
		Warnings: []Warning{{Severity: "warning", Rule: "unbounded-embed", Collection: "people", Path: "addresses",
			Message: "addresses holds up to 3 items", Suggestion: "set a limit"}}}
}

// TestWriteFormats renders one report in every format and checks that each
// shows every figure of it where that format puts it: the summary row, the
// size distribution, the largest array, the document over the limit, the
// reference and its dangling value, the warning and its suggestion, and
// every path of the shape. The JSON report decodes back to the report.
func TestWriteFormats(t *testing.T) {
	r := formatReport(t)
	c := r.Collections[0]
	sizes := []string{Bytes(c.Size.Min), Bytes(c.Size.P50), Bytes(c.Size.P95), Bytes(c.Size.P99), Bytes(c.Size.Max)}
	if c.Documents != 100 || len(c.Arrays) != 1 || c.TooLarge.Count != 2 || len(c.References) != 1 || c.References[0].Dangling != 1 ||
		len(c.Shape) != 6 || len(slices.Compact(slices.Clone(sizes))) != 5 || c.Typical == nil || c.Largest == nil {
		t.Fatalf("the report lacks something a format shows, or has two equal figures: %+v", c)
	}
	sz, big, ref, w := c.Size, c.TooLarge.Docs[0], c.References[0], r.Warnings[0]
	arr := c.Arrays[0]
	row := []string{c.Name, c.Table, "100", Bytes(sz.P50), Bytes(sz.P95), Bytes(sz.P99), Bytes(sz.Max), fmt.Sprint(c.TooLarge.Count)}
	var shapeText, shapeMD, shapeHTML []string
	for _, p := range c.Shape {
		shapeText = append(shapeText, fmt.Sprintf(`(?m)^    %s +%s +%s$`, regexp.QuoteMeta(p.Path), regexp.QuoteMeta(types(p.Types)), pct(p.Present, p.Of)))
		shapeMD = append(shapeMD, fmt.Sprintf("| `%s` | %s | %s |", p.Path, types(p.Types), pct(p.Present, p.Of)))
		shapeHTML = append(shapeHTML, fmt.Sprintf(`<tr><td><code>%s</code></td><td>%s</td><td class="n">%s</td></tr>`, template.HTMLEscapeString(p.Path), types(p.Types), pct(p.Present, p.Of)))
	}
	want := map[string][]string{
		"text": append([]string{
			`(?m)^ *` + strings.Join(quoteAll(append(row, "1")), " +") + ` *$`,
			`(?m)^  size: min ` + regexp.QuoteMeta(Bytes(sz.Min)) + `  p50 ` + regexp.QuoteMeta(Bytes(sz.P50)) + `  p95 .* max ` + regexp.QuoteMeta(Bytes(sz.Max)),
			fmt.Sprintf(`(?m)^    addresses +max %d +p99 %d +p50 %d +in person \(id\)=\(3\)$`, arr.Max, arr.P99, arr.P50),
			`(?m)^  OVER THE SIZE LIMIT: 2 documents\n    ` + regexp.QuoteMeta(fmt.Sprintf("%s (_id %s): %s", big.Source, big.ID, Bytes(big.Size))) + `$`,
			`(?m)^  references addresses\[\]\.cityId -> cities: 4 checked, 1 dangling\n    7 in person \(id\)=\(3\)$`,
			`(?m)^  WARNING \[unbounded-embed\] people: addresses holds up to 3 items\n      suggestion: set a limit$`,
			`(?m)^== nobody \(documents from public\.person\): 0 documents from 0 rows$`,
			`(?m)^  typical document \(` + regexp.QuoteMeta(c.Typical.Source) + `, ` + Bytes(c.Typical.Size) + `\):\n    ` + regexp.QuoteMeta(c.Typical.JSON) + `$`,
			`(?m)^  largest document \(person \(id\)=\(100\), ` + Bytes(c.Largest.Size) + `\):\n    ` + regexp.QuoteMeta(c.Largest.JSON) + `$`,
		}, shapeText...),
		"markdown": append([]string{
			"| " + strings.Join(row, " | ") + " |",
			"- **warning** `unbounded-embed` people: addresses holds up to 3 items — *set a limit*",
			fmt.Sprintf("| `addresses` | %d | %d | %d | person (id)=(3) |", arr.Max, arr.P99, arr.P50),
			fmt.Sprintf("**2 documents over the size limit:**\n\n- %s: %s", big.Source, Bytes(big.Size)),
			"- references `addresses[].cityId` → cities: 4 checked, 1 dangling",
			"## nobody\n\ndocuments from `public.person`: 0 documents from 0 rows.",
			fmt.Sprintf("Typical document (%s, %s):\n\n```json\n%s\n```", c.Typical.Source, Bytes(c.Typical.Size), c.Typical.JSON),
			fmt.Sprintf("Largest document (person (id)=(100), %s):\n\n```json\n%s\n```", Bytes(c.Largest.Size), c.Largest.JSON),
		}, shapeMD...),
		"html": append([]string{
			fmt.Sprintf(`<tr><td><a href="#c-people-public.person">people</a></td><td>documents</td><td>public.person</td><td class="n">100</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n over">%d</td><td class="n">%d</td></tr>`,
				Bytes(sz.P50), Bytes(sz.P95), Bytes(sz.P99), Bytes(sz.Max), c.TooLarge.Count, ref.Dangling),
			`<tr class="sev-warning-row"><td><span class="sev-warning">WARNING</span></td><td>unbounded-embed</td><td>people</td><td>addresses holds up to 3 items</td><td>set a limit</td></tr>`,
			fmt.Sprintf(`<td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td></tr></table>`,
				Bytes(sz.Min), Bytes(sz.P50), Bytes(sz.P95), Bytes(sz.P99), Bytes(sz.Max), Bytes(int(sz.Mean))),
			fmt.Sprintf(`<tr><td><code>addresses</code></td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td>person (id)=(3)</td></tr>`, arr.Max, arr.P99, arr.P50),
			fmt.Sprintf(`<h3>Over the size limit: 2 documents</h3><table><tr><th>source</th><th>_id</th><th>size</th></tr><tr><td>%s</td><td>%s</td><td class="n">%s</td></tr>`,
				template.HTMLEscapeString(big.Source), big.ID, Bytes(big.Size)),
			`<tr><td><code>addresses[].cityId</code></td><td>cities</td><td class="n">4</td><td class="n">1</td><td>7 in person (id)=(3)<br></td></tr>`,
			`<h2 id="c-nobody-public.person">Collection nobody <span class="note">(documents from public.person: 0 documents from 0 rows)</span></h2>`,
			// Samples are indented for reading; one cut short (not valid
			// JSON) is shown as it is.
			fmt.Sprintf(`<p>Typical document (%s, %s):</p><pre class="sample">%s</pre>`, template.HTMLEscapeString(c.Typical.Source), Bytes(c.Typical.Size), template.HTMLEscapeString(indented(t, c.Typical.JSON))),
			fmt.Sprintf(`<p>Largest document (person (id)=(100), %s):</p><pre class="sample">%s</pre>`, Bytes(c.Largest.Size), template.HTMLEscapeString(c.Largest.JSON)),
		}, shapeHTML...),
	}
	if ref.Path != "addresses[].cityId" || arr.Path != "addresses" || w.Rule != "unbounded-embed" {
		t.Fatalf("unexpected report: %+v %+v %+v", ref, arr, w)
	}
	for _, f := range Formats {
		t.Run(f, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, r, f); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if f == "json" {
				var back Report
				if err := json.Unmarshal(b.Bytes(), &back); err != nil {
					t.Fatalf("json: %v", err)
				}
				if diff := cmp.Diff(r, &back); diff != "" {
					t.Errorf("json round trip (-want +got):\n%s", diff)
				}
				return
			}
			if len(want[f]) == 0 {
				t.Fatalf("no expectations for format %s", f)
			}
			for _, w := range want[f] {
				found := strings.Contains(out, w)
				if f == "text" {
					found = regexp.MustCompile(w).MatchString(out)
				}
				if !found {
					t.Errorf("%s output lacks %q:\n%s", f, w, out)
				}
			}
		})
	}
	if err := Write(&bytes.Buffer{}, r, "pdf"); err == nil || !strings.Contains(err.Error(), "use one of text, json, markdown, html") {
		t.Errorf("unknown format: %v", err)
	}
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = regexp.QuoteMeta(x)
	}
	return out
}

// A bucket page holds its rows in the items array: the references of the
// rows are found there and checked like any other.
func TestCollectorBucketRefs(t *testing.T) {
	ct := &mappings.Table{Schema: "public", Name: "comment"}
	root := &mappings.Node{Kind: mappings.NodeRoot, Path: "pages", Table: ct,
		Fields: []mappings.FieldPlan{{Kind: mappings.FieldColumn, Name: "text"}, {Kind: mappings.FieldColumn, Name: "authorId", RefCollection: "people"}}}
	cp := &mappings.CollectionPlan{Name: "pages", Root: root, Bucket: &mappings.BucketPlan{Size: 2, Items: "comments", Page: "page"}}
	item := func(text string, author int32) transform.Doc {
		return transform.Doc{{Key: "text", Value: text}, {Key: "authorId", Value: author}}
	}
	page := func(id string, items ...transform.Doc) transform.Document {
		arr := transform.Array{}
		for _, it := range items {
			arr = append(arr, it)
		}
		return transform.Document{Collection: "pages", ID: id, Source: "post (id)=(" + id + ")",
			Body: transform.Doc{{Key: "_id", Value: id}, {Key: "page", Value: int32(1)}, {Key: "comments", Value: arr}}}
	}
	col := NewCollector(cp, 1<<20, load.AppendExtJSON)
	col.Add(3, sized(t, []transform.Document{page("1-1", item("a", 4), item("b", 9)), page("2-1", item("c", 4))}), 0)
	var asked []string
	if err := col.CheckRefs(func(coll string, values []string) (map[string]bool, error) {
		asked = append(asked, values...)
		return map[string]bool{"9": true}, nil // the values not found
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"4", "9"}, asked); diff != "" {
		t.Errorf("values checked (-want +got):\n%s", diff)
	}
	r := col.Finish(1).References[0]
	if r.Path != "comments[].authorId" || r.Checked != 3 || r.Dangling != 1 || r.Examples[0].Value != "9" {
		t.Errorf("references %+v", r)
	}
}

// indented is s indented by two spaces, as the HTML report shows samples.
func indented(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		t.Fatalf("typical sample is not JSON: %v", err)
	}
	return b.String()
}

// TestCollectorSubMillisecond: plan counts, per field, the dates with
// digits below the millisecond (which migrate drops), in every output
// and as a warning; past the shape's cap too.
func TestCollectorSubMillisecond(t *testing.T) {
	cp := testPlan()
	cp.Root.Table.Columns = []mappings.Column{{Name: "id"}, {Name: "name"}}
	cp.Root.Columns = []mappings.Column{{Name: "id", TypeName: "timestamptz"}, {Name: "name", TypeName: "timestamptz"}}
	cp.Root.Fields[0].Value = mappings.Ref{Col: 1}
	col := NewCollector(cp, 0, load.AppendExtJSON)
	fine := time.Date(2024, 1, 1, 10, 0, 0, 123456000, time.UTC)
	whole := time.Date(2024, 1, 1, 10, 0, 0, 123000000, time.UTC)
	docs := []transform.Document{
		doc(1, fine, transform.Doc{{Key: "since", Value: fine}}, transform.Doc{{Key: "since", Value: whole}}),
		doc(2, whole),
		doc(3, fine.Add(-time.Hour)),
	}
	// A document past the shape's cap: its dates are counted all the same.
	wide := transform.Doc{{Key: "_id", Value: int32(4)}}
	for i := range MaxPaths + 10 {
		wide = append(wide, transform.Field{Key: fmt.Sprintf("k%d", i), Value: fine})
	}
	docs = append(docs, transform.Document{Collection: "people", ID: int32(4), Body: wide, Source: "person (id)=(4)"})
	col.Add(len(docs), sized(t, docs), 0)
	c := col.Finish(1)
	got := map[string]int64{}
	for _, l := range c.SubMillisecond {
		got[l.Path] = l.Count
	}
	if got["name"] != 2 || got["addresses[].since"] != 1 || got["k0"] != 1 {
		t.Fatalf("counts %v", got)
	}
	var all int64
	for _, n := range got {
		all += n
	}
	if all != 3+MaxPaths+10 {
		t.Errorf("%d values counted, want %d", all, 3+MaxPaths+10)
	}
	for _, l := range c.SubMillisecond {
		if l.Path == "name" && (l.Column != "person.name" || l.Example != "2024-01-01T10:00:00.123456Z" || l.Source != "person (id)=(1)") {
			t.Errorf("name: %+v", l)
		}
	}
	plan := &mappings.Plan{Collections: []*mappings.CollectionPlan{cp}}
	ws := Warnings(plan, []*Collection{c}, nil, 0)
	if !slices.ContainsFunc(ws, func(w Warning) bool {
		return w.Rule == "timestamp-precision" && strings.Contains(w.Message, "name (person.name): 2") && strings.Contains(w.Suggestion, "timestamp: string")
	}) {
		t.Errorf("no timestamp-precision warning: %+v", ws)
	}
	r := &Report{Collections: []*Collection{c}, Warnings: ws}
	for _, f := range []string{"text", "markdown", "html", "json"} {
		var b strings.Builder
		if err := Write(&b, r, f); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"person.name", "2024-01-01T10:00:00.123456Z", "timestamp-precision"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s output lacks %q", f, want)
			}
		}
	}
}

// TestWriteOnDelete: every format says what sync does with the documents
// of deleted roots when the mapping keeps them, and nothing for delete.
func TestWriteOnDelete(t *testing.T) {
	r := formatReport(t)
	r.Collections[0].OnDelete, r.Collections[0].Tombstone = "tombstone", "deletedAt"
	want := map[string]string{
		"text":     "\n  on delete: tombstone (sync keeps the document of a deleted root and sets deletedAt to the deletion time)\n",
		"markdown": "\non delete: tombstone (sync keeps the document of a deleted root and sets deletedAt to the deletion time).\n",
		"html":     `<p class="note">on delete: tombstone (sync keeps the document of a deleted root and sets deletedAt to the deletion time)</p>`,
		"json":     `"onDelete": "tombstone",`,
	}
	for f, w := range want {
		var b bytes.Buffer
		if err := Write(&b, r, f); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); !strings.Contains(got, w) {
			t.Errorf("%s lacks %q", f, w)
		}
		if n := strings.Count(b.String(), "on delete:"); f != "json" && n != 1 {
			t.Errorf("%s says on delete %d times, want once (the other collection deletes)", f, n)
		}
	}
}
