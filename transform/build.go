// Package transform turns source rows into documents following a compiled
// mappings.Plan: the document model (value.go), Build for one document per
// root row, the Pager for a bucket collection's pages, and Reject, the one
// record of a row that did not reach the target. It is pure: no I/O, no
// database drivers; the same code serves migrate, plan and verify, so what
// one shows the others write and check. transform/report, beside it and
// as pure, turns built documents into plan's figures.
package transform

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/denorm/denorm/mappings"
)

// Related gives the rows of relation n that join a row of n's parent node,
// in the relation's order. Implementations are read-only and safe for
// concurrent use; the returned slice must not be modified.
type Related interface {
	Related(n *mappings.Node, parent []any) [][]any
}

// Build makes the documents of one batch of root rows. Rows that cannot be
// made into a document are returned as rejects, one per row; the others
// still produce documents.
func Build(cp *mappings.CollectionPlan, roots [][]any, rel Related) ([]Document, []Reject) {
	return BuildIn(&Slab{}, cp, roots, rel)
}

// BuildIn is Build taking the documents' fields, arrays and embedded
// documents from s: after s.Reset they are overwritten, so the caller must
// be done with them (see Slab).
func BuildIn(s *Slab, cp *mappings.CollectionPlan, roots [][]any, rel Related) ([]Document, []Reject) {
	docs := make([]Document, 0, len(roots))
	var errs []Reject
	for _, row := range roots {
		d, err := buildOne(cp, row, rel, s)
		if err != nil {
			errs = append(errs, Reject{Collection: cp.Name, Source: SourceKey(cp, row), Err: err})
			continue
		}
		docs = append(docs, d)
	}
	return docs, errs
}

// BuildOne makes the document of one root row.
func BuildOne(cp *mappings.CollectionPlan, row []any, rel Related) (Document, error) {
	return buildOne(cp, row, rel, nil)
}

func buildOne(cp *mappings.CollectionPlan, row []any, rel Related, s *Slab) (Document, error) {
	id := ID(cp, row)
	if err := invalidIn(id); err != nil {
		return Document{}, fmt.Errorf("_id: %w", err)
	}
	body := s.doc(len(cp.Root.Fields) + 1)
	body = append(body, Field{Key: "_id", Value: id})
	body, err := appendFieldsIn(body, cp.Root, row, rel, s)
	if err != nil {
		return Document{}, err
	}
	d := Document{Collection: cp.Name, ID: id, Body: body, Source: SourceKey(cp, row)}
	if cp.Discriminator != "" {
		d.Discriminator = &Field{Key: cp.Discriminator, Value: cp.DiscriminatorValue}
	}
	return d, nil
}

// ID is the _id value of a root row: the key column's value, or a document
// of the key columns for a composite key; with an idPrefix, the string the
// prefix begins (see prefixedID). (Bucket pages have their own
// ids, see Pager.)
func ID(cp *mappings.CollectionPlan, row []any) any {
	if cp.IDPrefix != "" {
		return prefixedID(cp, row)
	}
	if len(cp.IDCols) == 1 {
		c := cp.IDCols[0]
		return DocValue(&cp.Root.Columns[c], row[c])
	}
	d := make(Doc, len(cp.IDCols))
	for i, c := range cp.IDCols {
		d[i] = Field{Key: cp.IDNames[i], Value: DocValue(&cp.Root.Columns[c], row[c])}
	}
	return d
}

// SourceKey names a root row for messages: `person (id)=(42)`; a NULL is
// NULL, a bytea \x and its hex digits, a timestamp its RFC 3339 text, and a column a bucket's stream order names twice (a by column
// also in orderBy) is named once. It runs for every document, so it
// builds the text in one allocation.
func SourceKey(cp *mappings.CollectionPlan, row []any) string {
	var buf [96]byte
	b := append(buf[:0], cp.Root.Table.Name...)
	b = append(b, " ("...)
	for i, c := range cp.IDCols {
		if repeated(cp.IDCols, i) {
			continue
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, cp.Root.Columns[c].Name...)
	}
	b = append(b, ")=("...)
	for i, c := range cp.IDCols {
		if repeated(cp.IDCols, i) {
			continue
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		switch v := row[c].(type) {
		case nil:
			b = append(b, "NULL"...)
		case int32:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case string:
			b = append(b, v...)
		case UUID:
			b = appendUUID(b, v)
		case Binary:
			b = append(b, `\x`...) // bytea as PostgreSQL writes it
			b = hex.AppendEncode(b, v)
		case time.Time:
			b = v.UTC().AppendFormat(b, time.RFC3339Nano)
		default:
			b = fmt.Append(b, v)
		}
	}
	b = append(b, ')')
	return string(b)
}

// repeated reports whether cols[i] is also an earlier entry of cols.
func repeated(cols []int, i int) bool {
	for _, c := range cols[:i] {
		if c == cols[i] {
			return true
		}
	}
	return false
}

// appendFields appends n's fields for row to d.
func appendFields(d Doc, n *mappings.Node, row []any, rel Related) (Doc, error) {
	return appendFieldsIn(d, n, row, rel, nil)
}

// appendFieldsIn is appendFields taking embedded documents and arrays
// from s.
func appendFieldsIn(d Doc, n *mappings.Node, row []any, rel Related, s *Slab) (Doc, error) {
	var env map[string]any
	for i := range n.Fields {
		f := &n.Fields[i]
		var v any
		switch f.Kind {
		case mappings.FieldColumn:
			if f.Value.Lookup == nil { // refValue and refColumn, inline
				v = row[f.Value.Col]
				if n.Columns[f.Value.Col].TimestampText {
					v = DocValue(&n.Columns[f.Value.Col], v)
				}
				break
			}
			v = refValue(f.Value, row, rel)
			if c := refColumn(n, f.Value); c.TimestampText {
				v = DocValue(c, v)
			}
		case mappings.FieldConst:
			v = f.Const
		case mappings.FieldExpr:
			if env == nil {
				env = exprEnv(n, row, rel)
			}
			r, err := evalExpr(f, env)
			if err != nil {
				return nil, fmt.Errorf("%s: field %q: %w", n.Path, f.Name, err)
			}
			v = r
		case mappings.FieldAggregate:
			v = aggregateValue(f.Embed, row, rel)
		case mappings.FieldIds:
			c := f.Embed
			rows := rel.Related(c, row)
			if len(c.Values) > 0 {
				v = idDocs(c, rows)
				break
			}
			arr := s.array(len(rows))
			vc := &c.Columns[c.Value]
			for _, r := range rows {
				if r[c.Value] != nil {
					arr = append(arr, DocValue(vc, r[c.Value]))
				}
			}
			v = s.boxArray(arr)
		case mappings.FieldEmbed:
			c := f.Embed
			rows := rel.Related(c, row)
			if c.Object {
				if len(rows) == 0 {
					continue // no related row: left out, like NULL
				}
				sub, err := appendFieldsIn(s.doc(len(c.Fields)), c, rows[0], rel, s)
				if err != nil {
					return nil, err
				}
				v = s.boxDoc(sub)
				break
			}
			arr := s.array(len(rows))
			for _, r := range rows {
				sub, err := appendFieldsIn(s.doc(len(c.Fields)), c, r, rel, s)
				if err != nil {
					return nil, err
				}
				arr = append(arr, s.boxDoc(sub))
			}
			v = s.boxArray(arr)
			if f.Pivot == nil {
				// Each document was checked as it was built: no second
				// walk over every value of the array.
				d = append(d, Field{Key: f.Name, Value: v})
				continue
			}
		}
		if v == nil {
			continue // NULL scalars are left out
		}
		switch v.(type) {
		case Invalid, Array, Doc: // the kinds invalidIn looks into
			if err := invalidIn(v); err != nil {
				return nil, fmt.Errorf("%s: field %q: %w", n.Path, f.Name, err)
			}
		}
		name := f.Name
		if f.Pivot != nil {
			k := refValue(*f.Pivot, row, rel)
			s, err := keyString(k)
			if err != nil {
				return nil, fmt.Errorf("%s: field name from %s: %w", n.Path, refName(n, *f.Pivot), err)
			}
			name = s
		}
		d = append(d, Field{Key: name, Value: v})
	}
	return d, nil
}

// aggregateValue is the aggregate of the rows related to row: its one
// result row's value, or, over no rows, 0 for count and sum (nil, left
// out, for min, max and avg).
func aggregateValue(n *mappings.Node, row []any, rel Related) any {
	rows := rel.Related(n, row)
	if len(rows) > 0 && rows[0][0] != nil {
		return DocValue(&n.Columns[0], rows[0][0])
	}
	if !n.Agg.Zero {
		return nil
	}
	switch n.Columns[0].TypeName {
	case "numeric":
		switch n.Numeric[0] {
		case mappings.NumericDouble:
			return float64(0)
		case mappings.NumericString:
			return "0"
		}
		return Decimal("0")
	case "float4", "float8":
		return float64(0)
	}
	return int64(0)
}

func refValue(r mappings.Ref, row []any, rel Related) any {
	if r.Lookup == nil {
		return row[r.Col]
	}
	rows := rel.Related(r.Lookup, row)
	if len(rows) == 0 {
		return nil
	}
	return rows[0][r.Col]
}

// refColumn is the column r refers to.
func refColumn(n *mappings.Node, r mappings.Ref) *mappings.Column {
	if r.Lookup == nil {
		return &n.Columns[r.Col]
	}
	return &r.Lookup.Columns[r.Col]
}

func refName(n *mappings.Node, r mappings.Ref) string {
	if r.Lookup == nil {
		return n.Table.Name + "." + n.Columns[r.Col].Name
	}
	return r.Lookup.Table.Name + "." + r.Lookup.Columns[r.Col].Name
}

// keyString turns a pivot value into a field name.
func keyString(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", fmt.Errorf("the value is NULL")
	case Invalid:
		return "", x.Err
	case string:
		if x == "" {
			return "", fmt.Errorf("the value is an empty string")
		}
		return x, nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case bool:
		return strconv.FormatBool(x), nil
	case Decimal:
		return string(x), nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	}
	return "", fmt.Errorf("a %T value cannot name a field", v)
}
