package extract

import "github.com/denorm/denorm/mappings"

// computedExpr is the select expression of a column PostgreSQL computes
// (a join key, see mappings/joinkey.go; a field's sql: expression) or of
// a domain array, whose values must arrive as the base type's array for
// pgx to decode them; ref is the column's qualified reference. ok is
// false for a plain column.
func computedExpr(col mappings.Column, ref string) (string, bool) {
	switch {
	case col.Canon != "":
		return mappings.CanonSQL(col.Canon, ref), true
	case col.SQL != "":
		return "(" + col.SQL + ")", true
	case col.Domain != "" && col.Category == "A" && nativeTypes[col.ElemTypeName]:
		return "(" + ref + ")::" + col.Type, true
	}
	return "", false
}
