package extract

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

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
		// As JSON text, whatever the expression's type (see
		// mappings.Column.SQL): the value converts as a json column.
		return "pg_catalog.to_json((" + col.SQL + "))::pg_catalog.text", true
	case col.Domain != "" && col.Category == "A" && nativeTypes[col.ElemTypeName]:
		return "(" + ref + ")::" + col.Type, true
	}
	return "", false
}

// checkArrayDims refuses an array value (binary format: the number of
// dimensions first) with more than one dimension, which pgx would
// flatten.
func checkArrayDims(col *mappings.Column, src []byte) error {
	if len(src) < 4 {
		return nil // the codec judges it
	}
	if n := int32(binary.BigEndian.Uint32(src)); n > 1 {
		return fmt.Errorf("column %s holds a %d-dimensional array; only one-dimensional arrays are supported: select a slice, filter the rows or cast the column (a field with sql: can)", pgx.Identifier{col.Name}.Sanitize(), n)
	}
	if lb, ok := arrayLowerBound(src); ok && lb != 1 {
		name := sqlName(col.Name)
		return fmt.Errorf("array subscripts %s do not start at 1: a document's array has no lower bound (%d); renumber it from 1 with a field computed by PostgreSQL, sql: '%s[:]' (read the bound with sql: 'array_lower(%s, 1)' if it matters)", arrayBoundsText(src), lb, name, name)
	}
	return nil
}

// arrayLowerBound is the lower bound of a one-dimensional array in the
// binary format (ndim, has-null flag, element type, then the dimension's
// length and lower bound); ok is false for other values.
func arrayLowerBound(src []byte) (lb int32, ok bool) {
	if len(src) < 20 || int32(binary.BigEndian.Uint32(src)) != 1 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(src[16:])), true
}

// arrayBoundsText is a one-dimensional array's bounds as PostgreSQL
// writes them: [5:7].
func arrayBoundsText(src []byte) string {
	n := int64(int32(binary.BigEndian.Uint32(src[12:])))
	lb := int64(int32(binary.BigEndian.Uint32(src[16:])))
	return fmt.Sprintf("[%d:%d]", lb, lb+n-1)
}

// invalidValue is the stand-in of a value of col that could not be read:
// decoded is what the driver decoded (nil if it could not), err why.
func invalidValue(col *mappings.Column, decoded any, err error) transform.Invalid {
	iv := transform.Invalid{Err: fmt.Errorf("column %q: %w", col.Name, err)}
	switch x := decoded.(type) {
	case pgtype.InfinityModifier:
		iv.Text = "infinity"
		if x < 0 {
			iv.Text = "-infinity"
		}
	case pgtype.Timestamp:
		iv.Text = infinityText(x.InfinityModifier)
	case pgtype.Timestamptz:
		iv.Text = infinityText(x.InfinityModifier)
	case pgtype.Date:
		iv.Text = infinityText(x.InfinityModifier)
	case pgtype.Numeric:
		// a numeric a double cannot hold (numeric: double): its exact
		// text, so that a key column holding it is still a position
		if x.Valid {
			iv.Text = numericText(col, &x)
		}
	case string:
		iv.Text = x
	}
	return iv
}

func infinityText(m pgtype.InfinityModifier) string {
	switch {
	case m > 0:
		return "infinity"
	case m < 0:
		return "-infinity"
	}
	return ""
}

// checkSQLFunctions refuses the fields computed by PostgreSQL (sql:) that
// call a function PostgreSQL marks volatile: it may have side effects,
// and gives another value on every read (see mappings/sqlexpr.go).
func checkSQLFunctions(ctx context.Context, s *Snapshot, plan *mappings.Plan) mappings.Problems {
	var ps mappings.Problems
	for _, cp := range plan.Collections {
		mappings.Walk(cp.Root, func(n *mappings.Node) bool {
			for _, f := range n.Fields {
				if f.Kind != mappings.FieldColumn || f.Value.Lookup != nil || n.Columns[f.Value.Col].SQL == "" {
					continue
				}
				names := mappings.SQLFunctions(n.Columns[f.Value.Col].SQL)
				if len(names) == 0 {
					continue
				}
				var volatile []string
				rows, err := s.Query(ctx, "SELECT DISTINCT proname::text FROM pg_catalog.pg_proc WHERE proname = ANY($1::text[]) AND provolatile = 'v' ORDER BY 1", names)
				if err == nil {
					volatile, err = pgx.CollectRows(rows, pgx.RowTo[string])
				}
				switch {
				case err != nil:
					ps = append(ps, mappings.Problem{File: plan.File.Path, Pos: f.Pos, Msg: fmt.Sprintf("%s: field %q: check the functions of sql: %v", n.Path, f.Name, err)})
				case len(volatile) > 0:
					ps = append(ps, mappings.Problem{File: plan.File.Path, Pos: f.Pos, Msg: fmt.Sprintf("%s: field %q: sql: calls %s, which PostgreSQL marks volatile (it may change data, and gives another value on every read); use stable or immutable functions", n.Path, f.Name, strings.Join(volatile, ", "))})
				}
			}
			return true
		})
	}
	return ps
}

// sqlName is a column name as a user writes it in SQL: bare when it is a
// lower-case identifier, else quoted.
func sqlName(name string) string {
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return pgx.Identifier{name}.Sanitize()
		}
	}
	if name == "" {
		return `""`
	}
	return name
}
