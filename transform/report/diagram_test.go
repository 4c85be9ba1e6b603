package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/denorm/denorm/mappings"
)

// bigModel is a model of n collections, each with nested arrays and
// objects, a bucket every fifth, a reference from each to the next two
// (the last ones wrapping round), an id array to itself, and hostile
// names.
func bigModel(n int) *Model {
	m := &Model{}
	name := func(i int) string {
		if i%3 == 0 {
			return fmt.Sprintf(`c%d<script>&"'x`, i)
		}
		return fmt.Sprintf("collection%d%s", i, strings.Repeat("w", i%7))
	}
	for i := 0; i < n; i++ {
		e := &ModelEntry{Table: "public.t" + fmt.Sprint(i), HasStats: true, Documents: int64(i * 1000), Size: Distribution{P50: 100, P99: 2000, Max: 40000}}
		e.Fields = []*ModelField{{Name: "_id", Path: "_id", Kind: FieldID, Index: true, Unique: true, Shard: i%2 == 0}}
		to1, to2 := name((i+1)%n), name((i+5)%n)
		e.Fields = append(e.Fields,
			&ModelField{Name: "ref<1>", Path: "ref<1>", Kind: FieldRef, Ref: to1, Index: true},
			&ModelField{Name: "lines", Path: "lines", Kind: FieldArray, Table: "public.line&item", Limit: 3, Stats: &ArrayStat{P50: 2, P99: 9, Max: 12},
				Children: []*ModelField{
					{Name: "productId", Path: "lines[].productId", Kind: FieldRef, Ref: to2},
					{Name: "addr", Path: "lines[].addr", Kind: FieldObject, Table: "public.address", Children: []*ModelField{
						{Name: "theWidestLineOfTheBoxIsNestedTwoLevelsDeep", Path: "lines[].addr.theWidestLineOfTheBoxIsNestedTwoLevelsDeep", Kind: FieldPlain, Index: true},
						{Kind: FieldMore, More: 4}}},
					{Kind: FieldMore, More: 2},
				}},
			&ModelField{Name: "self", Path: "self", Kind: FieldIds, Ref: name(i), Stats: &ArrayStat{P50: 1, P99: 3, Max: 3}},
			&ModelField{Kind: FieldMore, More: i},
		)
		m.Arrows = append(m.Arrows, ModelArrow{From: name(i), To: to1, Path: "ref<1>"}, ModelArrow{From: name(i), To: to2, Path: "lines[].productId"},
			ModelArrow{From: name(i), To: name(i), Path: "self", Ids: true})
		if i%5 == 4 {
			e.Bucket, e.PageSize, e.By = true, 50, "parentId"
		}
		mc := &ModelCollection{Name: name(i), Entries: []*ModelEntry{e}}
		if i == 2 { // a shared collection: two entries
			mc.Entries = append(mc.Entries, &ModelEntry{Table: "public.other", Fields: []*ModelField{{Name: "_id", Path: "_id", Kind: FieldID, Index: true, Unique: true}}})
		}
		m.Collections = append(m.Collections, mc)
	}
	// A reference to a collection the model has not: drawn as text only.
	m.Arrows = append(m.Arrows, ModelArrow{From: name(0), To: "elsewhere", Path: "ref<1>"})
	return m
}

type rect struct{ x0, y0, x1, y1 int }

func (a rect) overlaps(b rect) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }

// labelRect is a label's box: its estimated width, from the baseline up
// by the font's ascent and down by its descent.
func labelRect(l DiagramLabel) rect { return rect{l.X, l.Y - 12, l.X + l.W, l.Y + 4} }

// checkLayout checks d: boxes apart; labels inside their box and apart;
// nested boxes inside their box; every arrow orthogonal, from its
// source box's right edge to its target box's left edge, and crossing no
// box on the way.
func checkLayout(t *testing.T, m *Model, d *Diagram) {
	t.Helper()
	if len(d.Boxes) != len(m.Collections) {
		t.Fatalf("%d boxes for %d collections", len(d.Boxes), len(m.Collections))
	}
	box := map[string]*DiagramBox{}
	for i, b := range d.Boxes {
		if b.Name != m.Collections[i].Name {
			t.Errorf("box %d is %q, want %q", i, b.Name, m.Collections[i].Name)
		}
		box[b.Name] = b
		r := rect{b.X, b.Y, b.X + b.W, b.Y + b.H}
		if r.x0 < 0 || r.y0 < dgLegendH || r.x1 > d.W || r.y1 > d.H {
			t.Errorf("box %q %+v outside the drawing %dx%d", b.Name, r, d.W, d.H)
		}
		for _, o := range d.Boxes[i+1:] {
			if r.overlaps(rect{o.X, o.Y, o.X + o.W, o.Y + o.H}) {
				t.Errorf("boxes %q and %q overlap", b.Name, o.Name)
			}
		}
		for j, l := range b.Labels {
			lr := labelRect(l)
			if lr.x0 < b.X || lr.x1 > b.X+b.W || lr.y0 < b.Y || lr.y1 > b.Y+b.H {
				t.Errorf("label %q %+v outside its box %q", l.Text, lr, b.Name)
			}
			for _, n := range b.Nests {
				if l.X > n.X && l.X < n.X+n.W && l.Y > n.Y && l.Y < n.Y+n.H && lr.x1 > n.X+n.W {
					t.Errorf("label %q %+v crosses the right edge of its nested box %q %+v", l.Text, lr, n.Path, n)
				}
			}
			for _, o := range b.Labels[j+1:] {
				if lr.overlaps(labelRect(o)) {
					t.Errorf("labels %q and %q of %q overlap", l.Text, o.Text, b.Name)
				}
			}
		}
		for _, n := range b.Nests {
			if n.X <= b.X || n.X+n.W >= b.X+b.W || n.Y <= b.Y || n.Y+n.H >= b.Y+b.H || n.W <= 0 {
				t.Errorf("nested box %q %+v outside its box %q", n.Path, n, b.Name)
			}
		}
	}
	for i, l := range d.Legend {
		for _, o := range d.Legend[i+1:] {
			if labelRect(l).overlaps(labelRect(o)) {
				t.Errorf("legend labels %q and %q overlap", l.Text, o.Text)
			}
		}
	}
	drawn := 0
	for _, a := range m.Arrows {
		if box[a.From] != nil && box[a.To] != nil {
			drawn++
		}
	}
	if len(d.Arrows) != drawn {
		t.Errorf("%d arrows drawn for %d references between the model's collections", len(d.Arrows), drawn)
	}
	type seg struct{ a, b [2]int }
	var segs []seg
	for _, a := range d.Arrows {
		src, dst := box[a.From], box[a.To]
		p := a.Points
		if p[0][0] != src.X+src.W || p[0][1] <= src.Y || p[0][1] >= src.Y+src.H {
			t.Errorf("arrow %s.%s does not leave its box's right edge: %v", a.From, a.Path, p[0])
		}
		if last := p[len(p)-1]; last[0] != dst.X || last[1] <= dst.Y || last[1] >= dst.Y+dst.H {
			t.Errorf("arrow %s.%s does not end on %q's left edge: %v", a.From, a.Path, a.To, last)
		}
		for i := 1; i < len(p); i++ {
			if p[i][0] != p[i-1][0] && p[i][1] != p[i-1][1] {
				t.Errorf("arrow %s.%s has a slanted segment %v-%v", a.From, a.Path, p[i-1], p[i])
			}
			s := rect{min(p[i][0], p[i-1][0]), min(p[i][1], p[i-1][1]), max(p[i][0], p[i-1][0]), max(p[i][1], p[i-1][1])}
			for _, b := range d.Boxes {
				// A segment crosses a box when it enters its inside
				// (ending on its edge is arriving).
				in := rect{b.X + 1, b.Y + 1, b.X + b.W - 1, b.Y + b.H - 1}
				if (rect{s.x0, s.y0, s.x1 + 1, s.y1 + 1}).overlaps(in) {
					t.Errorf("arrow %s.%s crosses box %q: segment %v-%v", a.From, a.Path, b.Name, p[i-1], p[i])
				}
			}
			segs = append(segs, seg{p[i-1], p[i]})
		}
	}
	// No two arrows run along each other: parallel segments on one line
	// do not share a stretch (their lanes differ), except the short ends
	// entering one box, which come in at different heights.
	for i, s := range segs {
		for _, o := range segs[i+1:] {
			if s.a[0] == s.b[0] && o.a[0] == o.b[0] && s.a[0] == o.a[0] { // vertical, same x
				if min(s.a[1], s.b[1]) < max(o.a[1], o.b[1]) && min(o.a[1], o.b[1]) < max(s.a[1], s.b[1]) {
					t.Errorf("vertical segments %v and %v overlap", s, o)
				}
			}
			if s.a[1] == s.b[1] && o.a[1] == o.b[1] && s.a[1] == o.a[1] { // horizontal, same y
				if min(s.a[0], s.b[0]) < max(o.a[0], o.b[0]) && min(o.a[0], o.b[0]) < max(s.a[0], s.b[0]) {
					t.Errorf("horizontal segments %v and %v overlap", s, o)
				}
			}
		}
	}
}

func TestDiagramLayout(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 16, 23} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			m := bigModel(n)
			d := Layout(m)
			checkLayout(t, m, d)
			// Deterministic: the same model, the same drawing.
			var a, b bytes.Buffer
			if err := d.WriteSVG(&a); err != nil {
				t.Fatal(err)
			}
			if err := Layout(bigModel(n)).WriteSVG(&b); err != nil {
				t.Fatal(err)
			}
			if a.String() != b.String() {
				t.Error("two layouts of one model differ")
			}
		})
	}
}

// Every name reaches the SVG escaped; every collection and arrow is named
// in a data- attribute.
func TestDiagramSVGEscapes(t *testing.T) {
	m := bigModel(7)
	var b bytes.Buffer
	if err := ModelSVG(&b, m); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if strings.Contains(svg, "<script") || strings.Contains(svg, `&"`) || strings.Contains(svg, "ref<1>") {
		t.Errorf("a name reached the SVG unescaped:\n%s", svg)
	}
	for _, mc := range m.Collections {
		want := `data-collection="` + htmlEscape(mc.Name) + `"`
		if strings.Count(svg, want) != 1 {
			t.Errorf("%s appears %d times, want once", want, strings.Count(svg, want))
		}
	}
	for _, a := range m.Arrows {
		if a.To == "elsewhere" {
			continue
		}
		want := fmt.Sprintf(`data-from="%s" data-to="%s" data-field="%s"`, htmlEscape(a.From), htmlEscape(a.To), htmlEscape(a.Path))
		if !strings.Contains(svg, want) {
			t.Errorf("no arrow %s", want)
		}
	}
	if !strings.Contains(svg, "c0&lt;script&gt;&amp;&#34;&#39;x") {
		t.Error("hostile collection name not shown escaped")
	}
	if strings.Contains(svg, "data-to=\"elsewhere\"") {
		t.Error("an arrow to a collection the model has not")
	}
}

func htmlEscape(s string) string {
	var b bytes.Buffer
	b.WriteString(strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(s))
	return b.String()
}

// ModelOf finds the collections, nested arrays, references, buckets and
// index marks of a plan, and WithStats the figures by path.
func TestModelOf(t *testing.T) {
	people := testPlan()
	ct := &mappings.Table{Schema: "public", Name: "comment"}
	pages := &mappings.CollectionPlan{Name: "pages", Root: &mappings.Node{Kind: mappings.NodeRoot, Table: ct,
		Fields: []mappings.FieldPlan{{Kind: mappings.FieldColumn, Name: "text"}, {Kind: mappings.FieldColumn, Name: "authorId", RefCollection: "people"}}},
		Bucket: &mappings.BucketPlan{Size: 25, Items: "comments", Page: "page", ByNames: []string{"postId"}}}
	plan := &mappings.Plan{Collections: []*mappings.CollectionPlan{people, pages}, Indexes: []mappings.IndexSet{
		{Collection: "people", Indexes: []mappings.Index{{Keys: []mappings.IndexKey{{Field: "addresses.cityId"}}}}, ShardKey: []mappings.IndexKey{{Field: "_id"}}},
		{Collection: "pages", Indexes: []mappings.Index{{Keys: []mappings.IndexKey{{Field: "postId"}, {Field: "page"}}, Unique: true}}},
	}}
	m := ModelOf(plan).WithStats([]*Collection{
		{Name: "people", Table: "public.person", Documents: 7, Arrays: []ArrayStat{{Path: "addresses", P50: 1, P99: 4, Max: 5}}},
		{Name: "pages", Table: "public.comment", Documents: 3, Arrays: []ArrayStat{{Path: "comments", P50: 20, P99: 25, Max: 25}}},
	})
	want := []ModelArrow{{From: "people", To: "cities", Path: "addresses[].cityId"}, {From: "pages", To: "people", Path: "comments[].authorId"}}
	if fmt.Sprint(m.Arrows) != fmt.Sprint(want) {
		t.Errorf("arrows %v, want %v", m.Arrows, want)
	}
	p := m.Collections[0].Entries[0]
	if !p.HasStats || p.Documents != 7 || len(p.Fields) != 3 || !p.Fields[0].Shard {
		t.Fatalf("people: %+v", p)
	}
	addr := p.Fields[1]
	if addr.Kind != FieldArray || addr.Stats == nil || addr.Stats.Max != 5 || len(addr.Children) != 2 ||
		addr.Children[0].Kind != FieldRef || !addr.Children[0].Index || addr.Children[1].More != 1 {
		t.Errorf("addresses: %+v %+v", addr, addr.Children)
	}
	if p.Fields[2].More != 1 {
		t.Errorf("people's other fields: %+v", p.Fields[2])
	}
	g := m.Collections[1].Entries[0]
	if !g.Bucket || g.PageSize != 25 || g.By != "postId" || g.Fields[1].Name != "postId" || !g.Fields[1].Index || g.Fields[1].Unique ||
		g.Fields[3].Kind != FieldItems || g.Fields[3].Stats.P50 != 20 {
		t.Errorf("pages: %+v", g)
	}
	checkLayout(t, m, Layout(m))
}
