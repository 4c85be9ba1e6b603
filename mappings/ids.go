package mappings

import (
	"fmt"
	"strings"
)

// IDOverlap is a pair of document entries of one collection whose _ids
// may be equal: their id values are of one kind (numbers with numbers,
// strings with strings, documents with the same fields of the same
// kinds...) and no
// idPrefix keeps them apart. A directory target would then hold two
// documents with one _id; a server refuses the second.
type IDOverlap struct {
	A, B *CollectionPlan
	// Kind says what the ids of both are: "number", "string", "uuid", a
	// composite "document {a: number, b: string}"...
	Kind string
}

// IDOverlaps lists the entries of each shared collection whose _ids may
// meet (see IDOverlap), in entry order.
func (p *Plan) IDOverlaps() []IDOverlap {
	var out []IDOverlap
	for i, a := range p.Collections {
		if a.Bucket != nil {
			continue
		}
		for _, b := range p.Collections[i+1:] {
			if b.Bucket != nil || b.Name != a.Name {
				continue
			}
			if ka, kb := IDKind(a), IDKind(b); ka == kb {
				out = append(out, IDOverlap{A: a, B: b, Kind: ka})
			}
		}
	}
	return out
}

// IDKind is the kind of value the _ids of document entry cp are, as
// MongoDB compares _ids: numbers of any type by value, strings by their
// bytes, binaries by subtype and bytes, documents field by field.
func IDKind(cp *CollectionPlan) string {
	if cp.IDPrefix != "" {
		return fmt.Sprintf("string starting %q", cp.IDPrefix)
	}
	if len(cp.IDCols) > 1 {
		// field by field: documents of other field kinds never meet
		parts := make([]string, len(cp.IDCols))
		for i, col := range cp.IDCols {
			parts[i] = cp.IDNames[i] + ": " + ValueKind(cp, col)
		}
		return "document {" + strings.Join(parts, ", ") + "}"
	}
	return ValueKind(cp, cp.IDCols[0])
}

// ValueKind is the kind of the values of root column col of cp, as
// MongoDB compares them: "number", "string", "uuid", "binary", "boolean",
// "date", or "json" and the column's type.
func ValueKind(cp *CollectionPlan, col int) string {
	c := cp.Root.Columns[col]
	switch {
	case isInt(c.TypeName) || isFloat(c.TypeName):
		return "number"
	case c.TypeName == "numeric" && cp.Root.Numeric[col] == NumericString:
		return "string"
	case c.TypeName == "numeric":
		return "number"
	case c.TypeName == "uuid":
		return "uuid"
	case c.TypeName == "bytea":
		return "binary"
	case c.TypeName == "bool":
		return "boolean"
	case isDateTime(c.TypeName):
		return "date"
	case c.TypeName == "json" || c.TypeName == "jsonb" || c.Category == "A":
		return "json " + c.Type
	}
	return "string"
}
