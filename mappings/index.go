package mappings

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Indexes and shard keys: what a collection declares (indexes:, shardKey:)
// and the indexes that follow from its pattern (a bucket collection's
// parent key and page, the fields a shared collection's document types
// have in common). Resolve puts both in Plan.Indexes, one IndexSet per
// target collection; migrate creates them, plan lists them and verify
// checks them.

// IndexSpec is one index as the mapping file declares it.
type IndexSpec struct {
	// Keys are "field", "field asc", "field desc" or "field hashed"; a
	// field is a top-level field or a dotted path into embedded documents.
	Keys StringList `yaml:"keys"`
	// Unique makes the target refuse two documents with the same keys.
	Unique bool `yaml:"unique"`
	// Partial indexes only the documents matching this filter (MongoDB's
	// partialFilterExpression), written as a query document.
	Partial Partial `yaml:"partial"`
	// Name names the index; default: MongoDB's (field_1_other_-1).
	Name string `yaml:"name"`
	pos  positions
}

// UnmarshalYAML implements yaml.Unmarshaler to record positions.
func (s *IndexSpec) UnmarshalYAML(n *yaml.Node) error {
	type plain IndexSpec
	if err := n.Decode((*plain)(s)); err != nil {
		return err
	}
	s.pos = positionsOf(n)
	return nil
}

// Partial is a query document in the mapping file's order: each value is
// a string, int32, int64, float64, bool, nil, a []any of such values or a
// Partial.
type Partial []PartialField

// PartialField is one key of a Partial.
type PartialField struct {
	Key   string
	Value any
}

// UnmarshalYAML keeps the keys' order.
func (p *Partial) UnmarshalYAML(n *yaml.Node) error {
	v, err := partialValue(n)
	if err != nil {
		return err
	}
	d, ok := v.(Partial)
	if !ok {
		return fmt.Errorf("partial must be a query document, such as {active: true}")
	}
	*p = d
	return nil
}

func partialValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return partialValue(n.Alias)
	case yaml.MappingNode:
		d := Partial{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := partialValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			d = append(d, PartialField{Key: n.Content[i].Value, Value: v})
		}
		return d, nil
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			v, err := partialValue(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	}
	var c Const
	if n.ShortTag() == "!!null" {
		return nil, nil
	}
	if err := c.UnmarshalYAML(n); err != nil {
		return nil, err
	}
	return c.V, nil
}

// String writes p as compact JSON-like text for messages and reports.
func (p Partial) String() string {
	var b strings.Builder
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case Partial:
			b.WriteByte('{')
			for i, f := range x {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Quote(f.Key) + ": ")
				write(f.Value)
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					b.WriteString(", ")
				}
				write(e)
			}
			b.WriteByte(']')
		case string:
			b.WriteString(strconv.Quote(x))
		case nil:
			b.WriteString("null")
		default:
			fmt.Fprint(&b, x)
		}
	}
	write(p)
	return b.String()
}

// Index key orders.
const (
	IndexAsc    = "asc"
	IndexDesc   = "desc"
	IndexHashed = "hashed"
)

// IndexKey is one key of an index or shard key.
type IndexKey struct {
	Field string `json:"field"`
	// Order is IndexAsc, IndexDesc or IndexHashed.
	Order string `json:"order"`
}

// Index is one index of a target collection.
type Index struct {
	Name    string     `json:"name"`
	Keys    []IndexKey `json:"keys"`
	Unique  bool       `json:"unique,omitempty"`
	Partial Partial    `json:"-"`
	// Default: the index follows from the collection's pattern; Reason
	// says why (declared indexes have none).
	Default bool   `json:"default,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Pos is where it is declared (the collection entry for a default).
	Pos Pos `json:"-"`
}

// KeyText writes the keys as the mapping file does: "postId, page desc".
func (ix Index) KeyText() string { return keyText(ix.Keys) }

func keyText(keys []IndexKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.Field
		if k.Order != IndexAsc {
			parts[i] += " " + k.Order
		}
	}
	return strings.Join(parts, ", ")
}

// SameKeys reports whether a and b have the same keys in the same order.
func SameKeys(a, b []IndexKey) bool { return slices.Equal(a, b) }

// IndexSet is everything index-like of one target collection.
type IndexSet struct {
	Collection string  `json:"collection"`
	Indexes    []Index `json:"indexes"`
	// ShardKey is the declared shard key, nil when none.
	ShardKey []IndexKey `json:"shardKey,omitempty"`
}

// ShardKeyText writes the shard key as the mapping file does.
func (s IndexSet) ShardKeyText() string { return keyText(s.ShardKey) }

// IndexName is MongoDB's default name of an index with keys:
// field_1_other_-1, hashed keys as field_hashed.
func IndexName(keys []IndexKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		dir := "1"
		switch k.Order {
		case IndexDesc:
			dir = "-1"
		case IndexHashed:
			dir = "hashed"
		}
		parts[i] = k.Field + "_" + dir
	}
	return strings.Join(parts, "_")
}

// parseIndexKey reads "field", "field asc", "field desc", "field hashed".
func parseIndexKey(s string) (IndexKey, error) {
	parts := strings.Fields(s)
	if len(parts) == 1 {
		return IndexKey{Field: parts[0], Order: IndexAsc}, nil
	}
	if len(parts) == 2 {
		switch o := strings.ToLower(parts[1]); o {
		case IndexAsc, IndexDesc, IndexHashed:
			return IndexKey{Field: parts[0], Order: o}, nil
		}
	}
	return IndexKey{}, fmt.Errorf("index key %q must be \"field\", \"field asc\", \"field desc\" or \"field hashed\"", s)
}

// checkIndexes checks a collection entry's indexes and shard key without
// the catalog: key syntax, hashed keys, duplicate names.
func (c *checker) checkIndexes(col *Collection) {
	names := map[string]bool{}
	for _, s := range col.Indexes {
		keys, ok := c.indexKeys(s.Keys, s.pos.at("keys"), col.Name)
		if !ok {
			continue
		}
		hashed := 0
		for _, k := range keys {
			if k.Order == IndexHashed {
				hashed++
			}
			if strings.HasPrefix(k.Field, "$") || strings.Contains(k.Field, "..") || strings.HasSuffix(k.Field, ".") || strings.HasPrefix(k.Field, ".") {
				c.add(s.pos.at("keys"), "%s: index key %q is not a field path", col.Name, k.Field)
			}
		}
		switch {
		case hashed > 1:
			c.add(s.pos.at("keys"), "%s: an index has at most one hashed key", col.Name)
		case hashed > 0 && s.Unique:
			c.add(s.pos.at("unique"), "%s: a hashed index cannot be unique", col.Name)
		}
		if len(keys) == 1 && keys[0].Field == "_id" && s.Partial == nil {
			c.add(s.pos.at("keys"), "%s: every collection has its unique index on _id already", col.Name)
		}
		name := s.Name
		if name == "" {
			name = IndexName(keys)
		}
		if names[name] {
			c.add(s.pos.self, "%s: index %q is declared twice", col.Name, name)
		}
		names[name] = true
	}
	if len(col.ShardKey) > 0 {
		keys, ok := c.indexKeys(col.ShardKey, col.pos.at("shardKey"), col.Name)
		if ok {
			for i, k := range keys {
				if k.Order == IndexDesc {
					c.add(col.pos.at("shardKey"), "%s: a shard key's fields are ascending or hashed, not desc", col.Name)
				}
				if k.Order == IndexHashed && i > 0 && len(keys) > 1 {
					c.add(col.pos.at("shardKey"), "%s: a hashed shard key field comes first", col.Name)
				}
			}
		}
	}
}

func (c *checker) indexKeys(list StringList, p Pos, where string) ([]IndexKey, bool) {
	var keys []IndexKey
	seen := map[string]bool{}
	ok := true
	for _, s := range list {
		k, err := parseIndexKey(s)
		if err != nil {
			c.add(p, "%s: %v", where, err)
			ok = false
			continue
		}
		if seen[k.Field] {
			c.add(p, "%s: field %q appears twice in the keys", where, k.Field)
			ok = false
		}
		seen[k.Field] = true
		keys = append(keys, k)
	}
	return keys, ok
}

// checkShardKeys checks that the entries of one shared collection do not
// declare different shard keys.
func (c *checker) checkShardKeys(cols []*Collection) {
	var first *Collection
	for _, col := range cols {
		if len(col.ShardKey) == 0 {
			continue
		}
		if first == nil {
			first = col
			continue
		}
		if !slices.Equal(first.ShardKey, col.ShardKey) {
			c.add(col.pos.at("shardKey"), "%s: shard key %q differs from the one at line %d (%q): a collection has one shard key", col.Name, strings.Join(col.ShardKey, ", "), first.pos.at("shardKey").Line, strings.Join(first.ShardKey, ", "))
		}
	}
}

// resolveIndexes builds the plan's index sets, one per target collection
// in the order of CollectionNames: the declared indexes (their fields
// checked against the documents' top-level fields), then the defaults a
// declared index with the same keys does not replace.
func (r *resolver) resolveIndexes(plan *Plan) {
	byName := map[string][]*CollectionPlan{}
	entries := map[string][]*Collection{}
	for _, cp := range plan.Collections {
		byName[cp.Name] = append(byName[cp.Name], cp)
	}
	for _, c := range r.file.Collections {
		entries[c.Name] = append(entries[c.Name], c)
	}
	for _, name := range plan.CollectionNames() {
		cps, cols := byName[name], entries[name]
		set := IndexSet{Collection: name}
		fields, open := topFields(cps)
		field := func(f string, p Pos) {
			top, _, _ := strings.Cut(f, ".")
			if !open && !fields[top] {
				r.add(p, "%s: index field %q is not a field of its documents (%s)", name, f, strings.Join(sortedKeys(fields), ", "))
			}
		}
		for _, c := range cols {
			for _, s := range c.Indexes {
				ix := Index{Name: s.Name, Unique: s.Unique, Partial: s.Partial, Pos: s.pos.self}
				for _, k := range s.Keys {
					key, err := parseIndexKey(k)
					if err != nil {
						continue // reported by check
					}
					field(key.Field, s.pos.at("keys"))
					ix.Keys = append(ix.Keys, key)
				}
				if ix.Name == "" {
					ix.Name = IndexName(ix.Keys)
				}
				set.Indexes = append(set.Indexes, ix)
			}
			if len(c.ShardKey) > 0 && set.ShardKey == nil {
				for _, k := range c.ShardKey {
					key, err := parseIndexKey(k)
					if err != nil {
						continue
					}
					field(key.Field, c.pos.at("shardKey"))
					set.ShardKey = append(set.ShardKey, key)
				}
			}
		}
		for _, d := range defaultIndexes(cps) {
			dup := false
			for _, ix := range set.Indexes {
				if SameKeys(ix.Keys, d.Keys) {
					dup = true
					break
				}
				if ix.Name == d.Name {
					r.add(ix.Pos, "%s: index name %q is that of the default index on (%s); give this one another name, or the same keys to replace the default", name, ix.Name, d.KeyText())
					dup = true
				}
			}
			if !dup {
				set.Indexes = append(set.Indexes, d)
			}
		}
		plan.Indexes = append(plan.Indexes, set)
	}
}

// topFields lists the top-level field names the entries' documents have;
// open is true when some are named by the data (a pivot), so any name may
// occur.
func topFields(cps []*CollectionPlan) (map[string]bool, bool) {
	fields := map[string]bool{"_id": true}
	open := false
	for _, cp := range cps {
		if b := cp.Bucket; b != nil {
			for _, n := range b.ByNames {
				fields[n] = true
			}
			fields[b.Page], fields[b.Items] = true, true
			continue
		}
		for _, f := range cp.Root.Fields {
			if f.Name == "" {
				open = true
				continue
			}
			fields[f.Name] = true
		}
	}
	return fields, open
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// defaultIndexes are the indexes a collection's pattern calls for:
//   - a bucket collection's pages are read by parent, page after page: a
//     unique index on the parent key fields and the page number;
//   - the document types of a shared collection are read together by
//     what they share (a book and its reviews by bookId): an index on the
//     column fields every type has, then the discriminator.
func defaultIndexes(cps []*CollectionPlan) []Index {
	if len(cps) == 0 {
		return nil
	}
	var out []Index
	for _, cp := range cps {
		if b := cp.Bucket; b != nil {
			var keys []IndexKey
			for _, n := range b.ByNames {
				keys = append(keys, IndexKey{Field: n, Order: IndexAsc})
			}
			keys = append(keys, IndexKey{Field: b.Page, Order: IndexAsc})
			out = append(out, Index{Name: IndexName(keys), Keys: keys, Unique: true, Default: true, Pos: cp.Pos,
				Reason: fmt.Sprintf("bucket pages are read by parent (%s), page by page: one page per parent and page number", strings.Join(b.ByNames, ", "))})
		}
	}
	if len(cps) < 2 || cps[0].Discriminator == "" {
		return out
	}
	var shared []string
	for _, f := range cps[0].Root.Fields {
		if f.Kind != FieldColumn || f.Name == "" || f.Name == cps[0].Discriminator {
			continue
		}
		all := true
		for _, other := range cps[1:] {
			found := false
			for _, g := range other.Root.Fields {
				if g.Kind == FieldColumn && g.Name == f.Name {
					found = true
				}
			}
			all = all && found
		}
		if all {
			shared = append(shared, f.Name)
		}
	}
	if len(shared) == 0 {
		return out
	}
	var keys []IndexKey
	for _, n := range shared {
		keys = append(keys, IndexKey{Field: n, Order: IndexAsc})
	}
	keys = append(keys, IndexKey{Field: cps[0].Discriminator, Order: IndexAsc})
	out = append(out, Index{Name: IndexName(keys), Keys: keys, Default: true, Pos: cps[0].Pos,
		Reason: fmt.Sprintf("its %d document types share %s: related documents of every type are read together by it (and one type by adding %s)", len(cps), strings.Join(shared, ", "), cps[0].Discriminator)})
	return out
}

// IndexSet returns the index set of collection name (nil when the plan
// has no such collection).
func (p *Plan) IndexSet(name string) *IndexSet {
	for i := range p.Indexes {
		if p.Indexes[i].Collection == name {
			return &p.Indexes[i]
		}
	}
	return nil
}
