package transform

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/mappings"
)

// The tests build plans the way denorm does (Parse + Resolve) against a
// hand-written catalog, and feed rows without any database.

func col(name, typ string, notNull bool) mappings.Column {
	cat := map[string]string{"int4": "N", "int8": "N", "numeric": "N", "text": "S", "timestamptz": "D", "bool": "B"}[typ]
	return mappings.Column{Name: name, Type: typ, TypeName: typ, Category: cat, NotNull: notNull}
}

func testCatalog() *mappings.Catalog {
	tables := []*mappings.Table{
		{Name: "post", PrimaryKey: []string{"id"}, Columns: []mappings.Column{
			col("id", "int4", true), col("name", "text", true), col("summary", "text", false)}},
		{Name: "comment", PrimaryKey: []string{"id"}, Columns: []mappings.Column{
			col("id", "int4", true), col("post_id", "int4", true), col("author", "text", true),
			col("created_at", "timestamptz", true)}},
		{Name: "order_line", PrimaryKey: []string{"region", "order_no", "line_no"}, Columns: []mappings.Column{
			col("region", "text", true), col("order_no", "int4", true), col("line_no", "int4", true), col("sku", "text", true)}},
		{Name: "publisher", PrimaryKey: []string{"id"}, Columns: []mappings.Column{
			col("id", "text", true), col("name", "text", true)}},
		{Name: "book", PrimaryKey: []string{"id"}, Columns: []mappings.Column{
			col("id", "text", true), col("pub_id", "text", false), col("isbn", "text", false),
			col("price", "numeric", false), col("pages", "int4", false)}},
		{Name: "contact_detail_type", PrimaryKey: []string{"id"}, Columns: []mappings.Column{
			col("id", "int4", true), col("name", "text", true)}},
		{Name: "contact_detail", PrimaryKey: []string{"id"}, Columns: []mappings.Column{
			col("id", "int4", true), col("person_id", "int4", true), col("type_id", "int4", true),
			col("detail", "text", true), col("extension", "int4", false)}},
		{Name: "person", PrimaryKey: []string{"id"}, Columns: []mappings.Column{
			col("id", "int4", true), col("first_name", "text", true), col("last_name", "text", false)}},
	}
	cat := &mappings.Catalog{Tables: map[string]*mappings.Table{}}
	for _, t := range tables {
		t.Schema = "public"
		cat.Tables["public."+t.Name] = t
	}
	return cat
}

func plan(t *testing.T, yaml string) *mappings.Plan {
	t.Helper()
	f, err := mappings.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	p, err := mappings.Resolve(f, testCatalog())
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	return p
}

// row lays out named values in n's row order (Columns, then JoinKeyCols).
func row(t *testing.T, n *mappings.Node, vals map[string]any) []any {
	t.Helper()
	r := make([]any, len(n.Columns)+len(n.JoinKeyCols))
	seen := 0
	for i, c := range n.Columns {
		if v, ok := vals[c.Name]; ok {
			r[i] = v
			seen++
		}
	}
	if seen != len(vals) {
		t.Fatalf("row %v: some columns are not read by %s (reads %v)", vals, n.Path, n.Columns)
	}
	return r
}

// fixedRel answers every Related call of a node with the same rows.
type fixedRel map[*mappings.Node][][]any

func (f fixedRel) Related(n *mappings.Node, _ []any) [][]any { return f[n] }

// flat renders a document body as plain Go values for comparisons.
func flat(v any) any {
	switch x := v.(type) {
	case Doc:
		out := make([]any, 0, 2*len(x))
		for _, f := range x {
			out = append(out, f.Key, flat(f.Value))
		}
		return out
	case Array:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = flat(e)
		}
		return out
	}
	return v
}

const blogPlan = `
version: 1
collections:
  - name: comments
    table: comment
    bucket: {by: post_id, size: 2, orderBy: [created_at, id], items: comments}
    fields: [id, author]
`

func commentRows(t *testing.T, n *mappings.Node, spec ...[2]int) [][]any {
	t.Helper()
	var out [][]any
	for _, s := range spec { // {post_id, id}
		out = append(out, row(t, n, map[string]any{"id": int32(s[1]), "post_id": int32(s[0]), "author": fmt.Sprintf("a%d", s[1]),
			"created_at": time.Date(2024, 1, 1, 0, 0, s[1], 0, time.UTC)}))
	}
	return out
}

// pageIDs returns "id:items" per page document.
func pageIDs(docs []Document) []string {
	var out []string
	for _, d := range docs {
		items, _ := d.Body.Get("comments")
		if items == nil {
			items, _ = d.Body.Get("lines")
		}
		ids := ""
		for _, it := range items.(Array) {
			v := it.(Doc)[0].Value
			ids += fmt.Sprintf(",%v", v)
		}
		out = append(out, fmt.Sprintf("%v:%s", d.ID, ids[1:]))
	}
	return out
}

func TestPager(t *testing.T) {
	cp := plan(t, blogPlan).Collections[0]
	skip := plan(t, `
version: 1
collections:
  - name: comments
    table: comment
    bucket: {by: post_id, size: 2, orderBy: [created_at, id], items: comments, skipLast: 1}
    fields: [id, author]
`).Collections[0]
	tests := []struct {
		name    string
		cp      *mappings.CollectionPlan
		batches [][][2]int // batches of {post_id, id}
		resume  *PagerState
		want    []string // pages in order, "_id:item ids"
	}{
		{"exactly one page", cp, [][][2]int{{{1, 1}, {1, 2}}}, nil, []string{"1-0:1,2"}},
		{"one more than a page", cp, [][][2]int{{{1, 1}, {1, 2}, {1, 3}}}, nil, []string{"1-0:1,2", "1-1:3"}},
		{"parent change ends a partial page", cp, [][][2]int{{{1, 1}, {2, 2}, {2, 3}, {2, 4}, {3, 5}}}, nil,
			[]string{"1-0:1", "2-0:2,3", "2-1:4", "3-0:5"}},
		{"pages straddle batches", cp, [][][2]int{{{1, 1}}, {{1, 2}, {1, 3}}, {}, {{1, 4}, {1, 5}}}, nil,
			[]string{"1-0:1,2", "1-1:3,4", "1-2:5"}},
		{"no rows, no pages", cp, [][][2]int{{}}, nil, nil},
		{"skipLast holds back each parent's last row", skip, [][][2]int{{{1, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {3, 6}}}, nil,
			[]string{"1-0:1,2", "3-0:5"}},
		{"skipLast across batches", skip, [][][2]int{{{1, 1}, {1, 2}}, {{1, 3}}, {{1, 4}}}, nil,
			[]string{"1-0:1,2", "1-1:3"}},
		{"resume continues the page numbers of the same parent", cp, [][][2]int{{{7, 9}, {7, 10}, {7, 11}, {8, 12}}},
			&PagerState{ParentKey: "7", Page: 3}, []string{"7-4:9,10", "7-5:11", "8-0:12"}},
		{"resume then another parent starts at page 0", cp, [][][2]int{{{8, 1}}},
			&PagerState{ParentKey: "7", Page: 3}, []string{"8-0:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPager(tc.cp, tc.resume)
			var docs []Document
			for _, b := range tc.batches {
				d, errs := p.Add(commentRows(t, tc.cp.Root, b...), fixedRel{})
				if len(errs) > 0 {
					t.Fatalf("errors: %v", errs)
				}
				docs = append(docs, d...)
			}
			docs = append(docs, p.Flush()...)
			if d := cmp.Diff(tc.want, pageIDs(docs)); d != "" {
				t.Errorf("pages (-want +got):\n%s", d)
			}
			for _, d := range docs {
				page, _ := d.Body.Get("page")
				postID, _ := d.Body.Get("postId")
				if want := fmt.Sprintf("%v-%v", postID, page); d.ID != want || d.Page == nil || d.Page.Page != int(page.(int32)) {
					t.Errorf("page %v: postId %v page %v state %+v", d.ID, postID, page, d.Page)
				}
				if d.Body[0].Key != "_id" {
					t.Errorf("page %v: body %v", d.ID, d.Body)
				}
			}
			// The position is after the last item of the last page.
			last, state, ok := p.Position()
			if ok != (len(docs) > 0) {
				t.Fatalf("position set %v after %d pages", ok, len(docs))
			}
			if ok {
				end := docs[len(docs)-1]
				items, _ := end.Body.Get("comments")
				lastItem := items.(Array)[len(items.(Array))-1].(Doc)[0].Value
				if state != *end.Page || last[idCol(t, tc.cp.Root)] != lastItem {
					t.Errorf("position: row %v state %+v, want the row of item %v on page %+v", last, state, lastItem, *end.Page)
				}
			}
		})
	}
}

// idCol is the index of column id in n's rows.
func idCol(t *testing.T, n *mappings.Node) int {
	t.Helper()
	for i, c := range n.Columns {
		if c.Name == "id" {
			return i
		}
	}
	t.Fatal("no column id")
	return -1
}

func TestPagerResumeStateMatchesNextRun(t *testing.T) {
	cp := plan(t, blogPlan).Collections[0]
	rows := commentRows(t, cp.Root, [2]int{1, 1}, [2]int{1, 2}, [2]int{1, 3}, [2]int{1, 4}, [2]int{1, 5})
	// Uninterrupted run.
	p := NewPager(cp, nil)
	all, _ := p.Add(rows, fixedRel{})
	all = append(all, p.Flush()...)
	// Interrupted after the first page: resume from its state with the
	// rows after its last row.
	p1 := NewPager(cp, nil)
	first, _ := p1.Add(rows[:2], fixedRel{})
	if len(first) != 1 {
		t.Fatalf("first run wrote %d pages", len(first))
	}
	p2 := NewPager(cp, first[0].Page)
	rest, _ := p2.Add(rows[2:], fixedRel{})
	rest = append(rest, p2.Flush()...)
	if d := cmp.Diff(pageIDs(all), pageIDs(append(first, rest...))); d != "" {
		t.Errorf("resumed pages differ from an uninterrupted run (-want +got):\n%s", d)
	}
	postID, _ := rest[0].Body.Get("postId")
	if postID != int32(1) {
		t.Errorf("resumed page postId = %v, want 1", postID)
	}
}

func TestPagerCompositeParent(t *testing.T) {
	cp := plan(t, `
version: 1
collections:
  - name: lines
    table: order_line
    bucket: {by: [region, order_no], size: 2, orderBy: line_no, items: lines}
    fields: [line_no, sku]
`).Collections[0]
	var rows [][]any
	for _, r := range []struct {
		region string
		order  int32
		line   int32
	}{{"eu", 1, 1}, {"eu", 1, 2}, {"eu", 1, 3}, {"eu", 2, 1}, {"us", 1, 1}} {
		rows = append(rows, row(t, cp.Root, map[string]any{"region": r.region, "order_no": r.order, "line_no": r.line, "sku": "x"}))
	}
	p := NewPager(cp, nil)
	docs, errs := p.Add(rows, fixedRel{})
	docs = append(docs, p.Flush()...)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []string{"eu-1-0:1,2", "eu-1-1:3", "eu-2-0:1", "us-1-0:1"}
	if d := cmp.Diff(want, pageIDs(docs)); d != "" {
		t.Errorf("pages (-want +got):\n%s", d)
	}
	wantBody := []any{"_id", "eu-1-0", "region", "eu", "orderNo", int32(1), "page", int32(0),
		"lines", []any{[]any{"lineNo", int32(1), "sku", "x"}, []any{"lineNo", int32(2), "sku", "x"}}}
	if d := cmp.Diff(wantBody, flat(docs[0].Body)); d != "" {
		t.Errorf("first page (-want +got):\n%s", d)
	}
}

func TestDocValue(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("x", 3600))
	tests := []struct {
		name    string
		in      any
		want    any
		wantErr bool
	}{
		{"nil", nil, nil, false},
		{"string", "a", "a", false},
		{"bool", true, true, false},
		{"float64", 1.5, 1.5, false},
		{"small int is int32", 42, int32(42), false},
		{"negative int32 bound", math.MinInt32, int32(math.MinInt32), false},
		{"int above int32 is int64", math.MaxInt32 + 1, int64(math.MaxInt32 + 1), false},
		{"int8", int8(-3), int32(-3), false},
		{"uint8", uint8(200), int32(200), false},
		{"uint32 large", uint32(math.MaxUint32), int64(math.MaxUint32), false},
		{"uint64 in range", uint64(7), int32(7), false},
		{"uint64 out of range", uint64(math.MaxUint64), nil, true},
		{"uint out of range", uint(math.MaxUint64), nil, true},
		{"float32", float32(0.5), 0.5, false},
		{"time in UTC", now, now.UTC(), false},
		{"bytes are binary", []byte{1, 2}, Binary{1, 2}, false},
		{"list", []any{1, "b", nil}, []any{int32(1), "b", nil}, false},
		{"strings", []string{"x", "y"}, []any{"x", "y"}, false},
		{"map keys sorted", map[string]any{"b": 2, "a": map[string]any{"z": 1, "y": 2}},
			[]any{"a", []any{"y", int32(2), "z", int32(1)}, "b", int32(2)}, false},
		{"bad element", []any{struct{}{}}, nil, true},
		{"unsupported type", struct{}{}, nil, true},
		{"func", func() {}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := docValue(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("docValue(%v) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if d := cmp.Diff(tc.want, flat(got)); d != "" {
				t.Errorf("docValue(%v) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

func TestExpressionFields(t *testing.T) {
	p := plan(t, `
version: 1
collections:
  - name: people
    table: person
    fields:
      - {name: name, expr: 'first_name + " " + (last_name ?? "")'}
      - {name: initials, expr: 'first_name[0:1]'}
      - {name: big, expr: 'id * 1000000000'}
      - {name: nothing, expr: 'last_name'}
      - {name: tags, expr: '{"b": 1, "a": [id]}'}
`)
	cp := p.Collections[0]
	tests := []struct {
		name string
		vals map[string]any
		want []any
	}{
		{"values", map[string]any{"id": int32(3), "first_name": "Zoë", "last_name": "Å"},
			[]any{"_id", int32(3), "name", "Zoë Å", "initials", "Z", "big", int64(3000000000), "nothing", "Å",
				"tags", []any{"a", []any{int32(3)}, "b", int32(1)}}},
		{"NULL defaulted and a nil result left out", map[string]any{"id": int32(1), "first_name": "Al", "last_name": nil},
			[]any{"_id", int32(1), "name", "Al ", "initials", "A", "big", int32(1000000000),
				"tags", []any{"a", []any{int32(1)}, "b", int32(1)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := BuildOne(cp, row(t, cp.Root, tc.vals), fixedRel{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, flat(d.Body)); diff != "" {
				t.Errorf("document (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAggregateZeroValues(t *testing.T) {
	const m = `
version: 1
numeric: %s
collections:
  - name: publishers
    table: publisher
    fields:
      - {name: n, aggregate: {fn: count, table: book, join: {pub_id: id}}}
      - {name: nIsbn, aggregate: {fn: count, table: book, join: {pub_id: id}, column: isbn}}
      - {name: pages, aggregate: {fn: sum, table: book, join: {pub_id: id}, column: pages}}
      - {name: price, aggregate: {fn: sum, table: book, join: {pub_id: id}, column: price}}
      - {name: minPrice, aggregate: {fn: min, table: book, join: {pub_id: id}, column: price}}
      - {name: maxPages, aggregate: {fn: max, table: book, join: {pub_id: id}, column: pages}}
      - {name: avgPages, aggregate: {fn: avg, table: book, join: {pub_id: id}, column: pages}}
`
	for _, tc := range []struct {
		numeric                string
		zeroPrice, price, mean any
	}{
		{"decimal", Decimal("0"), Decimal("12.50"), Decimal("333.3333333333333333")},
		{"double", float64(0), 12.5, 333.3333333333333},
		{"string", "0", "12.50", "333.3333333333333333"},
	} {
		t.Run(tc.numeric, func(t *testing.T) {
			cp := plan(t, fmt.Sprintf(m, tc.numeric)).Collections[0]
			root := row(t, cp.Root, map[string]any{"id": "p1"})
			// Over no rows: count and sum are 0, min/max/avg left out.
			d, err := BuildOne(cp, root, fixedRel{})
			if err != nil {
				t.Fatal(err)
			}
			want := []any{"_id", "p1", "n", int64(0), "nIsbn", int64(0), "pages", int64(0), "price", tc.zeroPrice}
			if diff := cmp.Diff(want, flat(d.Body)); diff != "" {
				t.Errorf("no rows (-want +got):\n%s", diff)
			}
			// With rows, each aggregate's value is its own result row's:
			// every aggregate gets another value, so a value given to the
			// wrong field, or left out, shows.
			result := map[string]any{"n": int64(3), "nIsbn": int64(2), "pages": int64(1000), "price": tc.price,
				"minPrice": tc.price, "maxPages": int32(400), "avgPages": tc.mean}
			rel := fixedRel{}
			for i := range cp.Root.Fields {
				f := &cp.Root.Fields[i]
				if f.Kind == mappings.FieldAggregate {
					rel[f.Embed] = [][]any{append([]any{result[f.Name]}, make([]any, len(f.Embed.JoinKeyCols))...)}
				}
			}
			d, err = BuildOne(cp, root, rel)
			if err != nil {
				t.Fatal(err)
			}
			want = []any{"_id", "p1", "n", int64(3), "nIsbn", int64(2), "pages", int64(1000), "price", tc.price,
				"minPrice", tc.price, "maxPages", int32(400), "avgPages", tc.mean}
			if diff := cmp.Diff(want, flat(d.Body)); diff != "" {
				t.Errorf("with rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIDArraysSkipNULLs(t *testing.T) {
	cp := plan(t, `
version: 1
collections:
  - name: publishers
    table: publisher
    fields:
      - name: isbns
        ids: {table: book, join: {pub_id: id}, column: isbn}
      - name: books
        ids: {table: book, join: {pub_id: id}}
`).Collections[0]
	isbns, books := cp.Root.Fields[0].Embed, cp.Root.Fields[1].Embed
	rel := fixedRel{
		isbns: {row(t, isbns, map[string]any{"isbn": "i1"}), row(t, isbns, map[string]any{"isbn": nil}), row(t, isbns, map[string]any{"isbn": "i3"})},
		books: {},
	}
	d, err := BuildOne(cp, row(t, cp.Root, map[string]any{"id": "p"}), rel)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"_id", "p", "isbns", []any{"i1", "i3"}, "books", []any{}}
	if diff := cmp.Diff(want, flat(d.Body)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPivot(t *testing.T) {
	cp := plan(t, `
version: 1
collections:
  - name: people
    table: person
    fields:
      - name: contactDetails
        embed:
          table: contact_detail
          join: {person_id: id}
          orderBy: id
          lookups:
            - {name: type, table: contact_detail_type, join: {id: type_id}}
          fields:
            - {key: type.name, column: detail}
            - extension
`).Collections[0]
	cd := cp.Root.Fields[0].Embed
	lookup := cd.Children[0]
	if !lookup.IsLookup() {
		t.Fatalf("first child of %s is not the lookup", cd.Path)
	}
	person := row(t, cp.Root, map[string]any{"id": int32(1)})
	tests := []struct {
		name    string
		typ     any
		ext     any
		want    []any
		wantErr bool
	}{
		{"email without extension", "email", nil, []any{"email", "x"}, false},
		{"phone with extension", "phone", int32(5555), []any{"phone", "x", "extension", int32(5555)}, false},
		{"unicode key", "電話", nil, []any{"電話", "x"}, false},
		{"integer key", int32(7), nil, []any{"7", "x"}, false},
		{"NULL key is an error", nil, nil, nil, true},
		{"empty key is an error", "", nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rel := fixedRel{
				cd:     {row(t, cd, map[string]any{"id": int32(1), "type_id": int32(1), "detail": "x", "extension": tc.ext})},
				lookup: {row(t, lookup, map[string]any{"name": tc.typ})},
			}
			d, err := BuildOne(cp, person, rel)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			want := []any{"_id", int32(1), "contactDetails", []any{tc.want}}
			if diff := cmp.Diff(want, flat(d.Body)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// A lookup that found no row: the pivot's key is NULL, an error naming
	// the column.
	rel := fixedRel{cd: {row(t, cd, map[string]any{"id": int32(1), "type_id": int32(9), "detail": "x"})}}
	if _, err := BuildOne(cp, person, rel); err == nil {
		t.Error("a pivot whose lookup found no row built a document")
	}
}

// TestPagerFlushStartsOver: rows added after Flush start a new parent at
// page 0, even the parent that was current (a key-set read flushes the
// pager after each group of parents).
func TestPagerFlushStartsOver(t *testing.T) {
	cp := plan(t, blogPlan).Collections[0]
	p := NewPager(cp, nil)
	docs, _ := p.Add(commentRows(t, cp.Root, [2]int{1, 1}, [2]int{1, 2}, [2]int{1, 3}), fixedRel{})
	docs = append(docs, p.Flush()...)
	more, _ := p.Add(commentRows(t, cp.Root, [2]int{2, 4}, [2]int{1, 5}), fixedRel{})
	docs = append(append(docs, more...), p.Flush()...)
	if d := cmp.Diff([]string{"1-0:1,2", "1-1:3", "2-0:4", "1-0:5"}, pageIDs(docs)); d != "" {
		t.Errorf("pages (-want +got):\n%s", d)
	}
}
