package extract

import "github.com/denorm/denorm/mappings"

// relation holds a batch's rows of one relation, grouped by join key. Keys
// of integer columns on both sides are kept as numbers; any other key as
// its PostgreSQL text form (see joinKey), which is what both sides of the
// join agree on whatever their types.
type relation struct {
	ints map[int64][][]any
	strs map[string][][]any
}

func newRelation(n *mappings.Node) *relation {
	if intJoin(n) {
		return &relation{ints: map[int64][][]any{}}
	}
	return &relation{strs: map[string][][]any{}}
}

// intJoin reports whether n joins its parent on one integer column on both
// sides.
func intJoin(n *mappings.Node) bool {
	if len(n.JoinCols) != 1 || n.Parent == nil {
		return false
	}
	child, _ := keyColumn(n, n.JoinCols[0])
	parent, _ := keyColumn(n.Parent, n.ParentCols[0])
	return intKeyType(child.TypeName) && intKeyType(parent.TypeName)
}

// add files row (of the relation's node n) under its join key.
func (r *relation) add(n *mappings.Node, row []any) {
	if r.ints != nil {
		if k, ok := intOf(row[n.JoinCols[0]]); ok {
			r.ints[k] = append(r.ints[k], row)
		}
		return
	}
	if k, ok := joinKey(row, n.JoinCols); ok {
		r.strs[k] = append(r.strs[k], row)
	}
}

// get returns the rows joined to parent.
func (r *relation) get(n *mappings.Node, parent []any) [][]any {
	if r.ints != nil {
		k, ok := intOf(parent[n.ParentCols[0]])
		if !ok {
			return nil
		}
		return r.ints[k]
	}
	k, ok := joinKey(parent, n.ParentCols)
	if !ok {
		return nil
	}
	return r.strs[k]
}

func intOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}
