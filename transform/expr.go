package transform

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/denorm/denorm/mappings"
)

// exprEnv is what an expression of node n sees for row: the columns it
// reads by SQL name, lookups as objects of their columns (nil when the
// lookup found no row). Values are given as expr-lang understands them:
// NUMERIC as float64, UUID as its text, binary as []byte, JSON as maps and
// slices.
func exprEnv(n *mappings.Node, row []any, rel Related) map[string]any {
	env := make(map[string]any, len(n.ExprEnv))
	for _, v := range n.ExprEnv {
		if v.Lookup == nil {
			env[v.Name] = exprColumn(n.Columns[v.Col], row[v.Col])
			continue
		}
		rows := rel.Related(v.Lookup, row)
		if len(rows) == 0 {
			env[v.Name] = nil
			continue
		}
		m := make(map[string]any, len(v.Cols))
		for name, c := range v.Cols {
			m[name] = exprColumn(v.Lookup.Columns[c], rows[0][c])
		}
		env[v.Name] = m
	}
	return env
}

// exprColumn is the value of column c as expressions see it: NUMERIC is a
// float64 whatever the numeric mode (DecimalToDouble: a value without a
// double becomes an Invalid, and the expression is not run).
func exprColumn(c mappings.Column, v any) any {
	if s, ok := v.(string); ok && c.TypeName == "numeric" {
		return exprDouble(s)
	}
	return exprValue(v)
}

// exprDouble is the double an expression sees for the decimal text s.
func exprDouble(s string) any {
	f, err := DecimalToDouble(s)
	if err != nil {
		return Invalid{Err: fmt.Errorf("numeric value %s is %w: expressions see numbers as doubles; compute the field with sql: instead", abbrevText(s), err)}
	}
	return f
}

// abbrevText shortens a long value for messages.
func abbrevText(s string) string {
	if len(s) > 60 {
		return s[:28] + "..." + s[len(s)-28:] + fmt.Sprintf(" (%d characters)", len(s))
	}
	return s
}

func exprValue(v any) any {
	switch x := v.(type) {
	case Decimal:
		return exprDouble(string(x))
	case UUID:
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
	case Binary:
		return []byte(x)
	case Doc:
		m := make(map[string]any, len(x))
		for _, f := range x {
			m[f.Key] = exprValue(f.Value)
		}
		return m
	case Array:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = exprValue(e)
		}
		return l
	}
	return v
}

// evalExpr runs a field's expression and converts its result to a
// document value.
func evalExpr(f *mappings.FieldPlan, env map[string]any) (any, error) {
	// An expression never sees a value that could not be read (nor one
	// without a double inside a JSON value): the first it reads, in name
	// order.
	reads := f.Reads
	if reads == nil { // a plan not made by Resolve: every variable
		reads = slices.Sorted(maps.Keys(env))
	}
	for _, name := range reads {
		if path, err := invalidInExpr(env[name], name); err != nil {
			return nil, fmt.Errorf("expr %q: %s: %w", f.Source, path, err)
		}
	}
	out, err := mappings.RunExpr(f.Program, env)
	if err != nil {
		return nil, fmt.Errorf("expr %q: %w", f.Source, err)
	}
	v, err := docValue(out)
	if err != nil {
		return nil, fmt.Errorf("expr %q: %w", f.Source, err)
	}
	return v, nil
}

// invalidInExpr finds an Invalid in an expression's value v (named
// path), at any depth, and returns where and why.
func invalidInExpr(v any, path string) (string, error) {
	switch x := v.(type) {
	case Invalid:
		return path, x.Err
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if p, err := invalidInExpr(x[k], path+"."+k); err != nil {
				return p, err
			}
		}
	case []any:
		for i, e := range x {
			if p, err := invalidInExpr(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return p, err
			}
		}
	}
	return "", nil
}

// docValue converts an expression result to a document value: integers
// become int32 when they fit (else int64), maps become documents with
// sorted keys.
func docValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, float64, int32, int64:
		return x, nil
	case int:
		return intValue(int64(x)), nil
	case int8:
		return int32(x), nil
	case int16:
		return int32(x), nil
	case uint8:
		return int32(x), nil
	case uint16:
		return int32(x), nil
	case uint32:
		return intValue(int64(x)), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return nil, fmt.Errorf("result %d is out of range for a 64-bit integer", x)
		}
		return intValue(int64(x)), nil
	case uint64:
		if x > math.MaxInt64 {
			return nil, fmt.Errorf("result %d is out of range for a 64-bit integer", x)
		}
		return intValue(int64(x)), nil
	case float32:
		return float64(x), nil
	case time.Time:
		return x.UTC(), nil
	case []byte:
		return Binary(x), nil
	case []any:
		arr := make(Array, len(x))
		for i, e := range x {
			c, err := docValue(e)
			if err != nil {
				return nil, err
			}
			arr[i] = c
		}
		return arr, nil
	case []string:
		arr := make(Array, len(x))
		for i, e := range x {
			arr[i] = e
		}
		return arr, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := make(Doc, 0, len(x))
		for _, k := range keys {
			c, err := docValue(x[k])
			if err != nil {
				return nil, err
			}
			d = append(d, Field{Key: k, Value: c})
		}
		return d, nil
	}
	return nil, fmt.Errorf("result of type %T cannot be stored in a document", v)
}

func intValue(i int64) any {
	if i >= math.MinInt32 && i <= math.MaxInt32 {
		return int32(i)
	}
	return i
}
