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
type relation struct {
	ints  map[int64][][]any
	multi map[intTuple][][]any
	uuids map[transform.UUID][][]any
	strs  map[string][][]any
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

func newRelation(n *mappings.Node) *relation {
	switch shapeOf(n) {
	case shapeInt:
		return &relation{ints: map[int64][][]any{}}
	case shapeInts:
		return &relation{multi: map[intTuple][][]any{}}
	case shapeUUID:
		return &relation{uuids: map[transform.UUID][][]any{}}
	}
	return &relation{strs: map[string][][]any{}}
}

// add files row (of the relation's node n) under its join key.
func (r *relation) add(n *mappings.Node, row []any) {
	switch {
	case r.ints != nil:
		if k, ok := intOf(row[n.JoinCols[0]]); ok {
			r.ints[k] = append(r.ints[k], row)
		}
	case r.multi != nil:
		if k, ok := intTupleOf(row, n.JoinCols); ok {
			r.multi[k] = append(r.multi[k], row)
		}
	case r.uuids != nil:
		if k, ok := row[n.JoinCols[0]].(transform.UUID); ok {
			r.uuids[k] = append(r.uuids[k], row)
		}
	default:
		if k, ok := joinKey(row, n.JoinCols); ok {
			r.strs[k] = append(r.strs[k], row)
		}
	}
}

// get returns the rows joined to parent.
func (r *relation) get(n *mappings.Node, parent []any) [][]any {
	switch {
	case r.ints != nil:
		if k, ok := intOf(parent[n.ParentCols[0]]); ok {
			return r.ints[k]
		}
	case r.multi != nil:
		if k, ok := intTupleOf(parent, n.ParentCols); ok {
			return r.multi[k]
		}
	case r.uuids != nil:
		if k, ok := parent[n.ParentCols[0]].(transform.UUID); ok {
			return r.uuids[k]
		}
	default:
		if k, ok := joinKey(parent, n.ParentCols); ok {
			return r.strs[k]
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
