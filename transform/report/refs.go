package report

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// refField is one field declared with `ref:`, and the values of the
// current batch waiting to be checked.
type refField struct {
	segs []string // field names from the root; "[]" after an array
	rep  RefReport
	vals []string
	srcs []string
}

// refFields lists cp's reference fields, at any depth of embedding.
func refFields(cp *mappings.CollectionPlan) []*refField {
	var out []*refField
	for _, r := range cp.References() {
		out = append(out, &refField{segs: r.Path, rep: RefReport{Path: pathText(r.Path), Collection: r.Collection, Examples: []Dang{}}})
	}
	return out
}

func pathText(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		if s != "[]" && i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// collect gathers the field's values in d.
func (r *refField) collect(d *transform.Document) {
	var visit func(v any, segs []string)
	visit = func(v any, segs []string) {
		if len(segs) == 0 {
			if s, ok := refText(v); ok {
				r.vals = append(r.vals, s)
				r.srcs = append(r.srcs, d.Source)
			}
			return
		}
		switch x := v.(type) {
		case transform.Doc:
			if w, ok := x.Get(segs[0]); ok && segs[0] != "[]" {
				visit(w, segs[1:])
			}
		case transform.Array:
			if segs[0] == "[]" {
				for _, e := range x {
					visit(e, segs[1:])
				}
			}
		}
	}
	visit(d.Body, r.segs)
}

// refText is a key value as PostgreSQL text; false for values that cannot
// be a key (null, documents, arrays).
func refText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int32, int64, bool:
		return fmt.Sprint(x), true
	case float64:
		return fmt.Sprint(x), true
	case transform.Decimal:
		return string(x), true
	case transform.UUID:
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16]), true
	}
	return "", false
}

// Checker tells which of values (text) have no row in the root table of
// collection. It is called once per reference field per batch, with the
// distinct values of the batch.
type Checker func(collection string, values []string) (missing map[string]bool, err error)

// CheckRefs checks the reference values gathered since the last call
// (set-wise: one Checker call per field) and clears them. A field whose
// collection cannot be checked records why in Skipped.
func (col *Collector) CheckRefs(check Checker) error {
	for _, r := range col.refs {
		if len(r.vals) == 0 || r.rep.Skipped != "" {
			r.vals, r.srcs = r.vals[:0], r.srcs[:0]
			continue
		}
		distinct := make([]string, 0, len(r.vals))
		seen := map[string]bool{}
		for _, v := range r.vals {
			if !seen[v] {
				seen[v] = true
				distinct = append(distinct, v)
			}
		}
		missing, err := check(r.rep.Collection, distinct)
		if err != nil {
			var skip SkipError
			if asSkip(err, &skip) {
				r.rep.Skipped = skip.Reason
				r.vals, r.srcs = r.vals[:0], r.srcs[:0]
				continue
			}
			return fmt.Errorf("check references %s -> %s: %w", r.rep.Path, r.rep.Collection, err)
		}
		r.rep.Checked += int64(len(r.vals))
		for i, v := range r.vals {
			if missing[v] {
				r.rep.Dangling++
				if len(r.rep.Examples) < MaxListed {
					r.rep.Examples = append(r.rep.Examples, Dang{Value: v, Source: r.srcs[i]})
				}
			}
		}
		r.vals, r.srcs = r.vals[:0], r.srcs[:0]
	}
	return nil
}

// SkipError tells CheckRefs that a field's references cannot be checked
// (for example, the referenced collection has a composite _id).
type SkipError struct{ Reason string }

func (e SkipError) Error() string { return e.Reason }

func asSkip(err error, out *SkipError) bool {
	s, ok := err.(SkipError)
	if ok {
		*out = s
	}
	return ok
}

// SetRefTable records the referenced root table of the fields pointing to
// collection, for the report.
func (col *Collector) SetRefTable(collection, table string) {
	for _, r := range col.refs {
		if r.rep.Collection == collection {
			r.rep.Table = table
		}
	}
}

// RefCollections lists the collections this entry's fields reference.
func (col *Collector) RefCollections() []string {
	var out []string
	for _, r := range col.refs {
		out = append(out, r.rep.Collection)
	}
	return out
}

// sample renders d for the report: arrays cut to a few items, the text to
// SampleChars.
func (col *Collector) sample(d *transform.Document, size int) *Sample {
	body, cut := trim(d.Body)
	s := &Sample{Source: d.Source, ID: col.idText(d.ID), Size: size, Truncated: cut}
	b, err := col.json(nil, body)
	if err != nil {
		s.JSON = fmt.Sprintf("(cannot encode: %v)", err)
		return s
	}
	j := string(b)
	if len(j) > SampleChars {
		j = j[:SampleChars] + "..."
		s.Truncated = true
	}
	s.JSON = j
	return s
}

// trim cuts every array to sampleArray items, adding a note of how many
// were left out.
func trim(d transform.Doc) (transform.Doc, bool) {
	out := make(transform.Doc, len(d))
	cut := false
	for i, f := range d {
		v, c := trimValue(f.Value)
		out[i] = transform.Field{Key: f.Key, Value: v}
		cut = cut || c
	}
	return out, cut
}

func trimValue(v any) (any, bool) {
	switch x := v.(type) {
	case transform.Doc:
		return trim(x)
	case transform.Array:
		cut := false
		n := min(len(x), sampleArray)
		out := make(transform.Array, 0, n+1)
		for _, e := range x[:n] {
			w, c := trimValue(e)
			cut = cut || c
			out = append(out, w)
		}
		if len(x) > n {
			out = append(out, fmt.Sprintf("... %d more items", len(x)-n))
			cut = true
		}
		return out, cut
	}
	return v, false
}
