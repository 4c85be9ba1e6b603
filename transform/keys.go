package transform

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/denorm/denorm/mappings"
)

// MaxDepth is the deepest nesting a document may have: the document
// itself is level 1, and each embedded document or array adds one
// (mappings.MaxDepth, MongoDB's limit).
const MaxDepth = mappings.MaxDepth

// KeyError is a document no target can hold as built: a field name (from
// a jsonb value, or a pivot's data) that starts with "$", holds "." or
// NUL, or is empty; two fields of one (sub)document with the same name;
// or nesting deeper than MaxDepth. A server reads "$"-names as operators
// and "." as a path, and a directory's Extended JSON reads {"$date": ...}
// back as a date: the row is rejected rather than written changed.
type KeyError struct {
	// Path is the field's path in the document ("doc.a.$where",
	// "tags.3"); Reason says what is wrong with it.
	Path, Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("field %q: %s; no target can hold it as it is: filter the row, or reshape the value with an sql: field", e.Path, e.Reason)
}

// CheckKeys returns a *KeyError for the first field name or nesting of d
// the target cannot hold, or nil. It runs on every document written: a
// first walk that allocates nothing tells whether d has a problem, and
// only then a second one spells the path of the first problem.
func CheckKeys(d Doc) error {
	if keysOK(d, 1) {
		return nil
	}
	return checkDoc(d, "", 1)
}

// keysOK reports whether d, found at depth, has no problem checkDoc would
// report. It runs on every document written, so it avoids checkDoc's
// quadratic duplicate search (see DistinctNames).
func keysOK(d Doc, depth int) bool {
	if depth > MaxDepth || !DistinctNames(d) {
		return false
	}
	for _, f := range d {
		if !NameOK(f.Key) || !valueOK(f.Value, depth) {
			return false
		}
	}
	return true
}

// DistinctNames reports whether d's own field names (not those of the
// documents in it) are distinct, as CheckKeys requires. Up to 128 fields it
// allocates nothing: a mask of a hash of each name seen sends a name to
// the search only when its bit is already set: 64 bits of a hash of the
// name's length and end bytes up to 16 fields, 1,024 of nameHash up to 128.
// A map per document, which the wider ones used to get, cost microseconds
// a document.
func DistinctNames(d Doc) bool {
	switch {
	case len(d) <= 16:
		var mask uint64
		for i, f := range d {
			k := f.Key
			if k == "" {
				continue // NameOK refuses it
			}
			bit := uint64(1) << ((uint(len(k))*31 + uint(k[0])*7 + uint(k[len(k)-1])) & 63)
			if mask&bit != 0 && seenBefore(d[:i], k) {
				return false
			}
			mask |= bit
		}
		return true
	case len(d) <= 128:
		var mask [16]uint64
		for i, f := range d {
			h := nameHash(f.Key) >> 54
			w, bit := &mask[h/64], uint64(1)<<(h%64)
			if *w&bit != 0 && seenBefore(d[:i], f.Key) {
				return false
			}
			*w |= bit
		}
		return true
	}
	seen := make(map[string]struct{}, len(d))
	for _, f := range d {
		if _, dup := seen[f.Key]; dup {
			return false
		}
		seen[f.Key] = struct{}{}
	}
	return true
}

// NameLists answers DistinctNames for a writer that meets the same lists
// of names again and again: a mapping builds every document of a level
// with the very same name strings, in the same order, leaving out the
// fields that are NULL. So a document whose names are, in order, some of
// the strings (the same bytes in memory, the same length) of a list found
// distinct before is distinct without a search: each is one of that
// list's distinct names, and none is taken twice. Strings do not change,
// and the lists hold theirs, so that memory is not reused for others
// while a list remembers it. A search cost a 25-field document about
// 190 ns (nameHash, the mask, a search on each collision); walking a list
// costs a sixth of it. Names from data (jsonb keys, pivots) are new
// strings in every document: such a document misses and is searched as
// before, and its list takes the place of one not met lately (a clock's
// second chance: a list is marked when met again), so it does not push
// out a mapping's lists. The zero value is ready; a nil *NameLists
// remembers nothing.
type NameLists struct {
	lists [4]nameList
	hand  int
	// searched counts the documents DistinctNames searched.
	searched int
}

type nameList struct {
	names []string
	used  bool // met since the clock last passed
}

// Distinct is DistinctNames(d). Up to 16 names DistinctNames' own mask
// is cheaper than walking lists (a few nanoseconds a name), and jsonb
// values, new names every time, are mostly that small.
func (l *NameLists) Distinct(d Doc) bool {
	if l == nil || len(d) <= 16 {
		return DistinctNames(d)
	}
	for i := range l.lists {
		if inOrderOf(l.lists[i].names, d) {
			l.lists[i].used = true
			return true
		}
	}
	l.searched++
	if !DistinctNames(d) {
		return false
	}
	e := l.victim()
	e.names, e.used = e.names[:0], false // marked when met again
	for _, f := range d {
		e.names = append(e.names, f.Key)
	}
	return true
}

// victim is the list to replace: the first from the hand on not met since
// the hand last passed it, clearing the marks it passes (so a second turn
// always finds one).
func (l *NameLists) victim() *nameList {
	for range 2 * len(l.lists) {
		e := &l.lists[l.hand]
		l.hand = (l.hand + 1) % len(l.lists)
		if !e.used {
			return e
		}
		e.used = false
	}
	return &l.lists[l.hand]
}

// inOrderOf reports whether d's names are strings of names (the same
// bytes in memory and the same lengths), in names' order, each taken at
// most once.
func inOrderOf(names []string, d Doc) bool {
	if len(d) > len(names) {
		return false
	}
	j := 0
	for i := range d {
		p, n := unsafe.StringData(d[i].Key), len(d[i].Key)
		for j < len(names) && (unsafe.StringData(names[j]) != p || len(names[j]) != n) {
			j++
		}
		if j == len(names) {
			return false
		}
		j++
	}
	return true
}

// nameHash is a cheap hash of k, good in its top bits: of its length and
// its first and last 8 bytes (all of a shorter name), which is where a
// table's column names differ ("amount_1", "ship_date"). Names equal there
// and different inside only cost DistinctNames a search.
func nameHash(k string) uint64 {
	n := len(k)
	var a, b uint64
	if n >= 8 {
		p := unsafe.StringData(k)
		a = binary.LittleEndian.Uint64(unsafe.Slice(p, 8))
		b = binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(p), n-8)), 8))
	} else {
		for i := range n {
			a = a<<8 | uint64(k[i])
		}
	}
	// mixed as a 64-bit finalizer mixes (every input bit reaches the top)
	h := (a ^ uint64(n)) * 0x9e3779b97f4a7c15
	h = (h ^ b) * 0xc2b2ae3d27d4eb4f
	h = (h ^ h>>32) * 0x165667b19e3779f9
	return h ^ h>>29
}

// seenBefore reports whether a field of d is named k.
func seenBefore(d Doc, k string) bool {
	for _, g := range d {
		if g.Key == k {
			return true
		}
	}
	return false
}

// NameOK reports whether k can be a stored field name: the field-name
// rule, mappings.FieldNameFaults.
func NameOK(k string) bool { return mappings.FieldNameFaults(k) == 0 }

// valueOK is keysOK for a value found in a document at depth.
func valueOK(v any, depth int) bool {
	switch x := v.(type) {
	case Doc:
		return keysOK(x, depth+1)
	case Array:
		if depth+1 > MaxDepth {
			return false
		}
		for _, e := range x {
			if !valueOK(e, depth+1) {
				return false
			}
		}
	}
	return true
}

func checkDoc(d Doc, prefix string, depth int) error {
	if depth > MaxDepth {
		return &KeyError{Path: strings.TrimSuffix(prefix, "."), Reason: fmt.Sprintf("nested deeper than %d levels", MaxDepth)}
	}
	var seen map[string]bool
	if len(d) > 16 {
		seen = make(map[string]bool, len(d))
	}
	for i, f := range d {
		path := prefix + f.Key
		if why := keyProblem(f.Key); why != "" {
			return &KeyError{Path: path, Reason: why}
		}
		dup := false
		if seen != nil {
			dup = seen[f.Key]
			seen[f.Key] = true
		} else {
			for _, g := range d[:i] {
				if g.Key == f.Key {
					dup = true
					break
				}
			}
		}
		if dup {
			return &KeyError{Path: path, Reason: "two fields of one document have this name (a pivot's value equal to a sibling field's name?)"}
		}
		if err := checkValue(f.Value, path, depth); err != nil {
			return err
		}
	}
	return nil
}

func checkValue(v any, path string, depth int) error {
	switch x := v.(type) {
	case Doc:
		return checkDoc(x, path+".", depth+1)
	case Array:
		if depth+1 > MaxDepth {
			return &KeyError{Path: path, Reason: fmt.Sprintf("nested deeper than %d levels", MaxDepth)}
		}
		for i, e := range x {
			if err := checkValue(e, path+"."+strconv.Itoa(i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyProblem says what is wrong with a field name, or "": the faults
// mappings.FieldNameFaults finds, spelled for a reject (the names from
// data need not be valid UTF-8, unlike a mapping's own).
func keyProblem(k string) string {
	f := mappings.FieldNameFaults(k)
	switch {
	case f&mappings.NameEmpty != 0:
		return "an empty field name"
	case f&mappings.NameDollar != 0:
		return `a field name starting with "$" (an operator to a server; {"$date": ...} and the like turn into other types in Extended JSON)`
	case f&mappings.NameDot != 0:
		return `a field name holding "." (a path to a server)`
	case f&mappings.NameNUL != 0:
		return "a field name holding a NUL character"
	}
	return ""
}
