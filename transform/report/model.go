package report

import (
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Model is a mapping's whole document model, as the diagram draws it
// (diagram.go): every collection with the fields a modeller looks for
// (_id, embedded arrays and objects with what they nest, id arrays,
// references, indexed and shard key fields; the other fields counted),
// and the references and id arrays between collections. ModelOf makes it
// from a plan; WithStats adds plan's figures (documents, sizes, items per
// array).
type Model struct {
	Collections []*ModelCollection
	Arrows      []ModelArrow
}

// ModelCollection is one target collection: one entry per mapping entry
// writing it (a shared collection has several).
type ModelCollection struct {
	Name    string
	Entries []*ModelEntry
}

// ModelEntry is one collection entry of the mapping.
type ModelEntry struct {
	// Table is the root table (schema.table).
	Table string
	// Bucket: the documents are pages of PageSize items of the root
	// table's rows, one parent (By) each.
	Bucket   bool
	PageSize int
	By       string
	// HasStats: Documents and Size are plan's figures.
	HasStats  bool
	Documents int64
	Size      Distribution
	Fields    []*ModelField
}

// Kinds of ModelField.
const (
	FieldID     = "id"     // _id
	FieldPlain  = "field"  // a field shown for its index or shard key mark
	FieldRef    = "ref"    // a value referencing another collection (ref:)
	FieldArray  = "array"  // embedded related rows, an array of documents
	FieldObject = "object" // an embedded row, a document
	FieldIds    = "ids"    // an array of ids (ids:, links)
	FieldItems  = "items"  // a bucket page's items
	FieldMore   = "more"   // the fields not drawn, counted
)

// ModelField is one field drawn in a collection's box.
type ModelField struct {
	Name string
	// Path is the field's path as plan's figures name it:
	// "holdings[].stockId" (ArrayStat.Path).
	Path string
	Kind string
	// Table is the table an embed, id array or bucket's items read.
	Table string
	// Ref is the referenced collection (FieldRef, FieldIds), if declared.
	Ref string
	// Limit is an embed's limit (0: none).
	Limit int
	// Index: a field of an index migrate creates; Unique: of a unique
	// one; Shard: of the collection's shard key.
	Index, Unique, Shard bool
	// Stats are the array's lengths (items per page for FieldItems), nil
	// without plan's figures.
	Stats    *ArrayStat
	Children []*ModelField
	// More is the number of fields not drawn (FieldMore).
	More int
}

// ModelArrow is a reference or an id array from a field of From's
// documents to the collection To.
type ModelArrow struct {
	From, To string
	// Path is the field (ModelField.Path) and Ids says it is an id array.
	Path string
	Ids  bool
}

// keyMark is what the indexes and shard key say about one field.
type keyMark struct{ index, unique, shard bool }

// keyMarks maps each field path (dotted, without array markers) of
// collection's indexes and shard key to its marks.
func keyMarks(plan *mappings.Plan, collection string) map[string]keyMark {
	m := map[string]keyMark{}
	for _, set := range plan.Indexes {
		if set.Collection != collection {
			continue
		}
		for _, ix := range set.Indexes {
			for _, k := range ix.Keys {
				km := m[k.Field]
				km.index = true
				km.unique = km.unique || (ix.Unique && len(ix.Keys) == 1)
				m[k.Field] = km
			}
		}
		for _, k := range set.ShardKey {
			km := m[k.Field]
			km.shard = true
			m[k.Field] = km
		}
	}
	return m
}

// ModelOf is plan's document model, without figures.
func ModelOf(plan *mappings.Plan) *Model {
	m := &Model{}
	byName := map[string]*ModelCollection{}
	for _, cp := range plan.Collections {
		mc := byName[cp.Name]
		if mc == nil {
			mc = &ModelCollection{Name: cp.Name}
			byName[cp.Name] = mc
			m.Collections = append(m.Collections, mc)
		}
		marks := keyMarks(plan, cp.Name)
		e := &ModelEntry{Table: tableName(cp.Root.Table)}
		id := &ModelField{Name: "_id", Path: "_id", Kind: FieldID, Index: true, Unique: true, Shard: marks["_id"].shard}
		e.Fields = append(e.Fields, id)
		b := &modelBuilder{m: m, coll: cp.Name, marks: marks}
		if bp := cp.Bucket; bp != nil {
			e.Bucket, e.PageSize, e.By = true, bp.Size, strings.Join(bp.ByNames, ", ")
			for _, name := range append(append([]string{}, bp.ByNames...), bp.Page) {
				km := marks[name]
				e.Fields = append(e.Fields, &ModelField{Name: name, Path: name, Kind: FieldPlain, Index: km.index, Unique: km.unique, Shard: km.shard})
			}
			items := &ModelField{Name: bp.Items, Path: bp.Items, Kind: FieldItems, Table: e.Table}
			items.Children = b.fields(cp.Root, []string{bp.Items, "[]"})
			e.Fields = append(e.Fields, items)
		} else {
			e.Fields = append(e.Fields, b.fields(cp.Root, nil)...)
		}
		mc.Entries = append(mc.Entries, e)
	}
	return m
}

type modelBuilder struct {
	m     *Model
	coll  string
	marks map[string]keyMark
}

// dotted is an index's name for a path: its fields joined by dots.
func dotted(segs []string) string {
	var parts []string
	for _, s := range segs {
		if s != "[]" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ".")
}

// fields are the drawn fields of n's (sub)documents, found at prefix.
func (b *modelBuilder) fields(n *mappings.Node, prefix []string) []*ModelField {
	var out []*ModelField
	more := 0
	for i := range n.Fields {
		f := &n.Fields[i]
		if f.Name == "" { // a pivot: named by the data
			more++
			continue
		}
		segs := append(append([]string{}, prefix...), f.Name)
		km := b.marks[dotted(segs)]
		mf := &ModelField{Name: f.Name, Path: pathText(segs), Index: km.index, Unique: km.unique, Shard: km.shard, Ref: f.RefCollection}
		switch f.Kind {
		case mappings.FieldEmbed:
			mf.Kind, mf.Table, mf.Limit = FieldArray, tableName(f.Embed.Table), f.Embed.Limit
			inner := segs
			if f.Embed.Object {
				mf.Kind, mf.Limit = FieldObject, 0
			} else {
				inner = append(inner, "[]")
			}
			mf.Children = b.fields(f.Embed, inner)
		case mappings.FieldIds:
			mf.Kind, mf.Table, mf.Limit = FieldIds, tableName(f.Embed.Table), f.Embed.Limit
		default:
			switch {
			case f.RefCollection != "":
				mf.Kind = FieldRef
			case km.index || km.shard:
				mf.Kind = FieldPlain
			default:
				more++
				continue
			}
		}
		if mf.Ref != "" {
			b.m.Arrows = append(b.m.Arrows, ModelArrow{From: b.coll, To: mf.Ref, Path: mf.Path, Ids: mf.Kind == FieldIds})
		}
		out = append(out, mf)
	}
	if more > 0 {
		out = append(out, &ModelField{Kind: FieldMore, More: more})
	}
	return out
}

// WithStats adds plan's figures of cols (the report's collections, in the
// plan's order) to m's entries and arrays, and returns m.
func (m *Model) WithStats(cols []*Collection) *Model {
	used := map[*Collection]bool{}
	for _, mc := range m.Collections {
		for _, e := range mc.Entries {
			var c *Collection
			for _, rc := range cols {
				if !used[rc] && rc.Name == mc.Name && rc.Table == e.Table {
					c = rc
					break
				}
			}
			if c == nil {
				continue
			}
			used[c] = true
			e.HasStats, e.Documents, e.Size = true, c.Documents, c.Size
			arrays := map[string]*ArrayStat{}
			for i := range c.Arrays {
				arrays[c.Arrays[i].Path] = &c.Arrays[i]
			}
			var walk func(fs []*ModelField)
			walk = func(fs []*ModelField) {
				for _, f := range fs {
					switch f.Kind {
					case FieldArray, FieldIds, FieldItems:
						f.Stats = arrays[f.Path]
					}
					walk(f.Children)
				}
			}
			walk(e.Fields)
		}
	}
	return m
}
