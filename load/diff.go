package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// FieldDiff is one differing value of two documents. Path is dotted, array
// items by index ("recentComments.2.author"); the document itself is "".
// Expected and Found are relaxed Extended JSON, absent when the field is
// absent.
type FieldDiff struct {
	Path         string          `json:"path"`
	Expected     json.RawMessage `json:"expected,omitempty"`
	ExpectedType string          `json:"expectedType,omitempty"`
	Found        json.RawMessage `json:"found,omitempty"`
	FoundType    string          `json:"foundType,omitempty"`
	Note         string          `json:"note,omitempty"`
}

// DiffDocuments lists the field differences between the documents want
// and got (BSON), at most max of them; more counts those left out. Values
// differ when their BSON types or bytes do; field order counts.
func DiffDocuments(want, got []byte, max int) (diffs []FieldDiff, more int) {
	d := differ{max: max}
	d.doc("", want, got)
	return d.out, d.more
}

// differ collects field differences up to max.
type differ struct {
	max  int
	out  []FieldDiff
	more int
}

func (d *differ) add(f FieldDiff) {
	if len(d.out) >= d.max {
		d.more++
		return
	}
	d.out = append(d.out, f)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *differ) value(path string, want, got bson.RawValue) {
	if want.Type == got.Type && bytes.Equal(want.Value, got.Value) {
		return
	}
	if want.Type == got.Type {
		switch want.Type {
		case bson.TypeEmbeddedDocument:
			d.doc(path, want.Document(), got.Document())
			return
		case bson.TypeArray:
			d.array(path, want.Array(), got.Array())
			return
		}
	}
	d.add(FieldDiff{Path: path, Expected: valueJSON(want), ExpectedType: typeName(want.Type), Found: valueJSON(got), FoundType: typeName(got.Type)})
}

func (d *differ) doc(path string, want, got bson.Raw) {
	we, err1 := want.Elements()
	ge, err2 := got.Elements()
	if err1 != nil || err2 != nil {
		d.add(FieldDiff{Path: path, Note: "document is not valid BSON"})
		return
	}
	gotBy := make(map[string]bson.RawValue, len(ge))
	var gotKeys []string
	for _, e := range ge {
		k := e.Key()
		gotBy[k] = e.Value()
		gotKeys = append(gotKeys, k)
	}
	wantBy := make(map[string]bool, len(we))
	var wantKeys []string
	for _, e := range we {
		k := e.Key()
		wantBy[k] = true
		wantKeys = append(wantKeys, k)
		g, ok := gotBy[k]
		if !ok {
			w := e.Value()
			d.add(FieldDiff{Path: join(path, k), Expected: valueJSON(w), ExpectedType: typeName(w.Type), Note: "missing field"})
			continue
		}
		d.value(join(path, k), e.Value(), g)
	}
	for _, e := range ge {
		if !wantBy[e.Key()] {
			g := e.Value()
			d.add(FieldDiff{Path: join(path, e.Key()), Found: valueJSON(g), FoundType: typeName(g.Type), Note: "unexpected field"})
		}
	}
	common := func(keys []string, in func(string) bool) []string {
		var out []string
		for _, k := range keys {
			if in(k) {
				out = append(out, k)
			}
		}
		return out
	}
	wc := common(wantKeys, func(k string) bool { _, ok := gotBy[k]; return ok })
	gc := common(gotKeys, func(k string) bool { return wantBy[k] })
	if !slices.Equal(wc, gc) {
		d.add(FieldDiff{Path: path, Note: fmt.Sprintf("field order differs: expected %s, found %s", strings.Join(wc, ","), strings.Join(gc, ","))})
	}
}

func (d *differ) array(path string, want, got bson.RawArray) {
	wv, err1 := want.Values()
	gv, err2 := got.Values()
	if err1 != nil || err2 != nil {
		d.add(FieldDiff{Path: path, Note: "array is not valid BSON"})
		return
	}
	if len(wv) != len(gv) {
		d.add(FieldDiff{Path: path, Note: fmt.Sprintf("array has %d items, expected %d", len(gv), len(wv))})
	} else if sameItems(wv, gv) {
		d.add(FieldDiff{Path: path, Note: "same items in a different order"})
	}
	for i := 0; i < len(wv) || i < len(gv); i++ {
		p := join(path, strconv.Itoa(i))
		switch {
		case i >= len(gv):
			d.add(FieldDiff{Path: p, Expected: valueJSON(wv[i]), ExpectedType: typeName(wv[i].Type), Note: "missing item"})
		case i >= len(wv):
			d.add(FieldDiff{Path: p, Found: valueJSON(gv[i]), FoundType: typeName(gv[i].Type), Note: "unexpected item"})
		default:
			d.value(p, wv[i], gv[i])
		}
	}
}

// sameItems reports whether two arrays hold the same values as multisets.
func sameItems(a, b []bson.RawValue) bool {
	enc := func(vs []bson.RawValue) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = string(byte(v.Type)) + string(v.Value)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(enc(a), enc(b))
}
