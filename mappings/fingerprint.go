package mappings

// Fingerprints of a plan's collections, kept in a sync job's record so
// that a later run with a changed mapping can tell which collections the
// change touches (ComparePrints): those are rebuilt, the others keep
// streaming. A fingerprint hashes what the resolved plan decides about a
// collection entry's documents - tables, columns with their types and
// modes, joins, filters, orders, limits, fields, ids, buckets, the
// document type - and nothing else: positions in the file, comments,
// layout, the catalog's row estimates and the columns of a table the
// mapping does not read leave it as it is.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// CollectionPrint is the fingerprint of one target collection.
type CollectionPrint struct {
	Name string `json:"name"`
	// Entries are the collection entries writing to it, in file order.
	Entries []EntryPrint `json:"entries"`
	// Indexes hashes its indexes (declared and default), ShardKey is its
	// declared shard key ("" for none).
	Indexes  string `json:"indexes"`
	ShardKey string `json:"shardKey,omitempty"`
}

// EntryPrint is the fingerprint of one collection entry: its document
// type (TypeOf) and the hash of everything that shapes its documents.
type EntryPrint struct {
	Type string `json:"type,omitempty"`
	Docs string `json:"docs"`
}

// TypeOf names the document type an entry writes in its collection:
// "discriminator=value", "" for a collection of one type.
func TypeOf(cp *CollectionPlan) string {
	if cp.Discriminator == "" {
		return ""
	}
	return fmt.Sprintf("%s=%#v", cp.Discriminator, cp.DiscriminatorValue)
}

// Fingerprints are the fingerprints of p's collections, in
// CollectionNames order.
func Fingerprints(p *Plan) []CollectionPrint {
	var out []CollectionPrint
	for _, name := range p.CollectionNames() {
		cp := CollectionPrint{Name: name}
		for _, c := range p.Collections {
			if c.Name == name {
				cp.Entries = append(cp.Entries, EntryPrint{Type: TypeOf(c), Docs: hashOf(c)})
			}
		}
		for _, set := range p.Indexes {
			if set.Collection == name {
				if len(set.Indexes) > 0 {
					cp.Indexes = hashOf(set.Indexes)
				}
				cp.ShardKey = set.ShardKeyText()
			}
		}
		out = append(out, cp)
	}
	return out
}

// Remap is what a mapping change means for a sync job's collections.
type Remap struct {
	// Rebuild are the collections whose documents the change touches,
	// each with the document types to rebuild (nil: every document of
	// the collection, as a new collection too) and why.
	Rebuild []RebuildSet
	// Removed are collections the new mapping no longer writes.
	Removed []string
	// Indexes are collections whose indexes changed (alone or with
	// their documents).
	Indexes []string
	// Refused says why the change cannot be applied in place (empty:
	// it can).
	Refused []string
}

// RebuildSet is one collection to rebuild.
type RebuildSet struct {
	Collection string
	// Types are the document types (TypeOf) to rebuild; nil: all of the
	// collection's documents.
	Types []string
	Why   string
}

// Changed reports whether the change touches anything.
func (r *Remap) Changed() bool {
	return len(r.Rebuild) > 0 || len(r.Removed) > 0 || len(r.Indexes) > 0 || len(r.Refused) > 0
}

// Collections are the names of the collections to rebuild.
func (r *Remap) Collections() []string {
	out := make([]string, len(r.Rebuild))
	for i, b := range r.Rebuild {
		out[i] = b.Collection
	}
	return out
}

// ComparePrints compares a job's recorded fingerprints (then) with the
// current mapping's (now). A collection only now is rebuilt whole (a
// copy); one only then is Removed. A collection whose document types
// changed (one added, removed, or its discriminator changed) is rebuilt
// whole: documents of a type that is gone must go. Otherwise the types
// whose documents changed are rebuilt, each alone. A changed shard key
// is refused: a sharded collection's key is set before its first write.
func ComparePrints(then, now []CollectionPrint) *Remap {
	r := &Remap{}
	old := map[string]CollectionPrint{}
	for _, c := range then {
		old[c.Name] = c
	}
	for _, n := range now {
		o, ok := old[n.Name]
		delete(old, n.Name)
		if !ok {
			r.Rebuild = append(r.Rebuild, RebuildSet{Collection: n.Name, Why: "new in the mapping"})
			if len(n.Indexes) > 0 {
				r.Indexes = append(r.Indexes, n.Name)
			}
			continue
		}
		if o.ShardKey != n.ShardKey {
			r.Refused = append(r.Refused, fmt.Sprintf("the shard key of collection %s changed from (%s) to (%s): a collection's shard key is set before its first write and cannot change in place; give the collection another name in the mapping (a new collection is copied), or start the job over", n.Name, o.ShardKey, n.ShardKey))
		}
		if o.Indexes != n.Indexes {
			r.Indexes = append(r.Indexes, n.Name)
		}
		types := func(es []EntryPrint) []string {
			var out []string
			for _, e := range es {
				out = append(out, e.Type)
			}
			return out
		}
		if !slices.Equal(types(o.Entries), types(n.Entries)) {
			r.Rebuild = append(r.Rebuild, RebuildSet{Collection: n.Name, Why: "its document types changed"})
			continue
		}
		var changed []string
		for i, e := range n.Entries {
			if e.Docs != o.Entries[i].Docs {
				changed = append(changed, e.Type)
			}
		}
		switch {
		case len(changed) == 0:
		case len(changed) == len(n.Entries):
			r.Rebuild = append(r.Rebuild, RebuildSet{Collection: n.Name, Why: "its documents changed"})
		default:
			r.Rebuild = append(r.Rebuild, RebuildSet{Collection: n.Name, Types: changed,
				Why: "its documents of types " + strings.Join(changed, ", ") + " changed"})
		}
	}
	for _, c := range then {
		if _, ok := old[c.Name]; ok {
			r.Removed = append(r.Removed, c.Name)
		}
	}
	return r
}

// hashOf hashes v as printPlan writes it.
func hashOf(v any) string {
	h := sha256.New()
	p := &planPrinter{h: h}
	p.value(reflect.ValueOf(v), "")
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// planPrinter writes a plan value, field by field, into a hash. It leaves
// out what does not shape documents (planPrintSkip); a *Table is its
// name and how it is read, not its catalog entry; a *Node other than one
// of a node's Children (or a root) is its path: the node it points at is
// printed where it is a child.
type planPrinter struct{ h hash.Hash }

// planPrintSkip are the fields a fingerprint leaves out: positions in
// the file, the parent pointer (the tree is walked down), a compiled
// expression (its Source is printed), an index's reason, and a column's
// NOT NULL (a row's value is written the same either way).
var planPrintSkip = map[string]bool{"Pos": true, "FilterPos": true, "Parent": true, "Program": true, "Reason": true, "NotNull": true}

var (
	nodeType  = reflect.TypeFor[Node]()
	tableType = reflect.TypeFor[Table]()
)

func (p *planPrinter) write(s string) { _, _ = p.h.Write([]byte(s)) }

func (p *planPrinter) value(v reflect.Value, field string) {
	switch v.Kind() {
	case reflect.Invalid:
		p.write("nil;")
	case reflect.Pointer:
		if v.IsNil() {
			p.write("nil;")
			return
		}
		switch e := v.Elem(); {
		case e.Type() == tableType:
			t := e.Addr().Interface().(*Table)
			p.write(fmt.Sprintf("table(%s.%s %s %v);", t.Schema, t.Name, t.Kind, t.Partitioned))
		case e.Type() == nodeType && field != "Root" && field != "Children":
			p.write("node(" + e.Addr().Interface().(*Node).Path + ");")
		default:
			p.value(e, field)
		}
	case reflect.Interface:
		if v.IsNil() {
			p.write("nil;")
			return
		}
		p.write(v.Elem().Type().String() + ":")
		p.value(v.Elem(), field)
	case reflect.Struct:
		t := v.Type()
		if t.PkgPath() != nodeType.PkgPath() && v.CanInterface() {
			// Another package's value (a time in a constant): as Go
			// prints it.
			p.write(fmt.Sprintf("%T:%#v;", v.Interface(), v.Interface()))
			return
		}
		p.write(t.Name() + "{")
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || planPrintSkip[f.Name] {
				continue
			}
			p.write(f.Name + ":")
			p.value(v.Field(i), f.Name)
		}
		p.write("}")
	case reflect.Slice, reflect.Array:
		p.write(fmt.Sprintf("[%d:", v.Len()))
		for i := range v.Len() {
			p.value(v.Index(i), field)
		}
		p.write("]")
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		p.write(fmt.Sprintf("map[%d:", v.Len()))
		for _, k := range keys {
			p.value(k, field)
			p.write("=")
			p.value(v.MapIndex(k), field)
		}
		p.write("]")
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		// Not data.
	default:
		p.write(fmt.Sprintf("%#v;", v.Interface()))
	}
}
