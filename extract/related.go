package extract

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
	"strconv"
	"sync/atomic"

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

func compareIntTuples(a, b intTuple) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

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
//
// The runs are kept in arrival order. While they arrive in strictly
// increasing key order (an order cmp knows: integer keys, which every
// query reading a relation sorts as Go compares them), that list is the
// index: a parent finds its rows at a cursor that moves along with the
// parents (which come in the same order), or by binary search. A key
// arriving out of order, or keys with no known order, build a map from
// key to run instead. A batch's rows are then filed with no map operation
// at all in the common case, where a map cost two per row.
//
// The cursor is only a hint, checked against the keys before it is
// trusted, and moved atomically: gets are safe for concurrent use, as
// transform.Related asks.
type runs[K comparable] struct {
	list []run[K]
	// index maps each key to its run in list; nil while list is in
	// increasing key order and searched instead.
	index map[K]int32
	// cmp orders keys as they arrive when every run follows the one
	// before (nil: no order known, index from the start).
	cmp func(a, b K) int
	// open is false once another key's rows followed the last run's.
	open bool
	// cursor is where the next get looks first.
	cursor atomic.Int32
	// extra holds the rows of keys seen in more than one run.
	extra map[K][][]any
	// keys is the expected number of keys (the index's size hint).
	keys int
}

// run is the rows of key: rows[start:end].
type run[K comparable] struct {
	key        K
	start, end int32
}

func newRuns[K comparable](keys int, cmp func(a, b K) int) *runs[K] {
	x := &runs[K]{cmp: cmp, keys: keys, list: make([]run[K], 0, keys)}
	if cmp == nil {
		x.index = make(map[K]int32, keys)
	}
	return x
}

// newRelation is an empty relation of n, with room for about rows rows
// under keys keys (the size of the last batch's, say: 0 when unknown).
func newRelation(n *mappings.Node, rows, keys int) *relation {
	r := &relation{rows: make([][]any, 0, rows)}
	switch shapeOf(n) {
	case shapeInt:
		r.ints = newRuns(keys, cmp.Compare[int64])
	case shapeInts:
		r.multi = newRuns(keys, compareIntTuples)
	case shapeUUID:
		r.uuids = newRuns[transform.UUID](keys, nil)
	default:
		r.strs = newRuns[string](keys, nil)
	}
	return r
}

// size is the number of rows and of keys in r.
func (r *relation) size() (rows, keys int) {
	switch {
	case r.ints != nil:
		keys = r.ints.size()
	case r.multi != nil:
		keys = r.multi.size()
	case r.uuids != nil:
		keys = r.uuids.size()
	default:
		keys = r.strs.size()
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
	last := len(x.list) - 1
	if x.open && x.list[last].key == k {
		// The last run goes on.
		rows = append(rows, row)
		x.list[last].end = int32(len(rows))
		return rows
	}
	if x.index == nil && last >= 0 && x.cmp(x.list[last].key, k) >= 0 {
		// Out of order: from now on the map finds keys.
		x.index = make(map[K]int32, max(x.keys, len(x.list)))
		for i, r := range x.list {
			x.index[r.key] = int32(i)
		}
	}
	if x.index != nil {
		if i, seen := x.index[k]; seen {
			// A second run of k: its rows go to a slice of their own.
			if x.extra == nil {
				x.extra = map[K][][]any{}
			}
			moved, ok := x.extra[k]
			if !ok {
				r := x.list[i]
				moved = append(moved, rows[r.start:r.end]...)
			}
			x.extra[k] = append(moved, row)
			x.open = false
			return rows
		}
		x.index[k] = int32(len(x.list))
	}
	rows = append(rows, row)
	x.list = append(x.list, run[K]{key: k, start: int32(len(rows) - 1), end: int32(len(rows))})
	x.open = true
	return rows
}

// get returns the rows of key k.
func (x *runs[K]) get(rows [][]any, k K) [][]any {
	if x.extra != nil {
		if moved, ok := x.extra[k]; ok {
			return moved
		}
	}
	i, ok := x.find(k)
	if !ok {
		return nil
	}
	r := x.list[i]
	return rows[r.start:r.end:r.end]
}

// find returns the index in list of key k's run.
func (x *runs[K]) find(k K) (int, bool) {
	if x.index != nil {
		i, ok := x.index[k]
		return int(i), ok
	}
	c := int(x.cursor.Load())
	if c < len(x.list) {
		switch d := x.cmp(x.list[c].key, k); {
		case d == 0:
			x.cursor.Store(int32(c + 1))
			return c, true
		case d > 0 && (c == 0 || x.cmp(x.list[c-1].key, k) < 0):
			return 0, false // between two runs: a parent without rows
		}
	}
	i, ok := slices.BinarySearchFunc(x.list, k, func(r run[K], k K) int { return x.cmp(r.key, k) })
	if ok {
		x.cursor.Store(int32(i + 1))
	}
	return i, ok
}

// size is the number of keys.
func (x *runs[K]) size() int { return len(x.list) }

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
		r := x.list[x.index[k]]
		out = append(out, moved[r.end-r.start:]...)
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
