package testenv

// Whole-target comparison: two MongoDB-wire databases, every collection
// read in _id order and compared document by document as raw BSON, so
// that field order and BSON types count (int32 100, int64 100 and double
// 100.0 differ), as they do for `denorm verify`.
//
// FerretDB 1.24 skips a replace whose document equals the stored one by
// value (int32 100 and double 100.0 are "equal"), so a target kept current
// by replaces can keep an old number type where a fresh build has a new
// one. The comparison does not excuse that: it stays exact, and labels a
// document whose only differences are number types with equal values
// ("numbers equal by value, BSON types differ"), so a reader can tell a
// type bug or that quirk from wrong data at once. A mapping's field has one
// type whatever the data (see the README's type table), so a correct
// writer never meets the quirk; one that does has written a wrong type
// first.
//
// Comparing with a directory target is left out: its relaxed Extended
// JSON does not keep int32 apart from int64, so it cannot be exact.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// CompareOptions tune CompareTargets.
type CompareOptions struct {
	// Collections to compare; nil: every collection of either database.
	Collections []string
	// Ignore leaves collections out (e.g. "_denorm", the checkpoints).
	Ignore []string
	// Show is how many differing documents are described (default 10).
	Show int
	// Fields is how many differing fields are listed per document
	// (default 12).
	Fields int
}

// TargetDiff is what CompareTargets found.
type TargetDiff struct {
	// Docs counts the documents read per collection: want side, got side.
	Docs map[string][2]int
	// Count is the number of documents that differ (missing, unexpected
	// or different).
	Count int
	// Diffs describes the first Show of them, in collection and _id order.
	Diffs []DocDiff
}

// Equal reports whether the targets hold the same documents.
func (d *TargetDiff) Equal() bool { return d.Count == 0 }

// DocDiff is one document that differs.
type DocDiff struct {
	Collection string
	ID         string // the _id as relaxed Extended JSON
	// Kind is "missing" (only in want), "unexpected" (only in got) or
	// "different".
	Kind string
	// Fields lists the differing paths of a "different" document.
	Fields []FieldDiff
	// More counts differing paths left out of Fields.
	More int
	// NumberTypesOnly: every difference is a number of another BSON type
	// and equal value.
	NumberTypesOnly bool
	// Want and Got are the documents (nil when absent).
	Want, Got bson.Raw
}

// FieldDiff is one differing path, with both values and their types.
type FieldDiff struct {
	Path      string // "comments[3].author", "" for the document itself
	Want, Got string // "string \"bob\"", "int32 100", "absent", ...
	TypeOnly  bool   // numbers of equal value, different BSON types
}

// String lists the differences for a test failure.
func (d *TargetDiff) String() string {
	var b strings.Builder
	colls := make([]string, 0, len(d.Docs))
	for c := range d.Docs {
		colls = append(colls, c)
	}
	slices.Sort(colls)
	counts := make([]string, len(colls))
	for i, c := range colls {
		n := d.Docs[c]
		counts[i] = fmt.Sprintf("%s %d/%d", c, n[0], n[1])
	}
	if d.Equal() {
		fmt.Fprintf(&b, "identical (documents want/got: %s)", strings.Join(counts, ", "))
		return b.String()
	}
	fmt.Fprintf(&b, "%d documents differ (documents want/got: %s)", d.Count, strings.Join(counts, ", "))
	for _, dd := range d.Diffs {
		b.WriteString("\n  " + dd.String())
	}
	if d.Count > len(d.Diffs) {
		fmt.Fprintf(&b, "\n  ... and %d more documents", d.Count-len(d.Diffs))
	}
	return b.String()
}

func (dd DocDiff) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s _id %s: ", dd.Collection, dd.ID)
	switch dd.Kind {
	case "missing":
		fmt.Fprintf(&b, "missing from the target; want %s", abbrev(dd.Want.String(), 300))
	case "unexpected":
		fmt.Fprintf(&b, "unexpected in the target: %s", abbrev(dd.Got.String(), 300))
	default:
		b.WriteString("different")
		if dd.NumberTypesOnly {
			b.WriteString(" (numbers equal by value, BSON types differ: a wrong type, or FerretDB skipping a replace by an equal-valued document)")
		}
		for _, f := range dd.Fields {
			path := f.Path
			if path == "" {
				path = "(document)"
			}
			fmt.Fprintf(&b, "\n      %s: want %s, found %s", path, f.Want, f.Got)
		}
		if dd.More > 0 {
			fmt.Fprintf(&b, "\n      ... and %d more fields", dd.More)
		}
	}
	return b.String()
}

func abbrev(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// CompareTargets reads every collection of want and got in _id order and
// compares them document by document as raw BSON.
func CompareTargets(ctx context.Context, want, got *mongo.Database, opt CompareOptions) (*TargetDiff, error) {
	if opt.Show <= 0 {
		opt.Show = 10
	}
	if opt.Fields <= 0 {
		opt.Fields = 12
	}
	colls := opt.Collections
	if colls == nil {
		for _, db := range []*mongo.Database{want, got} {
			names, err := db.ListCollectionNames(ctx, bson.D{})
			if err != nil {
				return nil, fmt.Errorf("list collections of %s: %w", db.Name(), err)
			}
			for _, n := range names {
				if !slices.Contains(colls, n) {
					colls = append(colls, n)
				}
			}
		}
		slices.Sort(colls)
	}
	d := &TargetDiff{Docs: map[string][2]int{}}
	for _, c := range colls {
		if slices.Contains(opt.Ignore, c) {
			continue
		}
		if err := compareCollection(ctx, want, got, c, d, opt); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// compareCollection compares one collection; the got side is read ahead
// by a goroutine, so both servers' reads overlap.
func compareCollection(ctx context.Context, want, got *mongo.Database, coll string, d *TargetDiff, opt CompareOptions) error {
	w, err := openSorted(ctx, want, coll)
	if err != nil {
		return err
	}
	defer w.close(ctx)
	g, err := openSorted(ctx, got, coll)
	if err != nil {
		return err
	}
	defer g.close(ctx)
	type item struct {
		doc bson.Raw
		err error
	}
	readCtx, cancel := context.WithCancel(ctx)
	ahead := make(chan item, 256)
	go func() {
		defer close(ahead)
		next := g.next(readCtx)
		for {
			doc, err := next()
			select {
			case ahead <- item{doc, err}:
			case <-readCtx.Done():
				return
			}
			if doc == nil || err != nil {
				return
			}
		}
	}()
	defer func() { // stop the reader before the cursor closes
		cancel()
		for range ahead {
		}
	}()
	nextGot := func() (bson.Raw, error) {
		it, ok := <-ahead
		if !ok {
			return nil, readCtx.Err()
		}
		return it.doc, it.err
	}
	return compareSorted(coll, w.next(ctx), nextGot, d, opt)
}

type sortedCursor struct {
	cur *mongo.Cursor
}

func openSorted(ctx context.Context, db *mongo.Database, coll string) (*sortedCursor, error) {
	cur, err := db.Collection(coll).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("read %s.%s: %w", db.Name(), coll, err)
	}
	return &sortedCursor{cur}, nil
}

func (s *sortedCursor) close(ctx context.Context) { _ = s.cur.Close(ctx) }

// next is the cursor as an iterator: the next document (a copy), nil at
// the end.
func (s *sortedCursor) next(ctx context.Context) func() (bson.Raw, error) {
	return func() (bson.Raw, error) {
		if s.cur.Next(ctx) {
			return slices.Clone(s.cur.Current), nil
		}
		return nil, s.cur.Err()
	}
}

// compareSorted merges two streams of documents in _id order.
func compareSorted(coll string, nextWant, nextGot func() (bson.Raw, error), d *TargetDiff, opt CompareOptions) error {
	var counts [2]int
	var prev [2]bson.RawValue
	read := func(side int, next func() (bson.Raw, error)) (bson.Raw, bson.RawValue, error) {
		doc, err := next()
		if err != nil || doc == nil {
			return nil, bson.RawValue{}, err
		}
		counts[side]++
		id, err := doc.LookupErr("_id")
		if err != nil {
			return nil, bson.RawValue{}, fmt.Errorf("%s: a document without _id: %s", coll, abbrev(doc.String(), 200))
		}
		if counts[side] > 1 && CompareValues(prev[side], id) >= 0 {
			return nil, bson.RawValue{}, fmt.Errorf("%s: the server returned _id %s after %s, out of the comparison's order", coll, id, prev[side])
		}
		prev[side] = id
		return doc, id, nil
	}
	add := func(dd DocDiff) {
		d.Count++
		if len(d.Diffs) < opt.Show {
			d.Diffs = append(d.Diffs, dd)
		}
	}
	w, wid, err := read(0, nextWant)
	if err != nil {
		return err
	}
	g, gid, err := read(1, nextGot)
	if err != nil {
		return err
	}
	for w != nil || g != nil {
		c := 0
		switch {
		case w == nil:
			c = 1
		case g == nil:
			c = -1
		default:
			c = CompareValues(wid, gid)
		}
		switch {
		case c < 0:
			add(DocDiff{Collection: coll, ID: extJSON(wid), Kind: "missing", Want: w})
		case c > 0:
			add(DocDiff{Collection: coll, ID: extJSON(gid), Kind: "unexpected", Got: g})
		case !bytes.Equal(w, g):
			fields := diffDocs("", w, g, nil)
			dd := DocDiff{Collection: coll, ID: extJSON(wid), Kind: "different", Want: w, Got: g, NumberTypesOnly: len(fields) > 0}
			for _, f := range fields {
				dd.NumberTypesOnly = dd.NumberTypesOnly && f.TypeOnly
			}
			if len(fields) > opt.Fields {
				fields, dd.More = fields[:opt.Fields], len(fields)-opt.Fields
			}
			dd.Fields = fields
			if len(dd.Fields) == 0 { // same values, bytes differ (should not happen)
				dd.Fields = []FieldDiff{{Want: abbrev(w.String(), 200), Got: abbrev(g.String(), 200)}}
			}
			add(dd)
		}
		if c <= 0 && w != nil {
			if w, wid, err = read(0, nextWant); err != nil {
				return err
			}
		}
		if c >= 0 && g != nil {
			if g, gid, err = read(1, nextGot); err != nil {
				return err
			}
		}
	}
	d.Docs[coll] = counts
	return nil
}

// diffDocs lists the differing paths of two documents: fields missing on
// either side, fields in another order, and values that differ.
func diffDocs(path string, want, got bson.Raw, out []FieldDiff) []FieldDiff {
	we, _ := want.Elements()
	ge, _ := got.Elements()
	wk, gk := keys(we), keys(ge)
	var common, gotCommon []string
	for _, k := range wk {
		if slices.Contains(gk, k) {
			common = append(common, k)
		}
	}
	for _, k := range gk {
		if slices.Contains(wk, k) {
			gotCommon = append(gotCommon, k)
		}
	}
	if !slices.Equal(common, gotCommon) {
		out = append(out, FieldDiff{Path: path, Want: "fields in order " + strings.Join(wk, ", "), Got: strings.Join(gk, ", ")})
	}
	for _, e := range we {
		k := e.Key()
		i := slices.Index(gk, k)
		if i < 0 {
			out = append(out, FieldDiff{Path: join(path, k), Want: describe(e.Value()), Got: "absent"})
			continue
		}
		out = diffValues(join(path, k), e.Value(), ge[i].Value(), out)
	}
	for _, e := range ge {
		if !slices.Contains(wk, e.Key()) {
			out = append(out, FieldDiff{Path: join(path, e.Key()), Want: "absent", Got: describe(e.Value())})
		}
	}
	return out
}

func keys(es []bson.RawElement) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key()
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func diffValues(path string, w, g bson.RawValue, out []FieldDiff) []FieldDiff {
	if w.Type == g.Type && bytes.Equal(w.Value, g.Value) {
		return out
	}
	switch {
	case w.Type == bson.TypeEmbeddedDocument && g.Type == bson.TypeEmbeddedDocument:
		return diffDocs(path, w.Document(), g.Document(), out)
	case w.Type == bson.TypeArray && g.Type == bson.TypeArray:
		wv, _ := w.Array().Values()
		gv, _ := g.Array().Values()
		if len(wv) != len(gv) {
			out = append(out, FieldDiff{Path: path, Want: fmt.Sprintf("%d items", len(wv)), Got: fmt.Sprintf("%d items", len(gv))})
		}
		for i := 0; i < min(len(wv), len(gv)); i++ {
			out = diffValues(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i], out)
		}
		for i := len(gv); i < len(wv); i++ {
			out = append(out, FieldDiff{Path: fmt.Sprintf("%s[%d]", path, i), Want: describe(wv[i]), Got: "absent"})
		}
		for i := len(wv); i < len(gv); i++ {
			out = append(out, FieldDiff{Path: fmt.Sprintf("%s[%d]", path, i), Want: "absent", Got: describe(gv[i])})
		}
		return out
	}
	wf, wok := number(w)
	gf, gok := number(g)
	return append(out, FieldDiff{Path: path, Want: describe(w), Got: describe(g), TypeOnly: wok && gok && wf == gf && w.Type != g.Type})
}

// describe is a value with its BSON type: `int32 100`, `string "bob"`.
func describe(v bson.RawValue) string {
	return v.Type.String() + " " + abbrev(extJSON(v), 120)
}

// extJSON renders a value as canonical Extended JSON (types visible).
// IDText is an _id as DocDiff.ID names it: canonical Extended JSON.
func IDText(v bson.RawValue) string { return extJSON(v) }

func extJSON(v bson.RawValue) string {
	b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, true, false)
	if err != nil || len(b) < 7 {
		return v.String()
	}
	return string(b[5 : len(b)-1])
}

// number returns a numeric value as a float64.
func number(v bson.RawValue) (float64, bool) {
	switch v.Type {
	case bson.TypeInt32:
		return float64(v.Int32()), true
	case bson.TypeInt64:
		return float64(v.Int64()), true
	case bson.TypeDouble:
		return v.Double(), true
	}
	return 0, false
}

// typeRank is MongoDB's order of BSON types in comparisons and sorts.
func typeRank(t bson.Type) int {
	switch t {
	case bson.TypeMinKey:
		return 0
	case bson.TypeNull, bson.TypeUndefined:
		return 1
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		return 2
	case bson.TypeString, bson.TypeSymbol:
		return 3
	case bson.TypeEmbeddedDocument:
		return 4
	case bson.TypeArray:
		return 5
	case bson.TypeBinary:
		return 6
	case bson.TypeObjectID:
		return 7
	case bson.TypeBoolean:
		return 8
	case bson.TypeDateTime:
		return 9
	case bson.TypeTimestamp:
		return 10
	case bson.TypeRegex:
		return 11
	case bson.TypeMaxKey:
		return 13
	}
	return 12
}

// CompareValues orders two BSON values the way MongoDB sorts them (the
// order of find(...).sort({_id: 1})): by type rank, numbers of any type by
// value (NaN first), strings by bytes, documents field by field, arrays
// item by item.
func CompareValues(a, b bson.RawValue) int {
	if ra, rb := typeRank(a.Type), typeRank(b.Type); ra != rb {
		return cmp.Compare(ra, rb)
	}
	switch a.Type {
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
		x, _ := number(a)
		y, _ := number(b)
		if a.Type == bson.TypeInt64 && b.Type == bson.TypeInt64 {
			return cmp.Compare(a.Int64(), b.Int64())
		}
		return cmp.Compare(x, y)
	case bson.TypeString, bson.TypeSymbol:
		return strings.Compare(a.StringValue(), b.StringValue())
	case bson.TypeArray:
		av, _ := a.Array().Values()
		bv, _ := b.Array().Values()
		for i := 0; i < min(len(av), len(bv)); i++ {
			if c := CompareValues(av[i], bv[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(av), len(bv))
	case bson.TypeEmbeddedDocument:
		ae, _ := a.Document().Elements()
		be, _ := b.Document().Elements()
		for i := 0; i < min(len(ae), len(be)); i++ {
			if c := cmp.Compare(typeRank(ae[i].Value().Type), typeRank(be[i].Value().Type)); c != 0 {
				return c
			}
			if c := strings.Compare(ae[i].Key(), be[i].Key()); c != 0 {
				return c
			}
			if c := CompareValues(ae[i].Value(), be[i].Value()); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(ae), len(be))
	case bson.TypeBinary:
		as, ad := a.Binary()
		bs, bd := b.Binary()
		if c := cmp.Compare(len(ad), len(bd)); c != 0 {
			return c
		}
		if c := cmp.Compare(as, bs); c != 0 {
			return c
		}
		return bytes.Compare(ad, bd)
	case bson.TypeBoolean:
		return cmp.Compare(boolInt(a.Boolean()), boolInt(b.Boolean()))
	case bson.TypeDateTime:
		return cmp.Compare(a.DateTime(), b.DateTime())
	}
	return bytes.Compare(a.Value, b.Value)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
