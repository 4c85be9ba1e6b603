// Package advise drafts a mapping file from a schema's catalog and data
// statistics by applying the modeling rules of denorm's README: a document
// design, not a copy of the tables.
//
//   - a join table (its key made of two foreign keys, no other data) is
//     replaced by id arrays, with ref:, on the side(s) where they stay
//     bounded;
//   - a small lookup table (a code and a label, referenced by foreign
//     keys) is copied into the referencing documents as a value;
//   - a child table belongs to one parent (its owner, chosen among its
//     foreign keys by the rules of chooseOwner, in classify.go); it is
//     embedded in the parent when the number of children per parent is
//     bounded (judged on p99, not on the largest parent) and does not grow
//     with time, including line items that also refer to a product (whose
//     name is then copied next to the reference);
//   - a child that grows with time (an append-only history: an event time
//     that its parent does not have) becomes a bucket collection, the
//     parent embedding the most recent few;
//   - a row referenced one-to-one (each referenced row used by at most one
//     referencing row, like a customer's address) is copied as an object
//     into the referencing document;
//   - everything else is its own collection, holding references (ref:) to
//     the collections it points to.
//
// The draft is always valid: names are made safe for the target (no dots,
// no leading $, no duplicates after camelCase), columns the mapping
// language cannot name directly are taken through "*" and rename, and
// columns that look like secrets (password, token, hash, ...) or search
// internals (tsvector) are left out with a comment saying why.
//
// Every choice is written next to the mapping entry as a comment with its
// reason and numbers. The package is pure: the caller reads the catalog and
// statistics (extract) and passes them in.
package advise

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Thresholds of the rules.
const (
	// EmbedMax is the largest p99 of children per parent an embedded
	// relation may have (one-to-few).
	EmbedMax = 20
	// UnboundedMin is the fan-out above which a relation is unbounded: no
	// embedding even for one outlier parent, no id array.
	UnboundedMin = 100
	// LookupMaxRows is the largest table treated as a lookup table.
	LookupMaxRows = 1000
	// HotUpdatesPerRow marks a table that changes often (with at least
	// HotMinUpdates updates since statistics reset).
	HotUpdatesPerRow = 1.0
	HotMinUpdates    = 100
	// BucketSize is the page size of drafted bucket collections, and
	// RecentItems the number of recent children embedded in the parent.
	BucketSize  = 100
	RecentItems = 3
	// MaxEmbedDepth is the deepest nesting of embedded children.
	MaxEmbedDepth = 3
)

// Fanout is the number of child rows per parent row through a foreign key
// (Parents counts the parents with at least one child).
type Fanout struct {
	Parents  int64
	Avg      float64
	P99, Max int64
}

// Input is what the advisor knows about the schema.
type Input struct {
	Schema  string
	Catalog *mappings.Catalog
	// Activity is keyed by qualified table name.
	Activity map[string]mappings.TableActivity
	// Fanout is keyed by FanoutKey(child table, foreign key), for every
	// foreign key ForeignKeys lists.
	Fanout map[string]Fanout
	// Numeric, when set, is written as the file's numeric mode (decimal,
	// double or string).
	Numeric mappings.NumericMode
	// Target, when known (--target), is what the target can store: the
	// numeric mode drafted when Numeric is not set follows it, and the
	// draft says why.
	Target *Target
	// Promote names the tables to draft as collections of their own
	// rather than under a parent, each with why (Promotions).
	Promote map[string]string
	// Coverage, when set, is the coverage of the draft of this same Input
	// (extract.Coverage), keyed by qualified table name: the draft says at
	// each table how many of its rows reach no document, and why.
	Coverage map[string]mappings.TableCoverage
}

// Target is what advise knows of the target.
type Target struct {
	// Server names it ("FerretDB 1.24.0", "MongoDB 7.0.14"; "" for a
	// directory).
	Server string
	// NoDecimal128: it cannot store BSON Decimal128 (FerretDB 1.24).
	NoDecimal128 bool
}

// FanoutKey names a foreign key for Input.Fanout.
func FanoutKey(child *mappings.Table, fk mappings.ForeignKey) string {
	return child.Schema + "." + child.Name + "(" + strings.Join(fk.Columns, ",") + ")"
}

// Choice is one decision, for the report next to the mapping.
type Choice struct {
	Table string
	// Action is collection, embed, bucket, lookup, link, inline or skip.
	Action string
	// Target is where the table's rows go: a collection, or the path of
	// the field embedding them; empty for skip.
	Target string
	Reason string
}

// Draft returns the mapping file text and the choices made.
func Draft(in Input) (string, []Choice, error) {
	if in.Catalog == nil || len(in.Catalog.Tables) == 0 {
		return "", nil, fmt.Errorf("schema %q has no tables: give the schema holding your data with --schema", in.Schema)
	}
	a := newAdvisor(in)
	a.classify()
	a.annotate()
	text := a.write()
	return text, a.choices(), nil
}

// rel is a foreign key of child, declared or implied by column names.
type rel struct {
	mappings.ForeignKey
	child   *mappings.Table
	implied bool
}

// role is what the draft does with one table.
type role struct {
	t      *mappings.Table
	q      string // qualified name
	action string
	reason string
	// owner is the foreign key to the parent the table belongs to (embed,
	// bucket; informational for collections), ownerWhy how it was chosen
	// or why there is none.
	owner    *rel
	ownerWhy string
	// keyless: no primary key or unique NOT NULL key, but a foreign key:
	// its rows can only be embedded in their parent (an array needs no
	// _id), never a collection or bucket pages.
	keyless bool
	coll    string   // collection name (collection, bucket)
	time    string   // bucket order column
	places  []string // where the rows are written, for the report
}

type advisor struct {
	in    Input
	names []string // qualified table names, sorted
	roles map[string]*role
	out   map[string][]*rel // foreign keys by child table
	refBy map[string][]*rel // foreign keys by referenced table
	// indexes are the proposals for the collection being written.
	indexes []indexProposal
}

func newAdvisor(in Input) *advisor {
	a := &advisor{in: in, roles: map[string]*role{}, out: map[string][]*rel{}, refBy: map[string][]*rel{}}
	for q := range in.Catalog.Tables {
		a.names = append(a.names, q)
	}
	sort.Strings(a.names)
	for _, q := range a.names {
		t := in.Catalog.Tables[q]
		a.roles[q] = &role{t: t, q: q}
		declared := len(t.ForeignKeys)
		for i, fk := range ForeignKeys(in.Catalog, t) {
			r := &rel{ForeignKey: fk, child: t, implied: i >= declared}
			a.out[q] = append(a.out[q], r)
			a.refBy[fk.RefTable] = append(a.refBy[fk.RefTable], r)
		}
	}
	return a
}

// ForeignKeys lists the foreign keys advise reads t's relations through:
// the declared ones, then those implied by column names. A column with no
// declared foreign key named "<table>_id" (or "<role>_<table>_id", the
// table named in the singular or the plural: product_id, products) after
// another table of the same schema whose key is one column named
// "<table>_id" or "id", of the same kind, is read as a reference to it (PostgreSQL keeps the foreign keys of
// a partitioned table on its partitions in older dumps, as Pagila's payment
// does, and many schemas declare none). The caller reads each one's fan-out
// into Input.Fanout.
func ForeignKeys(cat *mappings.Catalog, t *mappings.Table) []mappings.ForeignKey {
	out := append([]mappings.ForeignKey(nil), t.ForeignKeys...)
	covered := map[string]bool{}
	for _, fk := range t.ForeignKeys {
		for _, c := range fk.Columns {
			covered[c] = true
		}
	}
	for _, c := range t.Columns {
		if covered[c.Name] || len(t.PrimaryKey) == 1 && t.PrimaryKey[0] == c.Name {
			continue
		}
		if p, k := impliedTarget(cat, t, c); p != nil {
			out = append(out, mappings.ForeignKey{Columns: []string{c.Name}, RefTable: qual(p), RefColumns: []string{k}})
		}
	}
	return out
}

// impliedTarget is the table a column names by "<table>_id" or
// "<role>_<table>_id" (manager_staff_id), and its key column.
func impliedTarget(cat *mappings.Catalog, t *mappings.Table, c mappings.Column) (*mappings.Table, string) {
	base, ok := strings.CutSuffix(c.Name, "_id")
	if !ok || base == "" {
		return nil, ""
	}
	for {
		// The table is named in the singular or the plural (product_id:
		// product or products).
		for _, name := range []string{base, plural(base)} {
			if p := cat.Tables[mappings.QualifiedTableName(t.Schema, name)]; p != nil && p != t {
				k := key(p)
				if len(k) == 1 && (k[0] == base+"_id" || k[0] == "id") {
					if kc := p.Column(k[0]); kc != nil && sameKind(*kc, c) {
						return p, k[0]
					}
				}
			}
		}
		i := strings.IndexByte(base, '_')
		if i < 0 {
			return nil, ""
		}
		base = base[i+1:]
	}
}

// sameKind reports whether a and b can hold the same key values.
func sameKind(a, b mappings.Column) bool {
	ints := map[string]bool{"int2": true, "int4": true, "int8": true}
	return a.TypeName == b.TypeName || ints[a.TypeName] && ints[b.TypeName]
}

func qual(t *mappings.Table) string { return t.QualifiedName() }

func (a *advisor) activity(t *mappings.Table) mappings.TableActivity { return a.in.Activity[qual(t)] }

// rows is the table's row count: counted or estimated.
func (a *advisor) rows(t *mappings.Table) int64 { return max(a.activity(t).Rows, t.Estimate) }

func (a *advisor) hot(t *mappings.Table) bool {
	ac := a.activity(t)
	return ac.Updates >= HotMinUpdates && float64(ac.Updates)/float64(max(ac.Rows, 1)) > HotUpdatesPerRow
}

func (a *advisor) changes(t *mappings.Table) string {
	ac := a.activity(t)
	return fmt.Sprintf("%d rows, %d updates and %d inserts since statistics reset", ac.Rows, ac.Updates, ac.Inserts)
}

func (a *advisor) fan(r *rel) Fanout { return a.in.Fanout[FanoutKey(r.child, r.ForeignKey)] }

// bounded: few children per parent for 99% of parents, and no parent with
// an unbounded number.
func bounded(f Fanout) bool { return f.P99 <= EmbedMax && f.Max <= UnboundedMin }

// fanText explains a fan-out: the distribution, and why the largest
// parent does or does not decide.
func fanText(f Fanout, child, parent string) string {
	parents := parent
	if f.Parents != 1 {
		parents = plural(parent)
	}
	s := fmt.Sprintf("%s per %s: p99 %d, avg %.1f, max %d over %d %s", child, parent, f.P99, f.Avg, f.Max, f.Parents, parents)
	switch {
	case f.Max > f.P99 && f.Max <= UnboundedMin && f.P99 <= EmbedMax:
		s += fmt.Sprintf(" (the largest, %d, is an outlier: 99%% of %s have at most %d, and none more than %d)", f.Max, plural(parent), f.P99, UnboundedMin)
	case f.Max > UnboundedMin && f.P99 <= EmbedMax:
		s += fmt.Sprintf(" (most have few, but the largest has %d, over %d: unbounded)", f.Max, UnboundedMin)
	}
	return s
}

func (a *advisor) choices() []Choice {
	var out []Choice
	for _, q := range a.names {
		r := a.roles[q]
		out = append(out, Choice{Table: q, Action: r.action, Target: strings.Join(r.places, ", "), Reason: r.reason})
	}
	return out
}

// key returns the table's key: the primary key, or a unique NOT NULL key.
func key(t *mappings.Table) []string {
	if len(t.PrimaryKey) > 0 {
		return t.PrimaryKey
	}
	if len(t.Unique) > 0 {
		return t.Unique[0]
	}
	return nil
}

// unique reports whether cols are a key of t (a one-to-one child).
func unique(t *mappings.Table, cols []string) bool {
	same := func(k []string) bool {
		return len(k) == len(cols) && !slices.ContainsFunc(k, func(c string) bool { return !slices.Contains(cols, c) })
	}
	return same(t.PrimaryKey) || slices.ContainsFunc(t.Unique, same)
}
