package extract

import "github.com/denorm/denorm/mappings"

// relation holds a batch's rows of one relation, grouped by join key. Keys
// of integer columns on both sides are kept as numbers; any other key as
// its PostgreSQL text form (see joinKey), which is what both sides of the
// join agree on whatever their types.
//
// Rows arrive grouped by key (every query reading a relation orders by its
// join key, and cached lookup rows are added key by key), so they are kept
// in one slice in arrival order and each key maps to its run of rows, with
// no slice per key. A key whose rows come in more than one run is moved to
// a slice of its own.
type relation struct {
	rows [][]any
	ints *runs[int64]
	strs *runs[string]
}

// runs maps keys to their rows in a relation's rows.
type runs[K comparable] struct {
	spans map[K]span
	// last is the key of the last row added; open is false once another
	// key's rows followed.
	last K
	open bool
	// extra holds the rows of keys seen in more than one run.
	extra map[K][][]any
}

// span is rows[start:end].
type span struct{ start, end int32 }

func newRelation(n *mappings.Node) *relation {
	if intJoin(n) {
		return &relation{ints: &runs[int64]{spans: map[int64]span{}}}
	}
	return &relation{strs: &runs[string]{spans: map[string]span{}}}
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
			r.rows = r.ints.add(r.rows, k, row)
		}
		return
	}
	if k, ok := joinKey(row, n.JoinCols); ok {
		r.rows = r.strs.add(r.rows, k, row)
	}
}

// add appends row, of key k, to rows and returns them.
func (x *runs[K]) add(rows [][]any, k K, row []any) [][]any {
	s, seen := x.spans[k]
	switch {
	case seen && x.open && k == x.last:
		rows = append(rows, row)
		x.spans[k] = span{s.start, int32(len(rows))}
	case seen:
		// A second run of k: its rows go to a slice of their own.
		if x.extra == nil {
			x.extra = map[K][][]any{}
		}
		moved, ok := x.extra[k]
		if !ok {
			moved = append(moved, rows[s.start:s.end]...)
		}
		x.extra[k] = append(moved, row)
		x.open = false
	default:
		rows = append(rows, row)
		x.spans[k] = span{int32(len(rows) - 1), int32(len(rows))}
		x.last, x.open = k, true
	}
	return rows
}

// get returns the rows of key k.
func (x *runs[K]) get(rows [][]any, k K) [][]any {
	if moved, ok := x.extra[k]; ok {
		return moved
	}
	s, ok := x.spans[k]
	if !ok {
		return nil
	}
	return rows[s.start:s.end:s.end]
}

// all returns every row added, each once (in no particular order when a
// key came in more than one run).
func (r *relation) all() [][]any {
	if r.ints != nil {
		return r.ints.all(r.rows)
	}
	return r.strs.all(r.rows)
}

func (x *runs[K]) all(rows [][]any) [][]any {
	if len(x.extra) == 0 {
		return rows
	}
	out := append([][]any(nil), rows...)
	for k, moved := range x.extra {
		s := x.spans[k]
		out = append(out, moved[s.end-s.start:]...)
	}
	return out
}

// get returns the rows joined to parent.
func (r *relation) get(n *mappings.Node, parent []any) [][]any {
	if r.ints != nil {
		k, ok := intOf(parent[n.ParentCols[0]])
		if !ok {
			return nil
		}
		return r.ints.get(r.rows, k)
	}
	k, ok := joinKey(parent, n.ParentCols)
	if !ok {
		return nil
	}
	return r.strs.get(r.rows, k)
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
