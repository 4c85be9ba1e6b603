package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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

func TestWriteFormats(t *testing.T) {
	col := NewCollector(testPlan(), 1<<20, load.AppendExtJSON)
	col.Add(1, sized(t, []transform.Document{doc(1, "ann")}), 0)
	empty := NewCollector(testPlan(), 1<<20, load.AppendExtJSON).Finish(1)
	r := &Report{SchemaVersion: SchemaVersion, Mapping: "m.yaml", MaxDocSize: 1 << 20, SamplePercent: 100,
		Collections: []*Collection{col.Finish(1), empty}, Warnings: []Warning{}}
	for _, f := range Formats {
		t.Run(f, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, r, f); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "people") {
				t.Errorf("%s output lacks the collection:\n%s", f, b.String())
			}
			if f == "json" {
				var back Report
				if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Collections) != 2 || back.Collections[1].Shape == nil {
					t.Errorf("json round trip: %v %+v", err, back)
				}
			}
		})
	}
	if err := Write(&bytes.Buffer{}, r, "pdf"); err == nil || !strings.Contains(err.Error(), "use one of text, json, markdown, html") {
		t.Errorf("unknown format: %v", err)
	}
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
