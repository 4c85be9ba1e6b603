package pipeline

import (
	"strings"
	"testing"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// TestTargetProblems: a server without Decimal128 refuses every field a
// plan writes as Decimal128 (a NUMERIC column, an array of NUMERIC, in
// numeric mode decimal), naming it and the ways out; other targets, and
// other numeric modes, refuse nothing.
func TestTargetProblems(t *testing.T) {
	planWith := func(mode mappings.NumericMode) *mappings.Plan {
		root := &mappings.Node{
			Columns: []mappings.Column{{Name: "id", TypeName: "int4"}, {Name: "bal", TypeName: "numeric"}, {Name: "hist", TypeName: "_numeric", ElemTypeName: "numeric"}, {Name: "n", TypeName: "text"}},
			Numeric: []mappings.NumericMode{mode, mode, mode, mode},
			Fields: []mappings.FieldPlan{
				{Kind: mappings.FieldColumn, Name: "balance", Value: mappings.Ref{Col: 1}, Pos: mappings.Pos{Line: 5, Col: 9}},
				{Kind: mappings.FieldColumn, Name: "history", Value: mappings.Ref{Col: 2}},
				{Kind: mappings.FieldColumn, Name: "name", Value: mappings.Ref{Col: 3}},
			},
		}
		return &mappings.Plan{File: &mappings.File{Path: "m.yaml"}, Collections: []*mappings.CollectionPlan{{Name: "accounts", Root: root, IDCols: []int{0}}}}
	}
	ferret := load.Caps{Parallel: true, Delete: true, NoDecimal128: true, Server: "FerretDB 1.24.0"}
	ps := TargetProblems(planWith(mappings.NumericDecimal), ferret)
	if len(ps) != 2 || !strings.HasPrefix(ps[0].String(), "m.yaml:5:9: accounts.balance: NUMERIC is written as BSON Decimal128") ||
		!strings.Contains(ps[0].Msg, "(FerretDB 1.24.0) cannot store") || !strings.Contains(ps[0].Msg, "`numeric: double`") ||
		!strings.Contains(ps[1].Msg, "accounts.history:") {
		t.Errorf("problems on FerretDB: %v", ps)
	}
	if ps := TargetProblems(planWith(mappings.NumericDecimal), load.Caps{Parallel: true, Delete: true, Server: "MongoDB 7.0.14"}); ps != nil {
		t.Errorf("problems on MongoDB: %v", ps)
	}
	for _, mode := range []mappings.NumericMode{mappings.NumericDouble, mappings.NumericString} {
		if ps := TargetProblems(planWith(mode), ferret); ps != nil {
			t.Errorf("numeric: %s: problems %v", mode, ps)
		}
	}
}

// TestTargetProblemsQuoteNames: FerretDB 1.24 fails a whole insert
// ("malformed JSON") on a top-level field name holding a double quote
// (found by the differential fuzzer): such names the mapping gives - a
// document's fields, a bucket page's fields - are refused before anything
// is written, naming the field; embedded names and other servers pass.
func TestTargetProblemsQuoteNames(t *testing.T) {
	embed := &mappings.Node{Fields: []mappings.FieldPlan{{Kind: mappings.FieldColumn, Name: `in"side`}}}
	docs := &mappings.CollectionPlan{Name: "people", Root: &mappings.Node{Fields: []mappings.FieldPlan{
		{Kind: mappings.FieldColumn, Name: "name"},
		{Kind: mappings.FieldAggregate, Name: `count"s`, Pos: mappings.Pos{Line: 7, Col: 11}},
		{Kind: mappings.FieldEmbed, Name: "kids", Embed: embed},
		{Kind: mappings.FieldColumn, Pivot: &mappings.Ref{}},
	}}}
	pages := &mappings.CollectionPlan{Name: "comments", Pos: mappings.Pos{Line: 12, Col: 5}, Root: &mappings.Node{},
		Bucket: &mappings.BucketPlan{ByNames: []string{`post"Id`}, Items: "items", Page: "page"}}
	plan := &mappings.Plan{File: &mappings.File{Path: "m.yaml"}, Collections: []*mappings.CollectionPlan{docs, pages}}
	ferret := load.Caps{NoQuoteInNames: true, Server: "FerretDB 1.24.0"}
	ps := TargetProblems(plan, ferret)
	if len(ps) != 2 || !strings.HasPrefix(ps[0].String(), `m.yaml:7:11: people: field name "count\"s" holds a double quote`) ||
		!strings.Contains(ps[0].Msg, "(FerretDB 1.24.0) cannot store") || !strings.HasPrefix(ps[1].String(), `m.yaml:12:5: comments: field name "post\"Id"`) {
		t.Errorf("problems on FerretDB: %v", ps)
	}
	if ps := TargetProblems(plan, load.Caps{Server: "MongoDB 7.0.14"}); ps != nil {
		t.Errorf("problems on MongoDB: %v", ps)
	}
}
