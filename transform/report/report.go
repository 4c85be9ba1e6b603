// Package report computes what `denorm plan` shows: per collection the
// document count, the encoded size distribution, the largest arrays, sample
// documents, documents over the target's size limit, dangling references,
// the inferred shape, and modeling warnings; and renders it as text, JSON,
// Markdown or a self-contained HTML page.
//
// The package is pure: it sees the documents the pipeline built, their
// encoded sizes and the statistics the caller read, never a database or a
// target; how a document is encoded (BSON for its size, Extended JSON for
// the samples) is the caller's to say (load's). Memory is bounded whatever
// the number of documents: sizes and array lengths are kept in fixed-size
// reservoirs (exact up to ReservoirSize documents, estimates beyond), the
// shape in at most MaxPaths paths, samples and listings in fixed caps.
package report

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// Limits on what a report keeps in memory.
const (
	// ReservoirSize is the number of sizes (and array lengths per path)
	// kept for percentiles: exact up to this many, a uniform sample beyond.
	ReservoirSize = 100_000
	// MaxPaths caps the shape's field paths (pivot keys from data can
	// make many).
	MaxPaths = 500
	// MaxListed caps the documents listed as too large, and the dangling
	// references listed per field.
	MaxListed = 20
	// SampleChars truncates the sample documents' JSON text.
	SampleChars = 4000
	// sampleArray is the number of array items a sample keeps.
	sampleArray = 5
)

// SchemaVersion is the version of the JSON report format (report.schema.json).
const SchemaVersion = 1

// Report is the whole plan.
type Report struct {
	SchemaVersion int    `json:"schemaVersion"`
	Mapping       string `json:"mapping"`
	// MaxDocSize is the target's document size limit in bytes.
	MaxDocSize int `json:"maxDocSize"`
	// SamplePercent is the share of root rows read (100: all); below
	// 100, counts are estimates.
	SamplePercent float64       `json:"samplePercent"`
	Estimated     bool          `json:"estimated"`
	Generated     time.Time     `json:"generated"`
	Collections   []*Collection `json:"collections"`
	Warnings      []Warning     `json:"warnings"`
	// Totals sums the collections; Indexes and ShardKeys are what
	// migrate creates and sets (index.go).
	Totals    Totals         `json:"totals"`
	Indexes   []IndexInfo    `json:"indexes"`
	ShardKeys []ShardKeyInfo `json:"shardKeys"`
	// Coverage is, for every table the mapping reads, how many of its
	// rows reach a document and how many none, with why (coverage.go).
	Coverage []mappings.TableCoverage `json:"coverage"`
	// Fanout is, for every table the mapping reads, how many documents one
	// change of a row makes sync rewrite (fanout.go); MaxFanout is the
	// limit above which a table is flagged (0: none).
	Fanout    []mappings.TableFanout `json:"fanout"`
	MaxFanout int64                  `json:"maxFanout"`
	// Model is the mapping's document model (ModelOf), drawn by the HTML
	// report; nil draws none.
	Model *Model `json:"-"`
}

// Collection is the report of one collection entry of the mapping.
type Collection struct {
	Name  string `json:"name"`
	Table string `json:"table"`
	// Kind is "documents" or "buckets".
	Kind string `json:"kind"`
	// OnDelete is what sync does with a document whose root row is gone,
	// when it keeps it (the mapping's onDelete): "ignore", or "tombstone"
	// with Tombstone the date field it sets; empty for delete.
	OnDelete  string `json:"onDelete,omitempty"`
	Tombstone string `json:"tombstone,omitempty"`
	// Tables is the tree of tables the documents are built from.
	Tables *TableNode `json:"tables"`
	// Documents is the number of documents built (scaled up from the
	// sample when Estimated); Rows the root rows read.
	Documents int64 `json:"documents"`
	Rows      int64 `json:"rows"`
	// Seen is the number of documents actually built in this run.
	Seen      int64        `json:"seen"`
	Rejected  int64        `json:"rejected"`
	Size      Distribution `json:"size"`
	Histogram []Bin        `json:"histogram"`
	Arrays    []ArrayStat  `json:"arrays"`
	// Typical is a document of about the median size; Largest the largest.
	Typical  *Sample  `json:"typical,omitempty"`
	Largest  *Sample  `json:"largest,omitempty"`
	TooLarge TooLarge `json:"tooLarge"`
	// Unstorable counts the documents no target can hold as built
	// (transform.CheckKeys: a "$" or "." in a field name from jsonb or a
	// pivot, a repeated field, nesting over 100 levels): migrate rejects
	// their rows. Nil when there are none.
	Unstorable *Unstorable `json:"unstorable,omitempty"`
	References []RefReport `json:"references"`
	Shape      []PathStat  `json:"shape"`
	// ShapeTruncated: more than MaxPaths paths were seen.
	ShapeTruncated bool `json:"shapeTruncated,omitempty"`
	// SubMillisecond lists the fields whose dates have digits below the
	// millisecond, which migrate drops (precision.go); nil when none do.
	SubMillisecond []PrecisionLoss `json:"subMillisecond,omitempty"`
}

// TableNode is a table feeding a collection's documents, with how.
type TableNode struct {
	// Table is the table read, as resolved: schema.table
	// (mappings.Table.QualifiedName).
	Table string `json:"table"`
	// Through is the join table the rows are reached through, if any.
	Through string `json:"through,omitempty"`
	// Reads says which rows of Table are read when it is not simply the
	// table's rows: "own rows only" (a table with inheritance children,
	// read as ONLY table), "all partitions" (a partitioned table).
	Reads string `json:"reads,omitempty"`
	// RowSecurity lists the row-level security policies that filtered
	// the rows read (the run acknowledged them with --row-security);
	// "no policy: no rows" when none lets the role read any.
	RowSecurity []string `json:"rowSecurity,omitempty"`
	// Kind: root, embed, lookup, ids, aggregate.
	Kind string `json:"kind"`
	// Field is where the relation lands in the document ("" for the root).
	Field string `json:"field,omitempty"`
	// Limit is the relation's limit (0: none).
	Limit    int          `json:"limit,omitempty"`
	Object   bool         `json:"object,omitempty"`
	Children []*TableNode `json:"children,omitempty"`
}

// Distribution summarizes encoded BSON sizes in bytes.
type Distribution struct {
	Min int `json:"min"`
	P50 int `json:"p50"`
	P95 int `json:"p95"`
	P99 int `json:"p99"`
	Max int `json:"max"`
	// Mean is the average size.
	Mean float64 `json:"mean"`
}

// Bin is one bar of a size histogram: documents of size in [From, To).
type Bin struct {
	From  int   `json:"from"`
	To    int   `json:"to"`
	Count int64 `json:"count"`
}

// ArrayStat is one array path's lengths ("recentComments", "a[].b").
type ArrayStat struct {
	Path string `json:"path"`
	Max  int    `json:"max"`
	P99  int    `json:"p99"`
	P50  int    `json:"p50"`
	// MaxSource is the source row of the document holding the longest one.
	MaxSource string `json:"maxSource"`
}

// Sample is one document, as relaxed Extended JSON, arrays cut to a few
// items and the text cut to SampleChars.
type Sample struct {
	Source string `json:"source"`
	// ID is the document's _id as relaxed Extended JSON.
	ID        string `json:"id"`
	Size      int    `json:"size"`
	JSON      string `json:"json"`
	Truncated bool   `json:"truncated"`
}

// TooLarge lists documents over the size limit.
type TooLarge struct {
	Count int64      `json:"count"`
	Docs  []DocIssue `json:"docs"`
}

// Unstorable lists documents no target can hold as built.
type Unstorable struct {
	Count int64         `json:"count"`
	Docs  []KeyDocIssue `json:"docs"`
}

// KeyDocIssue names one document and why no target can hold it.
type KeyDocIssue struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// DocIssue names one document and its size.
type DocIssue struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Size   int    `json:"size"`
}

// RefReport is one reference field's dangling values.
type RefReport struct {
	// Path is the field ("stockId", "holdings[].stockId", "books[]").
	Path string `json:"path"`
	// Collection is the referenced collection and Table its root table.
	Collection string `json:"collection"`
	Table      string `json:"table"`
	// Checked counts the reference values checked; Dangling those with no
	// row in Table.
	Checked  int64  `json:"checked"`
	Dangling int64  `json:"dangling"`
	Examples []Dang `json:"examples"`
	// Skipped says why the field could not be checked, if it was not.
	Skipped string `json:"skipped,omitempty"`
}

// Dang is one dangling reference: the value and the document holding it.
type Dang struct {
	Value  string `json:"value"`
	Source string `json:"source"`
}

// PathStat is one field path of the inferred shape.
type PathStat struct {
	Path string `json:"path"`
	// Types maps a BSON type name to how many values had it.
	Types map[string]int64 `json:"types"`
	// Present is the number of documents (or array items, below an array)
	// holding the path, and Of the number that could.
	Present int64 `json:"present"`
	Of      int64 `json:"of"`
}

// Warning is one finding about the mapping or the data.
type Warning struct {
	// Severity: error (the migration will fail or lose data), warning
	// (contradicts the modeling rules), info (a suggestion).
	Severity   string `json:"severity"`
	Rule       string `json:"rule"`
	Collection string `json:"collection"`
	Path       string `json:"path,omitempty"`
	Message    string `json:"message"`
	Suggestion string `json:"suggestion,omitempty"`
}

// reservoir keeps a uniform sample of at most ReservoirSize ints.
type reservoir struct {
	n    int64
	vals []int
	rng  *rand.Rand
}

func newReservoir() *reservoir {
	return &reservoir{rng: rand.New(rand.NewPCG(1, 2))}
}

func (r *reservoir) add(v int) {
	r.n++
	if len(r.vals) < ReservoirSize {
		r.vals = append(r.vals, v)
		return
	}
	if j := r.rng.Int64N(r.n); j < ReservoirSize {
		r.vals[j] = v
	}
}

// percentile of the sorted values (nearest rank).
func percentile(sorted []int, p float64) int {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

type arrayAcc struct {
	lens      *reservoir
	max       int
	maxSource string
}

type pathAcc struct {
	types   map[string]int64
	present int64
	// counts are the counts of the common types, by typeIndex, added to
	// types by Finish (a map update per value was the walk's main cost).
	counts [len(typeNames)]int64
}

// count records one value of type v.
func (a *pathAcc) count(v any) {
	if i := typeIndex(v); i >= 0 {
		a.counts[i]++
		return
	}
	a.types[typeName(v)]++
}

// Collector accumulates one collection entry's report from its documents.
// Add is called from one goroutine, in stream order.
type Collector struct {
	cp         *mappings.CollectionPlan
	maxDocSize int
	c          *Collection
	sizes      *reservoir
	sum        float64
	minSize    int
	maxSize    int
	arrays     map[string]*arrayAcc
	paths      map[string]*pathAcc
	order      []string
	containers map[string]*int64 // path prefix -> times seen (for Of)
	// root and the nodes below it find a document's paths key by key.
	root  *shapeNode
	nodes int
	// candidates for the typical sample: a few documents spread over the run.
	candidates []Sample
	cand       int64
	refs       []*refField
	// losses count the dates that lose digits, by field path; columns
	// name the fields' source columns (precision.go).
	losses  map[string]*PrecisionLoss
	columns map[string]string
	// json renders samples and _id values.
	json Encoder
}

// Encoder appends a document's text to dst: the target's Extended JSON
// (load.AppendExtJSON), which report uses for samples and _id values.
type Encoder func(dst []byte, d transform.Doc) ([]byte, error)

// Sized is a built document with the size of its encoding in bytes (the
// BSON the target stores: load.AppendDocument). Documents that cannot be
// encoded are not handed in but counted as rejected, as migrate rejects
// them.
type Sized struct {
	Doc  *transform.Document
	Size int
}

// NewCollector starts the report of cp's documents; json renders the
// samples.
func NewCollector(cp *mappings.CollectionPlan, maxDocSize int, json Encoder) *Collector {
	kind := "documents"
	if cp.Bucket != nil {
		kind = "buckets"
	}
	c := &Collection{Name: cp.Name, Table: tableName(cp.Root.Table), Kind: kind, Tables: tableTree(cp.Root)}
	if cp.OnDelete == mappings.OnDeleteIgnore || cp.OnDelete == mappings.OnDeleteTombstone {
		c.OnDelete, c.Tombstone = string(cp.OnDelete), cp.Tombstone
	}
	col := &Collector{
		cp: cp, maxDocSize: maxDocSize, c: c, sizes: newReservoir(),
		arrays: map[string]*arrayAcc{}, paths: map[string]*pathAcc{}, containers: map[string]*int64{},
		minSize: -1, json: json,
		losses: map[string]*PrecisionLoss{}, columns: fieldColumns(cp),
	}
	col.refs = refFields(cp)
	return col
}

func tableName(t *mappings.Table) string { return t.QualifiedName() }

// reads says which of t's rows are read (TableNode.Reads).
func reads(t *mappings.Table) string {
	switch {
	case t.Partitioned:
		return "all partitions"
	case len(t.Children) > 0 && t.OwnRowsOnly():
		return fmt.Sprintf("own rows only, not its %s", Plural(int64(len(t.Children)), "inheritance child", "inheritance children"))
	}
	return ""
}

// rowSecurity is TableNode.RowSecurity of t.
func rowSecurity(t *mappings.Table) []string {
	if t.RowSecurity == nil {
		return nil
	}
	if len(t.RowSecurity.Policies) == 0 {
		return []string{"no policy lets the role read: no rows"}
	}
	return t.RowSecurity.Policies
}

var kindNames = map[mappings.NodeKind]string{
	mappings.NodeRoot: "root", mappings.NodeEmbed: "embed", mappings.NodeLookup: "lookup",
	mappings.NodeIds: "ids", mappings.NodeAggregate: "aggregate",
}

// tableTree describes root and its relations for the diagram.
func tableTree(root *mappings.Node) *TableNode {
	made := map[*mappings.Node]*TableNode{}
	mappings.Walk(root, func(n *mappings.Node) bool {
		t := &TableNode{Table: tableName(n.Table), Reads: reads(n.Table), RowSecurity: rowSecurity(n.Table), Kind: kindNames[n.Kind], Object: n.Object}
		if n.Through != nil {
			t.Through = tableName(n.Through.Table)
		}
		if n.Kind == mappings.NodeEmbed || n.Kind == mappings.NodeIds {
			t.Limit = n.Limit
		}
		if p := made[n.Parent]; p != nil {
			t.Field = relationName(n)
			p.Children = append(p.Children, t)
		}
		made[n] = t
		return true
	})
	return made[root]
}

// relationName is the field a relation writes, or the lookup's name.
func relationName(n *mappings.Node) string {
	for _, f := range n.Parent.Fields {
		if f.Embed == n && f.Name != "" {
			return f.Name
		}
	}
	return n.Path[strings.LastIndexByte(n.Path, '.')+1:]
}

// Add records one batch: the root rows read, the documents built with
// their sizes, and the rows and documents rejected.
func (col *Collector) Add(rows int, docs []Sized, rejected int) {
	col.c.Rows += int64(rows)
	col.c.Rejected += int64(rejected)
	for _, d := range docs {
		col.add(d.Doc, d.Size)
	}
}

func (col *Collector) add(d *transform.Document, size int) {
	c := col.c
	c.Seen++
	col.sizes.add(size)
	col.sum += float64(size)
	if col.minSize < 0 || size < col.minSize {
		col.minSize = size
	}
	if size > col.maxSize || c.Largest == nil {
		col.maxSize = size
		c.Largest = col.sample(d, size)
	}
	if col.maxDocSize > 0 && size > col.maxDocSize {
		c.TooLarge.Count++
		if len(c.TooLarge.Docs) < MaxListed {
			c.TooLarge.Docs = append(c.TooLarge.Docs, DocIssue{Source: d.Source, ID: col.idText(d.ID), Size: size})
		}
	}
	if err := transform.CheckKeys(d.Body); err != nil {
		if c.Unstorable == nil {
			c.Unstorable = &Unstorable{Docs: []KeyDocIssue{}}
		}
		c.Unstorable.Count++
		if len(c.Unstorable.Docs) < MaxListed {
			c.Unstorable.Docs = append(c.Unstorable.Docs, KeyDocIssue{Source: d.Source, ID: col.idText(d.ID), Reason: err.Error()})
		}
	}
	// Typical candidates: the first 64 documents, then one in 2^k.
	col.cand++
	if len(col.candidates) < 64 || col.cand&(col.cand-1) == 0 {
		s := col.sample(d, size)
		if len(col.candidates) < 64 {
			col.candidates = append(col.candidates, *s)
		} else {
			col.candidates[int(col.cand)%64] = *s
		}
	}
	if col.root == nil {
		col.root = col.node("")
	}
	col.walk(d.Body, col.root, d.Source)
	for _, r := range col.refs {
		r.collect(d)
	}
}

func (col *Collector) idText(v any) string {
	b, err := col.json(nil, transform.Doc{{Key: "v", Value: v}})
	if err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimPrefix(strings.TrimSuffix(string(b), "}"), `{"v":`)
	return strings.TrimSpace(s)
}

// shapeNode is one field path of the shape with what the walk updates
// for it, reached from the root key by key: a document's walk neither
// builds path names nor looks them up once its paths are known.
type shapeNode struct {
	path      string
	acc       *pathAcc // nil: the shape was truncated before this path
	container *int64
	array     *arrayAcc
	children  map[string]*shapeNode
	items     *shapeNode // path + "[]"
	key       string     // the field name it is found under
	// last is the child met at each field position the last time a
	// document was walked here: a collection's documents mostly repeat
	// their keys in order, so comparing the name (the same string, most
	// often) finds the child without a map lookup.
	last []*shapeNode
}

// maxLast caps the field positions a node remembers.
const maxLast = 64

// maxNodes caps the nodes kept: past it (pivot keys from data can make
// many) nodes are made afresh for each use.
const maxNodes = 4 * MaxPaths

// node makes the node of path p.
func (col *Collector) node(p string) *shapeNode {
	c := col.containers[p]
	if c == nil {
		c = new(int64)
		col.containers[p] = c
	}
	return &shapeNode{path: p, container: c}
}

// child is the node of n's field key.
func (col *Collector) child(n *shapeNode, key string) *shapeNode {
	if c := n.children[key]; c != nil {
		return c
	}
	p := key
	if n.path != "" {
		p = n.path + "." + key
	}
	c := col.node(p)
	c.key = key
	c.acc = col.path(p)
	if col.nodes < maxNodes {
		if n.children == nil {
			n.children = map[string]*shapeNode{}
		}
		n.children[key] = c
		col.nodes++
	}
	return c
}

// itemsOf is the node of n's array items.
func (col *Collector) itemsOf(n *shapeNode) *shapeNode {
	if n.items != nil {
		return n.items
	}
	c := col.node(n.path + "[]")
	c.acc = col.path(c.path)
	n.items = c
	return c
}

// walk records the shape and array lengths of d, found at n.
func (col *Collector) walk(d transform.Doc, n *shapeNode, source string) {
	*n.container++
	col.fields(d, n, source)
}

// fields records d's fields below n.
func (col *Collector) fields(d transform.Doc, n *shapeNode, source string) {
	for i := range d {
		f := &d[i]
		var c *shapeNode
		switch {
		case i < len(n.last) && n.last[i].key == f.Key:
			c = n.last[i]
		case i < len(n.last):
			c = col.child(n, f.Key)
			n.last[i] = c
		default:
			c = col.child(n, f.Key)
			if i == len(n.last) && i < maxLast {
				n.last = append(n.last, c)
			}
		}
		col.value(c, f.Value, source)
	}
}

// path returns the accumulator of field path p, made on first sight; nil
// once MaxPaths paths are known (the shape is then marked truncated).
func (col *Collector) path(p string) *pathAcc {
	acc := col.paths[p]
	if acc == nil {
		if len(col.paths) >= MaxPaths {
			col.c.ShapeTruncated = true
			return nil
		}
		acc = &pathAcc{types: map[string]int64{}}
		col.paths[p] = acc
		col.order = append(col.order, p)
	}
	return acc
}

func (col *Collector) value(n *shapeNode, v any, source string) {
	acc := n.acc
	if acc == nil {
		col.loseAll(n.path, v, source) // the shape stops here, the count does not
		return
	}
	if t, ok := v.(time.Time); ok {
		col.lose(n.path, t, source)
	}
	acc.present++
	acc.count(v)
	switch x := v.(type) {
	case transform.Doc:
		col.walk(x, n, source)
	case transform.Array:
		a := n.array
		if a == nil {
			if a = col.arrays[n.path]; a == nil {
				a = &arrayAcc{lens: newReservoir(), max: -1}
				col.arrays[n.path] = a
			}
			n.array = a
		}
		a.lens.add(len(x))
		if len(x) > a.max {
			a.max, a.maxSource = len(x), source
		}
		item := col.itemsOf(n)
		for _, e := range x {
			*item.container++
			ia := item.acc
			if ia == nil {
				col.loseAll(item.path, e, source)
				continue
			}
			if t, ok := e.(time.Time); ok {
				col.lose(item.path, t, source)
			}
			ia.present++
			ia.count(e)
			if sub, ok := e.(transform.Doc); ok {
				col.fields(sub, item, source) // items are counted above
			}
		}
	}
}

// typeNames are the names typeName gives, by typeIndex.
var typeNames = [...]string{"null", "int", "long", "double", "string", "bool", "date", "decimal", "uuid", "binData", "object", "array"}

// typeIndex is the index in typeNames of v's type name, -1 for others.
func typeIndex(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case int32:
		return 1
	case int64:
		return 2
	case float64:
		return 3
	case string:
		return 4
	case bool:
		return 5
	case time.Time:
		return 6
	case transform.Decimal:
		return 7
	case transform.UUID:
		return 8
	case transform.Binary:
		return 9
	case transform.Doc:
		return 10
	case transform.Array:
		return 11
	}
	return -1
}

func typeName(v any) string {
	if i := typeIndex(v); i >= 0 {
		return typeNames[i]
	}
	return fmt.Sprintf("%T", v)
}

// parentPath is the container of path p: "a.b" -> "a", "a[]" -> "a[]"'s
// items are counted under "a[]" itself.
func parentPath(p string) string {
	if strings.HasSuffix(p, "[]") {
		return p // items: Of counts the array's items
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// Finish computes the summary. scale multiplies counts (1/sample share).
func (col *Collector) Finish(scale float64) *Collection {
	c := col.c
	c.Documents = int64(float64(c.Seen)*scale + 0.5)
	c.SubMillisecond = col.precision()
	if c.Seen > 0 {
		s := slices.Clone(col.sizes.vals)
		sort.Ints(s)
		c.Size = Distribution{Min: col.minSize, P50: percentile(s, 50), P95: percentile(s, 95), P99: percentile(s, 99), Max: col.maxSize, Mean: col.sum / float64(c.Seen)}
		c.Histogram = histogram(s, col.minSize, col.maxSize, float64(c.Seen)/float64(len(s)))
		// the typical sample: the candidate closest to the median
		best := -1
		for i, cand := range col.candidates {
			if best < 0 || abs(cand.Size-c.Size.P50) < abs(col.candidates[best].Size-c.Size.P50) {
				best = i
			}
		}
		if best >= 0 {
			t := col.candidates[best]
			c.Typical = &t
		}
	}
	for p, a := range col.arrays {
		s := slices.Clone(a.lens.vals)
		sort.Ints(s)
		c.Arrays = append(c.Arrays, ArrayStat{Path: p, Max: a.max, P99: percentile(s, 99), P50: percentile(s, 50), MaxSource: a.maxSource})
	}
	sort.Slice(c.Arrays, func(i, j int) bool {
		if c.Arrays[i].Max != c.Arrays[j].Max {
			return c.Arrays[i].Max > c.Arrays[j].Max
		}
		return c.Arrays[i].Path < c.Arrays[j].Path
	})
	for _, p := range col.order {
		a := col.paths[p]
		for i, n := range a.counts {
			if n > 0 {
				a.types[typeNames[i]] += n
			}
			a.counts[i] = 0
		}
		var of int64
		if n := col.containers[parentPath(p)]; n != nil {
			of = *n
		}
		c.Shape = append(c.Shape, PathStat{Path: p, Types: a.types, Present: a.present, Of: of})
	}
	for _, r := range col.refs {
		c.References = append(c.References, r.rep)
	}
	if c.Arrays == nil {
		c.Arrays = []ArrayStat{}
	}
	if c.Histogram == nil {
		c.Histogram = []Bin{}
	}
	if c.Shape == nil {
		c.Shape = []PathStat{}
	}
	if c.References == nil {
		c.References = []RefReport{}
	}
	if c.TooLarge.Docs == nil {
		c.TooLarge.Docs = []DocIssue{}
	}
	return c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// histogram puts the sorted sizes in up to 20 bins of equal width.
func histogram(sorted []int, lo, hi int, scale float64) []Bin {
	if len(sorted) == 0 {
		return []Bin{}
	}
	const n = 20
	width := (hi - lo + n) / n
	if width < 1 {
		width = 1
	}
	var bins []Bin
	for from := lo; from <= hi; from += width {
		bins = append(bins, Bin{From: from, To: from + width})
	}
	counts := make([]float64, len(bins))
	for _, v := range sorted {
		i := min((v-lo)/width, len(bins)-1)
		counts[i]++
	}
	for i := range bins {
		bins[i].Count = int64(counts[i]*scale + 0.5)
	}
	return bins
}
