package extract

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// relation holds a batch's rows of one relation, grouped by join key.
// The key values are the ones the plan names (JoinCols in the row,
// ParentCols in the parent), which are equal byte for byte exactly when
// PostgreSQL's = says so: the columns themselves, or key columns
// PostgreSQL computed (see mappings/joinkey.go). Keys of integer columns
// on both sides are kept as numbers, a single uuid as its bytes; any other
// key as the text groupKey makes of it.
//
// Rows arrive grouped by key (every query reading a relation orders by its
// join key, and cached lookup rows are added key by key), so they are kept
// in one slice in arrival order and each key maps to its run of rows, with
// no slice per key. A key whose rows come in more than one run is moved to
// a slice of its own.
type relation struct {
	rows  [][]any
	ints  *runs[int64]
	multi *runs[intTuple]
	uuids *runs[transform.UUID]
	strs  *runs[string]
}

// maxIntTuple is the most integer columns a key kept as numbers has.
const maxIntTuple = 3

type intTuple [maxIntTuple]int64

// keyShape tells how relation n's keys are kept.
type keyShape int

const (
	shapeText keyShape = iota
	shapeInt
	shapeInts
	shapeUUID
)

func shapeOf(n *mappings.Node) keyShape {
	if n.Parent == nil || len(n.JoinCols) == 0 {
		return shapeText
	}
	ints := true
	for i := range n.JoinCols {
		child, _ := keyColumn(n, n.JoinCols[i])
		parent, _ := keyColumn(n.Parent, n.ParentCols[i])
		if !mappings.IntKey(child, parent) {
			ints = false
		}
		if len(n.JoinCols) == 1 && child.TypeName == "uuid" && parent.TypeName == "uuid" {
			return shapeUUID
		}
	}
	switch {
	case ints && len(n.JoinCols) == 1:
		return shapeInt
	case ints && len(n.JoinCols) <= maxIntTuple:
		return shapeInts
	}
	return shapeText
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

func newRuns[K comparable](keys int) *runs[K] { return &runs[K]{spans: make(map[K]span, keys)} }

// newRelation is an empty relation of n, with room for about rows rows
// under keys keys (the size of the last batch's, say: 0 when unknown).
func newRelation(n *mappings.Node, rows, keys int) *relation {
	r := &relation{rows: make([][]any, 0, rows)}
	switch shapeOf(n) {
	case shapeInt:
		r.ints = newRuns[int64](keys)
	case shapeInts:
		r.multi = newRuns[intTuple](keys)
	case shapeUUID:
		r.uuids = newRuns[transform.UUID](keys)
	default:
		r.strs = newRuns[string](keys)
	}
	return r
}

// size is the number of rows and of keys in r.
func (r *relation) size() (rows, keys int) {
	switch {
	case r.ints != nil:
		keys = len(r.ints.spans)
	case r.multi != nil:
		keys = len(r.multi.spans)
	case r.uuids != nil:
		keys = len(r.uuids.spans)
	default:
		keys = len(r.strs.spans)
	}
	return len(r.rows), keys
}

// add files row (of the relation's node n) under its join key.
func (r *relation) add(n *mappings.Node, row []any) {
	switch {
	case r.ints != nil:
		if k, ok := intOf(row[n.JoinCols[0]]); ok {
			r.rows = r.ints.add(r.rows, k, row)
		}
	case r.multi != nil:
		if k, ok := intTupleOf(row, n.JoinCols); ok {
			r.rows = r.multi.add(r.rows, k, row)
		}
	case r.uuids != nil:
		if k, ok := row[n.JoinCols[0]].(transform.UUID); ok {
			r.rows = r.uuids.add(r.rows, k, row)
		}
	default:
		if k, ok := joinKey(row, n.JoinCols); ok {
			r.rows = r.strs.add(r.rows, k, row)
		}
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
	switch {
	case r.ints != nil:
		return r.ints.all(r.rows)
	case r.multi != nil:
		return r.multi.all(r.rows)
	case r.uuids != nil:
		return r.uuids.all(r.rows)
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
	switch {
	case r.ints != nil:
		if k, ok := intOf(parent[n.ParentCols[0]]); ok {
			return r.ints.get(r.rows, k)
		}
	case r.multi != nil:
		if k, ok := intTupleOf(parent, n.ParentCols); ok {
			return r.multi.get(r.rows, k)
		}
	case r.uuids != nil:
		if k, ok := parent[n.ParentCols[0]].(transform.UUID); ok {
			return r.uuids.get(r.rows, k)
		}
	default:
		if k, ok := joinKey(parent, n.ParentCols); ok {
			return r.strs.get(r.rows, k)
		}
	}
	return nil
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

func intTupleOf(row []any, cols []int) (intTuple, bool) {
	var k intTuple
	for i, c := range cols {
		x, ok := intOf(row[c])
		if !ok {
			return k, false
		}
		k[i] = x
	}
	return k, true
}

// joinKey is the grouping key of a row's values at cols: a string equal
// for two rows exactly when their values are (see relation); ok is false
// when one is NULL (NULL joins nothing) or cannot be a key. One value is
// its own text (a string as it is, a number in decimal, a uuid or bytea
// as its bytes); several are each prefixed by their length, so that no
// two different tuples give one key.
func joinKey(row []any, cols []int) (string, bool) {
	if len(cols) == 1 {
		return keyText(row[cols[0]])
	}
	var b []byte
	for _, c := range cols {
		s, ok := keyText(row[c])
		if !ok {
			return "", false
		}
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return string(b), true
}

// keyText is one key value's text in joinKey.
func keyText(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case transform.UUID:
		return string(x[:]), true
	case transform.Binary:
		return string(x), true
	}
	s, err := textParam(v)
	return s, err == nil
}

// keyEqual reports whether row a's key values at colsA equal row b's at
// colsB, as joinKey would find (without building the keys).
func keyEqual(a []any, colsA []int, b []any, colsB []int) bool {
	for i := range colsA {
		x, y := a[colsA[i]], b[colsB[i]]
		if x == nil || y == nil {
			return false
		}
		switch xv := x.(type) {
		case string:
			if yv, ok := y.(string); ok {
				if xv != yv {
					return false
				}
				continue
			}
		case transform.UUID:
			if yv, ok := y.(transform.UUID); ok {
				if xv != yv {
					return false
				}
				continue
			}
		case transform.Binary:
			if yv, ok := y.(transform.Binary); ok {
				if !bytes.Equal(xv, yv) {
					return false
				}
				continue
			}
		}
		if xi, ok := intOf(x); ok {
			if yi, ok := intOf(y); ok {
				if xi != yi {
					return false
				}
				continue
			}
		}
		xs, ok1 := keyText(x)
		ys, ok2 := keyText(y)
		if !ok1 || !ok2 || xs != ys {
			return false
		}
	}
	return true
}
