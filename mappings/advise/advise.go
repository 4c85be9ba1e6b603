// Package advise drafts a mapping file from a schema's catalog and data
// statistics by applying the modeling rules of MISSION.md:
//
//   - a join table (its key made of two foreign keys, no other data) is
//     replaced by id arrays on the side(s) where they stay bounded (links);
//   - a small lookup table (a code and a label, referenced by foreign
//     keys) is copied into the referencing documents as a value;
//   - a child table owned by one parent, with few children per parent
//     (bounded one-to-few), that changes rarely and that nothing else
//     references, is embedded in its parent;
//   - a child table with unbounded children per parent and a time column
//     (read in pages) becomes a bucket collection, the parent embedding the
//     most recent few;
//   - everything else is its own collection, holding references (ref:)
//     to the collections it points to.
//
// Every choice is written next to the mapping entry as a comment with its
// reason and numbers. The package is pure: the caller reads the catalog and
// statistics (extract) and passes them in.
package advise

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Thresholds of the rules.
const (
	// EmbedMax is the most children per parent an embedded relation may
	// have (one-to-few).
	EmbedMax = 20
	// UnboundedMin is the fan-out above which a relation is unbounded: no
	// id array, and a bucket collection when it has a time column.
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
)

// Fanout is the number of child rows per parent row through a foreign key.
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
	// Fanout is keyed by FanoutKey(child table, foreign key).
	Fanout map[string]Fanout
	// Numeric, when set, is written as the file's numeric mode (decimal,
	// double or string).
	Numeric mappings.NumericMode
}

// FanoutKey names a foreign key for Input.Fanout.
func FanoutKey(child *mappings.Table, fk mappings.ForeignKey) string {
	return child.Schema + "." + child.Name + "(" + strings.Join(fk.Columns, ",") + ")"
}

// Choice is one decision, for the report next to the mapping.
type Choice struct {
	Table  string
	Action string // collection, embed, bucket, lookup, link, skip
	Reason string
}

type tableRole struct {
	t      *mappings.Table
	q      string // qualified name
	action string
	reason string
	// embed/bucket: the foreign key to the parent, and the parent.
	owner  *mappings.ForeignKey
	parent string
	coll   string // collection name (collection, bucket)
	time   string // bucket order column
}

// Draft returns the mapping file text and the choices made.
func Draft(in Input) (string, []Choice, error) {
	names := make([]string, 0, len(in.Catalog.Tables))
	for q := range in.Catalog.Tables {
		names = append(names, q)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "", nil, fmt.Errorf("schema %q has no tables: give the schema holding your data with --schema", in.Schema)
	}
	a := &advisor{in: in, roles: map[string]*tableRole{}, refBy: map[string][]ref{}}
	for _, q := range names {
		t := in.Catalog.Tables[q]
		a.roles[q] = &tableRole{t: t, q: q}
		for i := range t.ForeignKeys {
			fk := t.ForeignKeys[i]
			a.refBy[fk.RefTable] = append(a.refBy[fk.RefTable], ref{child: t, fk: fk})
		}
	}
	a.names = names
	a.classify()
	return a.write(), a.choices(), nil
}

type ref struct {
	child *mappings.Table
	fk    mappings.ForeignKey
}

type advisor struct {
	in    Input
	names []string
	roles map[string]*tableRole
	refBy map[string][]ref
	used  map[string]bool // collection names
}

func qual(t *mappings.Table) string { return t.Schema + "." + t.Name }

func (a *advisor) activity(t *mappings.Table) mappings.TableActivity { return a.in.Activity[qual(t)] }

func (a *advisor) hot(t *mappings.Table) bool {
	ac := a.activity(t)
	return ac.Updates >= HotMinUpdates && float64(ac.Updates)/float64(max(ac.Rows, 1)) > HotUpdatesPerRow
}

func (a *advisor) changes(t *mappings.Table) string {
	ac := a.activity(t)
	return fmt.Sprintf("%d rows, %d updates and %d inserts since statistics reset", ac.Rows, ac.Updates, ac.Inserts)
}

func (a *advisor) fanout(child *mappings.Table, fk mappings.ForeignKey) Fanout {
	return a.in.Fanout[FanoutKey(child, fk)]
}

func fanText(f Fanout) string {
	return fmt.Sprintf("children per parent avg %.1f, p99 %d, max %d", f.Avg, f.P99, f.Max)
}

// isJoinTable: exactly two foreign keys, the key made of their columns, and
// no other data than a timestamp.
func isJoinTable(t *mappings.Table) bool {
	if len(t.ForeignKeys) != 2 || len(t.PrimaryKey) == 0 {
		return false
	}
	fkCols := map[string]bool{}
	for _, fk := range t.ForeignKeys {
		if len(fk.Columns) != 1 {
			return false
		}
		fkCols[fk.Columns[0]] = true
	}
	for _, c := range t.PrimaryKey {
		if !fkCols[c] {
			return false
		}
	}
	for _, c := range t.Columns {
		if !fkCols[c.Name] && c.Category != "D" {
			return false
		}
	}
	return true
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

// label is a lookup table's label column: its first text column outside
// the key.
func label(t *mappings.Table) string {
	k := key(t)
	for _, c := range t.Columns {
		if c.Category == "S" && !slices.Contains(k, c.Name) {
			return c.Name
		}
	}
	return ""
}

func (a *advisor) classify() {
	// 1. join tables and lookup tables
	for _, q := range a.names {
		r := a.roles[q]
		t := r.t
		if isJoinTable(t) {
			r.action = "link"
			continue
		}
		if key(t) == nil {
			r.action = "skip"
			r.reason = "no primary key or unique NOT NULL key to make _id from: add one to migrate this table"
			continue
		}
		other := 0
		for _, c := range t.Columns {
			if !slices.Contains(key(t), c.Name) && c.Category != "D" {
				other++
			}
		}
		// Referenced by data tables, and shared: its label is unique, or
		// its rows are referenced by several rows each on average.
		refByData, shared := false, false
		for _, rf := range a.refBy[q] {
			if !isJoinTable(rf.child) && len(rf.fk.Columns) == 1 {
				refByData = true
				if a.fanout(rf.child, rf.fk).Avg >= 2 {
					shared = true
				}
			}
		}
		if l := label(t); l != "" && slices.ContainsFunc(t.Unique, func(u []string) bool { return len(u) == 1 && u[0] == l }) {
			shared = true
		}
		est := max(a.activity(t).Rows, t.Estimate)
		// A lookup table: a surrogate integer key and one label (plus
		// timestamps), small, shared by the data tables referencing it,
		// no references of its own. A natural key (text) marks an
		// entity instead.
		surrogate := len(key(t)) == 1 && t.Column(key(t)[0]) != nil && t.Column(key(t)[0]).Category == "N"
		if surrogate && len(t.ForeignKeys) == 0 && refByData && shared && est <= LookupMaxRows && other <= 1 && label(t) != "" && !a.hot(t) {
			r.action = "lookup"
			r.reason = fmt.Sprintf("lookup table (%d rows, a key and a label, rarely changes: %s): its label %q is copied as a value into the referencing documents", est, a.changes(t), label(t))
		}
	}
	// 2. embedded and bucketed children
	for _, q := range a.names {
		r := a.roles[q]
		if r.action != "" {
			continue
		}
		t := r.t
		owner, why := a.owner(t)
		if owner == nil {
			r.action = "collection"
			r.reason = why
			continue
		}
		f := a.fanout(t, *owner)
		p := a.roles[owner.RefTable]
		switch {
		case len(a.refBy[q]) > 0:
			r.action = "collection"
			r.reason = fmt.Sprintf("referenced by other tables (%s), so it is kept once, in its own collection; %s of %s", refNames(a.refBy[q]), fanText(f), p.t.Name)
		case f.Max <= EmbedMax && !a.hot(t):
			r.action, r.owner, r.parent = "embed", owner, owner.RefTable
			r.reason = fmt.Sprintf("embedded in %s: bounded one-to-few (%s) and rarely changes (%s)", p.t.Name, fanText(f), a.changes(t))
		case f.Max > UnboundedMin && timeColumn(t) != "" && !a.hot(t):
			r.action, r.owner, r.parent, r.time = "bucket", owner, owner.RefTable, timeColumn(t)
			r.reason = fmt.Sprintf("unbounded children of %s (%s; %s): stored in bucket documents of %d read in pages, ordered by %s; %s embeds the %d most recent", p.t.Name, fanText(f), a.changes(t), BucketSize, r.time, p.t.Name, RecentItems)
		case a.hot(t):
			r.action = "collection"
			r.reason = fmt.Sprintf("changes often (%s): referenced, not embedded; %s of %s", a.changes(t), fanText(f), p.t.Name)
		default:
			r.action = "collection"
			r.reason = fmt.Sprintf("too many children per %s to embed (%s; one-to-few means at most %d): its own collection, referencing the parent", p.t.Name, fanText(f), EmbedMax)
		}
	}
	// A parent that is itself embedded cannot hold children here: they
	// become collections (one level of embedding keeps drafts simple).
	for _, q := range a.names {
		r := a.roles[q]
		if (r.action == "embed" || r.action == "bucket") && a.roles[r.parent].action != "collection" {
			r.action = "collection"
			r.reason = fmt.Sprintf("its parent %s is not a collection of its own (%s), so it is kept as a collection", a.roles[r.parent].t.Name, a.roles[r.parent].action)
		}
	}
	// collection names
	a.used = map[string]bool{}
	for _, q := range a.names {
		r := a.roles[q]
		if r.action == "collection" || r.action == "bucket" {
			n := camel(plural(r.t.Name))
			if r.t.Schema != "public" && r.t.Schema != a.in.Schema {
				n = camel(r.t.Schema + "_" + plural(r.t.Name))
			}
			for a.used[n] {
				n += "_"
			}
			a.used[n] = true
			r.coll = n
		}
	}
	// links: which sides stay bounded
	for _, q := range a.names {
		r := a.roles[q]
		if r.action != "link" {
			continue
		}
		r.reason = a.linkReason(r)
	}
}

func refNames(refs []ref) string {
	var n []string
	for _, r := range refs {
		if !slices.Contains(n, r.child.Name) {
			n = append(n, r.child.Name)
		}
	}
	return strings.Join(n, ", ")
}

// owner is the parent a child table belongs to: its one foreign key to a
// non-lookup table, or the one whose columns lead its primary key.
func (a *advisor) owner(t *mappings.Table) (*mappings.ForeignKey, string) {
	var cands []*mappings.ForeignKey
	for i := range t.ForeignKeys {
		fk := &t.ForeignKeys[i]
		p := a.roles[fk.RefTable]
		if p == nil || p.action == "lookup" || p.t == t {
			continue
		}
		cands = append(cands, fk)
	}
	switch len(cands) {
	case 0:
		return nil, "an entity of its own (no parent table): its own collection"
	case 1:
		return cands[0], ""
	}
	for _, fk := range cands {
		if len(t.PrimaryKey) > len(fk.Columns) && slices.Equal(t.PrimaryKey[:len(fk.Columns)], fk.Columns) {
			return fk, ""
		}
	}
	var ps []string
	for _, fk := range cands {
		ps = append(ps, a.roles[fk.RefTable].t.Name)
	}
	return nil, fmt.Sprintf("refers to several tables (%s) and belongs to none of them: its own collection, holding references", strings.Join(ps, ", "))
}

// timeColumn is a NOT NULL date/time column to page by, preferring a
// creation time.
func timeColumn(t *mappings.Table) string {
	var best string
	for _, c := range t.Columns {
		if c.Category != "D" || !c.NotNull || strings.Contains(c.Type, "interval") {
			continue
		}
		if strings.Contains(c.Name, "creat") || strings.HasSuffix(c.Name, "_at") && !strings.Contains(c.Name, "updat") || strings.Contains(c.Name, "date") {
			return c.Name
		}
		if best == "" && !strings.Contains(c.Name, "updat") && !strings.Contains(c.Name, "last") {
			best = c.Name
		}
	}
	return best
}

// linkSides decides which sides of a join table get an id array: those
// where the number of ids per document stays bounded.
func (a *advisor) linkSides(r *tableRole) (sides []int, fans [2]Fanout) {
	t := r.t
	for i, fk := range t.ForeignKeys {
		// ids on side i = rows of the join table per row of side i.
		fans[i] = a.fanout(t, fk)
	}
	for i, fk := range t.ForeignKeys {
		if p := a.roles[fk.RefTable]; p == nil || p.action != "collection" {
			continue
		}
		if fans[i].Max <= UnboundedMin {
			sides = append(sides, i)
		}
	}
	if len(sides) == 0 {
		// both unbounded: the smaller side, if it is a collection
		best := -1
		for i, fk := range t.ForeignKeys {
			if p := a.roles[fk.RefTable]; p != nil && p.action == "collection" && (best < 0 || fans[i].Max < fans[best].Max) {
				best = i
			}
		}
		if best >= 0 {
			sides = []int{best}
		}
	}
	return sides, fans
}

func (a *advisor) linkReason(r *tableRole) string {
	sides, fans := a.linkSides(r)
	if len(sides) == 0 {
		return "join table whose sides are not collections: not migrated"
	}
	var parts []string
	for i, fk := range r.t.ForeignKeys {
		p := a.roles[fk.RefTable].t.Name
		s := fmt.Sprintf("each %s has up to %d (avg %.1f, p99 %d)", p, fans[i].Max, fans[i].Avg, fans[i].P99)
		if slices.Contains(sides, i) {
			s += " -> id array"
		} else {
			s += " -> no id array (unbounded or not a collection)"
		}
		parts = append(parts, s)
	}
	return "join table (glue, not data): replaced by id arrays, not copied; " + strings.Join(parts, "; ")
}

func (a *advisor) choices() []Choice {
	var out []Choice
	for _, q := range a.names {
		r := a.roles[q]
		out = append(out, Choice{Table: q, Action: r.action, Reason: r.reason})
	}
	return out
}

var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// y quotes a YAML scalar when needed.
func y(s string) string {
	if plainName.MatchString(s) && !slices.Contains([]string{"true", "false", "null", "yes", "no", "on", "off", "y", "n"}, strings.ToLower(s)) {
		return s
	}
	return fmt.Sprintf("%q", s)
}

// tableRef is the table as the mapping names it.
func (a *advisor) tableRef(t *mappings.Table) string {
	if t.Schema == "public" {
		return y(t.Name)
	}
	return y(t.Schema + "." + t.Name)
}

func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func plural(s string) string {
	switch {
	case strings.HasSuffix(s, "person"):
		return strings.TrimSuffix(s, "person") + "people"
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}

// lookupName is the field (and lookup) name for a foreign key column to a
// lookup table: the column without its _id suffix.
func lookupName(col string) string {
	n := strings.TrimSuffix(strings.TrimSuffix(col, "_id"), "_key")
	if n == col || n == "" {
		n = col + "_ref"
	}
	return n
}
