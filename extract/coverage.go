package extract

// Coverage: for every table a mapping reads, how many of its rows reach at
// least one document and how many reach none, with a few of the latter and
// why. It is computed in PostgreSQL by one statement built from the
// resolved plan, set-wise (semi- and anti-joins, window functions for the
// limits), never a query per row nor a table held here, and independently
// of the document builder: join keys match by PostgreSQL's own =, not by
// the keys the builder computes (Column.Canon).
//
// The statement has, for every node of the plan (in walk order), a CTE
// n<k> holding the rows of the node's table that reach a document through
// it: their identity (#i: primary key, else tableoid and ctid, else the
// row's text for a view), for a relation reached through a join table the
// join table row's identity too (#j), and the columns the node's children
// join on (#c). A root's rows are those its filter keeps (a bucket's: with
// a parent key, and not held back by skipLast); a relation's are those its
// filter keeps whose join key equals (=) that of a row of its parent's
// CTE, and with a limit, the first rows per parent row in the relation's
// order (row_number over the join of the parent's rows with the
// relation's, partitioned by the parent row). Then, for every table, a
// CTE u<t> holds its rows found in no node's CTE (an anti-join per node
// reading it), r<t> the same rows with their reason, and the final SELECT
// counts them by reason, with the first few of each reason in key order
// (a top-N scan per reason), and counts all the table's rows.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/mappings"
)

// sampleChars truncates each value of a sample row.
const sampleChars = 60

// Coverage counts, in q's snapshot, the rows of every table plan reads
// that reach at least one document of plan's collections and those that
// reach none, with up to mappings.CoverageSamples sample keys per reason.
// The result has one entry per table, in plan.Tables() order.
func Coverage(ctx context.Context, q Querier, plan *mappings.Plan) ([]mappings.TableCoverage, error) {
	b, err := newCoverage(ctx, q, plan)
	if err != nil {
		return nil, err
	}
	sql := b.statement()
	// No JIT for this statement: compiling its many CTEs takes longer
	// (about 0.2 s) than running it on most databases. The setting is
	// the transaction's, so the previous one is put back after.
	jit, err := queryText(ctx, q, "SELECT pg_catalog.current_setting('jit') || pg_catalog.left(pg_catalog.set_config('jit', 'off', true), 0)")
	if err != nil {
		return nil, fmt.Errorf("count the rows that reach no document: %w", err)
	}
	out, err := b.run(ctx, q, sql)
	if err != nil {
		return nil, err
	}
	if _, err := queryText(ctx, q, "SELECT pg_catalog.set_config('jit', $1, true)", jit); err != nil {
		return nil, fmt.Errorf("count the rows that reach no document: %w", err)
	}
	return out, nil
}

// queryText runs a query of one text value.
func queryText(ctx context.Context, q Querier, sql string, args ...any) (string, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return "", err
	}
	return pgx.CollectExactlyOneRow(rows, pgx.RowTo[string])
}

// run runs the coverage statement sql and reads its rows.
func (b *coverage) run(ctx context.Context, q Querier, sql string) ([]mappings.TableCoverage, error) {
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("count the rows that reach no document: %w", err)
	}
	defer rows.Close()
	out := make([]mappings.TableCoverage, len(b.tables))
	for i, ct := range b.tables {
		out[i] = mappings.TableCoverage{Table: ct.t.QualifiedName(), ReadBy: ct.readBy()}
	}
	for rows.Next() {
		var (
			ti      int32
			reason  string
			child   *string
			n       int64
			samples []string
		)
		if err := rows.Scan(&ti, &reason, &child, &n, &samples); err != nil {
			return nil, fmt.Errorf("count the rows that reach no document: %w", err)
		}
		tc := &out[ti]
		if reason == "total" {
			tc.Rows = n
			continue
		}
		ct := b.tables[ti]
		u := mappings.Uncovered{Reason: reason, Rows: n, Child: deref(child), Samples: make([]string, 0, len(samples))}
		u.Node, u.Message = ct.explain(reason, u.Child)
		for _, s := range samples {
			var vals []*string
			if err := json.Unmarshal([]byte(s), &vals); err != nil {
				return nil, fmt.Errorf("count the rows that reach no document: sample row %s: %w", s, err)
			}
			u.Samples = append(u.Samples, ct.sampleText(vals))
		}
		tc.Reasons = append(tc.Reasons, u)
		tc.Unreached += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count the rows that reach no document: %w", err)
	}
	for i := range out {
		out[i].Reached = out[i].Rows - out[i].Unreached
		slices.SortStableFunc(out[i].Reasons, func(a, b mappings.Uncovered) int {
			switch {
			case a.Rows > b.Rows:
				return -1
			case a.Rows < b.Rows:
				return 1
			}
			return strings.Compare(a.Reason+a.Child, b.Reason+b.Child)
		})
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// CoverageSQL is the statement Coverage runs for plan (for tests and
// debug output).
func CoverageSQL(ctx context.Context, q Querier, plan *mappings.Plan) (string, error) {
	b, err := newCoverage(ctx, q, plan)
	if err != nil {
		return "", err
	}
	return b.statement(), nil
}

// covTable is a table the plan reads, with what the catalog says of it
// and the nodes reading it.
type covTable struct {
	t    *mappings.Table
	kind string // pg_class.relkind
	// only: the table has inheritance children, whose rows documents do
	// not hold (readsOnly).
	only bool
	uses []covUse
}

// covUse is one node reading a table: as its own table, or as its join
// table (through).
type covUse struct {
	n    *mappings.Node
	k    int
	join bool
	// bucket is set when n is a bucket collection's root.
	bucket *mappings.BucketPlan
}

type coverage struct {
	tables []*covTable
	byName map[string]*covTable
	nodes  []*mappings.Node
	num    map[*mappings.Node]int
	bucket map[*mappings.Node]*mappings.BucketPlan
	// need are, per node, the columns of its table its children join on
	// (#c0, #c1, ... in its CTE).
	need map[*mappings.Node][]string
}

func newCoverage(ctx context.Context, q Querier, plan *mappings.Plan) (*coverage, error) {
	b := &coverage{byName: map[string]*covTable{}, num: map[*mappings.Node]int{},
		bucket: map[*mappings.Node]*mappings.BucketPlan{}, need: map[*mappings.Node][]string{}}
	for _, t := range plan.Tables() {
		ct := &covTable{t: t}
		b.tables = append(b.tables, ct)
		b.byName[t.QualifiedName()] = ct
	}
	for _, cp := range plan.Collections {
		if cp.Bucket != nil {
			b.bucket[cp.Root] = cp.Bucket
		}
		mappings.Walk(cp.Root, func(n *mappings.Node) bool {
			k := len(b.nodes)
			b.nodes = append(b.nodes, n)
			b.num[n] = k
			ct := b.byName[n.Table.QualifiedName()]
			ct.uses = append(ct.uses, covUse{n: n, k: k, bucket: b.bucket[n]})
			if n.Through != nil {
				jt := b.byName[n.Through.Table.QualifiedName()]
				jt.uses = append(jt.uses, covUse{n: n, k: k, join: true})
			}
			if n.Parent != nil {
				for _, pc := range n.ParentCols {
					name := n.Parent.Columns[pc].Name
					if !slices.Contains(b.need[n.Parent], name) {
						b.need[n.Parent] = append(b.need[n.Parent], name)
					}
				}
			}
			return true
		})
	}
	if err := b.readCatalog(ctx, q); err != nil {
		return nil, err
	}
	return b, nil
}

// readCatalog reads each table's kind and whether it has inheritance
// children.
func (b *coverage) readCatalog(ctx context.Context, q Querier) error {
	schemas := make([]string, len(b.tables))
	names := make([]string, len(b.tables))
	for i, ct := range b.tables {
		schemas[i], names[i] = ct.t.Schema, ct.t.Name
	}
	rows, err := q.Query(ctx, `
SELECT want.ord::int4, c.relkind::text, EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhparent = c.oid)
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS want(nsp, rel, ord)
JOIN pg_catalog.pg_namespace n ON n.nspname = want.nsp
JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = want.rel`, schemas, names)
	if err != nil {
		return fmt.Errorf("read the tables' kinds: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			ord       int32
			kind      string
			inherited bool
		)
		if err := rows.Scan(&ord, &kind, &inherited); err != nil {
			return fmt.Errorf("read the tables' kinds: %w", err)
		}
		ct := b.tables[ord-1]
		ct.kind, ct.only = kind, readsOnly(kind, inherited)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the tables' kinds: %w", err)
	}
	for _, ct := range b.tables {
		if ct.kind == "" {
			return fmt.Errorf("table %s does not exist (any more)", ct.t.QualifiedName())
		}
	}
	return nil
}

// readsOnly says whether documents hold only the rows stored in the table
// itself, not those of its inheritance children: the rule for a plain
// table (or a foreign table) with children is that denorm reads ONLY the
// named table; a partitioned table is read whole, as one table.
func readsOnly(kind string, inherited bool) bool {
	return inherited && (kind == "r" || kind == "f")
}

// from is what documents read of the table: FROM ONLY the table when
// readsOnly.
func (ct *covTable) from() string {
	if ct.only {
		return "ONLY " + relName(ct.t)
	}
	return relName(ct.t)
}

// hasSystemColumns: the relation has tableoid and ctid (not a view or a
// foreign table).
func (ct *covTable) hasCtid() bool {
	return ct.kind == "r" || ct.kind == "p" || ct.kind == "m"
}

// identity are the expressions that tell one row of the table from every
// other (alias a): its primary key (with its tableoid when it has
// inheritance children, whose keys may repeat the parent's), else its
// tableoid and ctid, else (a view, a foreign table) the row's text, for
// which identical rows are one.
func (ct *covTable) identity(a string) []string {
	switch {
	case len(ct.t.PrimaryKey) > 0:
		var out []string
		if ct.only {
			out = append(out, a+".tableoid")
		}
		for _, k := range ct.t.PrimaryKey {
			out = append(out, qualRef(a, k))
		}
		return out
	case ct.hasCtid():
		return []string{a + ".tableoid", a + ".ctid"}
	}
	return []string{a + "::pg_catalog.text"}
}

// sampleColumns are the columns a sample row is named by: the primary
// key, else every column.
func (ct *covTable) sampleColumns() []string {
	if len(ct.t.PrimaryKey) > 0 {
		return ct.t.PrimaryKey
	}
	out := make([]string, len(ct.t.Columns))
	for i, c := range ct.t.Columns {
		out[i] = c.Name
	}
	return out
}

// sampleText shows a sample row: "(code)=(ATA)", values cut at
// sampleChars.
func (ct *covTable) sampleText(vals []*string) string {
	cols := ct.sampleColumns()
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch {
		case v == nil:
			parts[i] = "NULL"
		case len([]rune(*v)) > sampleChars:
			parts[i] = string([]rune(*v)[:sampleChars]) + "..."
		default:
			parts[i] = *v
		}
	}
	return "(" + strings.Join(cols, ", ") + ")=(" + strings.Join(parts, ", ") + ")"
}

func (ct *covTable) readBy() []string {
	out := make([]string, 0, len(ct.uses))
	for _, u := range ct.uses {
		if u.join {
			out = append(out, u.n.Path+" (join table)")
		} else {
			out = append(out, u.n.Path)
		}
	}
	return out
}

// names are SQL column names with a prefix: #i0, #i1, ...
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = pgx.Identifier{prefix + strconv.Itoa(i)}.Sanitize()
	}
	return out
}

func qualified(a string, cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = a + "." + c
	}
	return out
}

// aliased is "expr AS name, ..." pair by pair.
func aliased(exprs, as []string) []string {
	out := make([]string, len(exprs))
	for i := range exprs {
		out[i] = exprs[i] + " AS " + as[i]
	}
	return out
}

// equal is "a1 = b1 AND a2 = b2 ...".
func equal(a, b []string) string {
	out := make([]string, len(a))
	for i := range a {
		out[i] = a[i] + " = " + b[i]
	}
	return strings.Join(out, " AND ")
}

// joinCols are the names of n's join columns on its own side: columns of
// its table, or of its join table (through), pair by pair with
// ParentCols.
func joinCols(n *mappings.Node) []string {
	out := make([]string, len(n.JoinCols))
	for i, c := range n.JoinCols {
		col, _ := keyColumn(n, c)
		out[i] = col.Name
	}
	return out
}

// parentCols are the names of the parent's columns n joins, pair by pair
// with joinCols.
func parentCols(n *mappings.Node) []string {
	out := make([]string, len(n.ParentCols))
	for i, c := range n.ParentCols {
		out[i] = n.Parent.Columns[c].Name
	}
	return out
}

// needRefs are the #c names in the parent's CTE of the columns n joins
// on, pair by pair with joinCols.
func (b *coverage) needRefs(n *mappings.Node, a string) []string {
	out := make([]string, len(n.ParentCols))
	for i, name := range parentCols(n) {
		out[i] = a + "." + pgx.Identifier{"#c" + strconv.Itoa(slices.Index(b.need[n.Parent], name))}.Sanitize()
	}
	return out
}

func (b *coverage) table(t *mappings.Table) *covTable { return b.byName[t.QualifiedName()] }

func ident(c string) string { return pgx.Identifier{c}.Sanitize() }

// inner is the relation of n's rows its filter keeps (for a relation
// reached through a join table, its pairs of join table row and row),
// with #i (identity), #j (the join table row's identity), #c (columns
// children join on), #k (join key on n's side; a bucket's by columns),
// #o (order) and #t (tie break) columns.
func (b *coverage) inner(n *mappings.Node) string {
	ct := b.table(n.Table)
	var sel []string
	ids := ct.identity("t")
	sel = append(sel, aliased(ids, names("#i", len(ids)))...)
	from := ct.from() + " AS t"
	kq := "t"
	if n.Through != nil {
		jt := b.table(n.Through.Table)
		jids := jt.identity("j")
		sel = append(sel, aliased(jids, names("#j", len(jids)))...)
		on := make([]string, len(n.Through.On))
		for i, p := range n.Through.On {
			on[i] = qualRef("t", p[0]) + " = " + qualRef("j", p[1])
		}
		from = jt.from() + " AS j JOIN " + from + " ON " + strings.Join(on, " AND ")
		kq = "j"
	}
	need := b.need[n]
	sel = append(sel, aliased(qualified("t", identAll(need)), names("#c", len(need)))...)
	var keys []string
	if bp := b.bucket[n]; bp != nil {
		for _, c := range bp.By {
			keys = append(keys, qualRef("t", n.Columns[c].Name))
		}
	} else if n.Parent != nil {
		keys = qualified(kq, identAll(joinCols(n)))
	}
	sel = append(sel, aliased(keys, names("#k", len(keys)))...)
	order, tie := b.order(n)
	sel = append(sel, aliased(order, names("#o", len(order)))...)
	sel = append(sel, aliased(tie, names("#t", len(tie)))...)
	var where []string
	if n.Filter != "" {
		where = append(where, "("+n.Filter+")")
	}
	for _, v := range idArrayValues(n) {
		// An id array leaves out a row whose id is NULL.
		where = append(where, qualRef("t", v)+" IS NOT NULL")
	}
	w := ""
	if len(where) > 0 {
		w = " WHERE " + strings.Join(where, " AND ")
	}
	return "(SELECT " + strings.Join(sel, ", ") + " FROM " + from + w + ")"
}

// idArrayValues are the columns of an id array node's table its items are
// made of (a row with one of them NULL is left out of the array).
func idArrayValues(n *mappings.Node) []string {
	if n.Kind != mappings.NodeIds {
		return nil
	}
	if len(n.Values) > 0 {
		out := make([]string, len(n.Values))
		for i, c := range n.Values {
			out[i] = n.Columns[c].Name
		}
		return out
	}
	return []string{n.Columns[n.Value].Name}
}

// order are n's order columns (t.col) and tie break, when its rows are
// ranked: a relation with a limit, a bucket root with skipLast.
func (b *coverage) order(n *mappings.Node) (order, tie []string) {
	if bp := b.bucket[n]; bp != nil {
		if bp.SkipLast == 0 {
			return nil, nil
		}
		// The stream order after the parent key: the bucket's orderBy,
		// then its unique key, as the pages are cut.
		for _, o := range bp.StreamOrder[len(bp.By):] {
			order = append(order, qualRef("t", n.Columns[o.Col].Name))
		}
		return order, nil
	}
	if n.Parent == nil || n.Limit == 0 {
		return nil, nil
	}
	for _, o := range n.Order {
		order = append(order, qualRef("t", n.Columns[o.Col].Name))
	}
	return order, tieBreak(n.Table, "t")
}

// orderBy is the ORDER BY list of n's ranked rows, over alias x of inner.
func (b *coverage) orderBy(n *mappings.Node, x string) string {
	var out []string
	if bp := b.bucket[n]; bp != nil {
		for i, o := range bp.StreamOrder[len(bp.By):] {
			out = append(out, orderExpr(x+"."+ident("#o"+strconv.Itoa(i)), o.Desc))
		}
		return strings.Join(out, ", ")
	}
	for i, o := range n.Order {
		out = append(out, orderExpr(x+"."+ident("#o"+strconv.Itoa(i)), o.Desc))
	}
	_, tie := b.order(n)
	out = append(out, qualified(x, names("#t", len(tie)))...)
	return strings.Join(out, ", ")
}

func identAll(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = ident(c)
	}
	return out
}

// outCols are the columns of n's CTE: #i, #j (through), #c.
func (b *coverage) outCols(n *mappings.Node) []string {
	out := names("#i", len(b.table(n.Table).identity("t")))
	if n.Through != nil {
		out = append(out, names("#j", len(b.table(n.Through.Table).identity("j")))...)
	}
	return append(out, names("#c", len(b.need[n]))...)
}

// nodeCTE is "n<k> AS (...)": the rows reaching a document through n.
func (b *coverage) nodeCTE(n *mappings.Node) string {
	k := b.num[n]
	cols := b.outCols(n)
	var q string
	switch bp := b.bucket[n]; {
	case bp != nil:
		keys := names("#k", len(bp.By))
		notNull := make([]string, len(keys))
		for i, c := range keys {
			notNull[i] = "x." + c + " IS NOT NULL"
		}
		if bp.SkipLast == 0 {
			q = fmt.Sprintf("SELECT %s FROM %s AS x WHERE %s", strings.Join(qualified("x", cols), ", "), b.inner(n), strings.Join(notNull, " AND "))
			break
		}
		// Held back: the last SkipLast rows of each parent in stream order.
		part := strings.Join(qualified("x", keys), ", ")
		q = fmt.Sprintf("SELECT %s FROM (SELECT x.*, count(*) OVER (PARTITION BY %s) - row_number() OVER (PARTITION BY %s ORDER BY %s) AS \"#after\" FROM %s AS x WHERE %s) AS y WHERE y.\"#after\" >= %d",
			strings.Join(qualified("y", cols), ", "), part, part, b.orderBy(n, "x"), b.inner(n), strings.Join(notNull, " AND "), bp.SkipLast)
	case n.Parent == nil:
		q = fmt.Sprintf("SELECT %s FROM %s AS x", strings.Join(qualified("x", cols), ", "), b.inner(n))
	case n.Limit == 0:
		q = fmt.Sprintf("SELECT %s FROM %s AS x WHERE EXISTS (SELECT 1 FROM n%d AS p WHERE %s)",
			strings.Join(qualified("x", cols), ", "), b.inner(n), b.num[n.Parent],
			equal(b.needRefs(n, "p"), qualified("x", names("#k", len(n.JoinCols)))))
	default:
		// The first Limit rows of each parent row: the parent rows once
		// each (a row may reach the parent's CTE several times: through
		// several join table rows, or as a subset of several parents;
		// its join table rows do not count), joined
		// to the relation's rows and ranked per parent row.
		pids := names("#i", len(b.table(n.Parent.Table).identity("t")))
		pc := append(slices.Clone(pids), names("#c", len(b.need[n.Parent]))...)
		q = fmt.Sprintf("SELECT %s FROM (SELECT x.*, row_number() OVER (PARTITION BY %s ORDER BY %s) AS \"#rn\" FROM (SELECT DISTINCT %s FROM n%d) AS p JOIN %s AS x ON %s) AS y WHERE y.\"#rn\" <= %d",
			strings.Join(qualified("y", cols), ", "), strings.Join(qualified("p", pids), ", "), b.orderBy(n, "x"),
			strings.Join(pc, ", "), b.num[n.Parent], b.inner(n),
			equal(b.needRefs(n, "p"), qualified("x", names("#k", len(n.JoinCols)))), n.Limit)
	}
	return fmt.Sprintf("n%d AS (%s)", k, q)
}

// statement is the whole coverage query: a row (table index, 'total',
// NULL, rows, NULL) per table, and one per reason of each table (table
// index, reason, inheritance child, rows, up to CoverageSamples sample
// rows in key order, each a JSON array of its key's values as text).
func (b *coverage) statement() string {
	var ctes, parts []string
	for _, n := range b.nodes {
		ctes = append(ctes, b.nodeCTE(n))
	}
	for ti, ct := range b.tables {
		u, r, reasons := b.unreached(ct)
		ctes = append(ctes, fmt.Sprintf("u%d AS (%s)", ti, u), fmt.Sprintf("r%d AS (%s)", ti, r))
		parts = append(parts, fmt.Sprintf("SELECT %d::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM %s", ti, relName(ct.t)))
		parts = append(parts, reasons)
	}
	return "WITH " + strings.Join(ctes, ",\n") + "\n" + strings.Join(parts, "\nUNION ALL\n") + "\nORDER BY 1, 2, 3"
}

// unreached is the query of u<ti>, ct's rows no node's CTE holds, that of
// r<ti>, those rows with their reason (told for the first node reading the
// table), and the query counting them by reason with up to
// CoverageSamples of each.
func (b *coverage) unreached(ct *covTable) (u, r, reasons string) {
	ti := slices.Index(b.tables, ct)
	ids := ct.identity("t")
	sel := aliased(ids, names("#i", len(ids)))
	oid := "NULL::pg_catalog.oid"
	if ct.hasCtid() || ct.kind == "f" {
		oid = "t.tableoid"
	}
	sel = append(sel, oid+` AS "#oid"`)
	if len(ct.t.PrimaryKey) == 0 {
		// The sample text of a row without a primary key is its columns
		// (and orders the samples); a key's is made from #i at the end,
		// for the few rows shown only.
		sel = append(sel, sampleJSON(qualified("t", identAll(ct.sampleColumns())))+` AS "#s"`)
	}

	first := ct.uses[0]
	n := first.n
	// The reason's columns: #pass (the filter keeps the row), #k (join
	// key on this table's side), #n (a join table's columns on the
	// relation's side, or the relation's columns on the join table's).
	var keys, links []string
	pass := ""
	switch {
	case first.join:
		keys = joinCols(n)
		for _, p := range n.Through.On {
			links = append(links, p[1])
		}
	case n.Through != nil:
		for _, p := range n.Through.On {
			links = append(links, p[0])
		}
	case b.bucket[n] != nil:
		for _, c := range b.bucket[n].By {
			keys = append(keys, n.Columns[c].Name)
		}
		pass = n.Filter
	case n.Parent == nil:
		pass = n.Filter
	default:
		keys = joinCols(n)
		pass = n.Filter
	}
	if pass != "" {
		sel = append(sel, "coalesce(("+pass+"), false) AS \"#pass\"")
	}
	var values []string
	if !first.join {
		values = idArrayValues(n)
	}
	kn, ln, vn := names("#k", len(keys)), names("#n", len(links)), names("#v", len(values))
	sel = append(sel, aliased(qualified("t", identAll(keys)), kn)...)
	sel = append(sel, aliased(qualified("t", identAll(links)), ln)...)
	sel = append(sel, aliased(qualified("t", identAll(values)), vn)...)

	var anti []string
	for _, use := range ct.uses {
		if cond, ok := b.direct(ct, use); ok {
			anti = append(anti, cond)
			continue
		}
		var their []string
		if use.join {
			their = names("#j", len(ids))
		} else {
			their = names("#i", len(ids))
		}
		anti = append(anti, fmt.Sprintf("NOT EXISTS (SELECT 1 FROM n%d AS r WHERE %s)", use.k, equal(qualified("r", their), ids)))
	}
	u = fmt.Sprintf("SELECT %s FROM %s AS t WHERE %s", strings.Join(sel, ", "), relName(ct.t), strings.Join(anti, " AND "))

	// The reason, for the first node reading the table.
	uname := fmt.Sprintf("u%d", ti)
	var joins []string
	// set is a LEFT JOIN of the distinct values of cols of the unreached
	// rows for which cond (on v) holds, named alias; matched tells it.
	set := func(alias string, cols []string, cond string) string {
		joins = append(joins, fmt.Sprintf("LEFT JOIN (SELECT %s FROM (SELECT DISTINCT %s FROM %s) AS v WHERE %s) AS %s ON %s",
			strings.Join(qualified("v", cols), ", "), strings.Join(cols, ", "), uname, cond, alias, equal(qualified(alias, cols), qualified("u", cols))))
		return alias + "." + cols[0] + " IS NOT NULL"
	}
	var whens []string
	isChild := "false"
	if ct.only {
		isChild = fmt.Sprintf(`u."#oid" <> %s::pg_catalog.regclass`, quoteLiteral(relName(ct.t)))
		whens = append(whens, fmt.Sprintf("WHEN %s THEN '%s'", isChild, mappings.ReasonInherited))
	}
	if pass != "" {
		whens = append(whens, fmt.Sprintf(`WHEN NOT u."#pass" THEN '%s'`, mappings.ReasonFiltered))
	}
	if len(kn) > 0 {
		var nulls []string
		for _, c := range kn {
			nulls = append(nulls, "u."+c+" IS NULL")
		}
		whens = append(whens, fmt.Sprintf("WHEN %s THEN '%s'", strings.Join(nulls, " OR "), mappings.ReasonNullKey))
	}
	if len(vn) > 0 {
		var nulls []string
		for _, c := range vn {
			nulls = append(nulls, "u."+c+" IS NULL")
		}
		whens = append(whens, fmt.Sprintf("WHEN %s THEN '%s'", strings.Join(nulls, " OR "), mappings.ReasonNullID))
	}
	other := "'" + mappings.ReasonOther + "'"
	switch {
	case b.bucket[n] != nil:
		other = "'" + mappings.ReasonHeldBack + "'"
	case n.Parent == nil:
	case first.join:
		parent := b.table(n.Parent.Table)
		reached := set("rk", kn, fmt.Sprintf("EXISTS (SELECT 1 FROM n%d AS p WHERE %s)", b.num[n.Parent], equal(b.needRefs(n, "p"), qualified("v", kn))))
		exists := set("ak", kn, fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS p WHERE %s)", parent.from(), equal(qualified("p", identAll(parentCols(n))), qualified("v", kn))))
		var rel []string
		for _, p := range n.Through.On {
			rel = append(rel, qualRef("t", p[0]))
		}
		cond := equal(rel, qualified("v", ln))
		for _, v := range idArrayValues(n) {
			cond += " AND " + qualRef("t", v) + " IS NOT NULL"
		}
		related := set("rl", ln, fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS t WHERE %s)", b.table(n.Table).from(), cond))
		whens = append(whens,
			fmt.Sprintf("WHEN %s AND NOT %s THEN '%s'", reached, related, mappings.ReasonNoRelated),
			fmt.Sprintf("WHEN %s THEN '%s'", reached, filteredOrLimit(n)),
			fmt.Sprintf("WHEN %s THEN '%s'", exists, mappings.ReasonParentUnreached))
		other = "'" + mappings.ReasonNoParent + "'"
	case n.Through != nil:
		jt := b.table(n.Through.Table)
		parent := b.table(n.Parent.Table)
		var jl []string
		for _, p := range n.Through.On {
			jl = append(jl, qualRef("j", p[1]))
		}
		jk := qualified("j", identAll(joinCols(n)))
		linked := set("lk", ln, fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS j WHERE %s)", jt.from(), equal(jl, qualified("v", ln))))
		reached := set("rk", ln, fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS j JOIN n%d AS p ON %s WHERE %s)", jt.from(), b.num[n.Parent], equal(b.needRefs(n, "p"), jk), equal(jl, qualified("v", ln))))
		exists := set("ak", ln, fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS j JOIN %s AS p ON %s WHERE %s)", jt.from(), parent.from(), equal(qualified("p", identAll(parentCols(n))), jk), equal(jl, qualified("v", ln))))
		whens = append(whens,
			fmt.Sprintf("WHEN NOT %s THEN '%s'", linked, mappings.ReasonNotLinked),
			fmt.Sprintf("WHEN %s THEN '%s'", reached, filteredOrLimit(n)),
			fmt.Sprintf("WHEN %s THEN '%s'", exists, mappings.ReasonParentUnreached))
		other = "'" + mappings.ReasonNoParent + "'"
	default:
		parent := b.table(n.Parent.Table)
		reached := set("rk", kn, fmt.Sprintf("EXISTS (SELECT 1 FROM n%d AS p WHERE %s)", b.num[n.Parent], equal(b.needRefs(n, "p"), qualified("v", kn))))
		exists := set("ak", kn, fmt.Sprintf("EXISTS (SELECT 1 FROM %s AS p WHERE %s)", parent.from(), equal(qualified("p", identAll(parentCols(n))), qualified("v", kn))))
		whens = append(whens,
			fmt.Sprintf("WHEN %s THEN '%s'", reached, mappings.ReasonBeyondLimit),
			fmt.Sprintf("WHEN %s THEN '%s'", exists, mappings.ReasonParentUnreached))
		other = "'" + mappings.ReasonNoParent + "'"
	}
	reason := "CASE " + strings.Join(whens, " ") + " ELSE " + other + " END"
	if len(whens) == 0 {
		reason = other
	}
	// The rows with their reason (r<ti>), counted by reason, and the
	// first few of each in key order: a top-N scan per reason, not a sort
	// of every row.
	key := func(a string) string {
		if len(ct.t.PrimaryKey) == 0 {
			return a + `."#s" COLLATE "C"`
		}
		return strings.Join(qualified(a, names("#i", len(ids))), ", ")
	}
	sample := `x."#s"`
	if len(ct.t.PrimaryKey) > 0 {
		pk := names("#i", len(ids))
		sample = sampleJSON(qualified("x", pk[len(ids)-len(ct.t.PrimaryKey):]))
	}
	r = fmt.Sprintf(`SELECT u.*, %s AS reason, CASE WHEN %s THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM %s AS u %s`,
		reason, isChild, uname, strings.Join(joins, " "))
	reasons = fmt.Sprintf(`SELECT %d::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r%d AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(%s ORDER BY %s) AS samples FROM (SELECT r.* FROM r%d AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY %s LIMIT %d) AS x) AS s`,
		ti, ti, sample, key("x"), ti, key("r"), mappings.CoverageSamples)
	return u, r, reasons
}

// sampleJSON is a sample row's text: a JSON array of the values' text, each
// cut after sampleChars (NULL is null).
func sampleJSON(refs []string) string {
	vals := make([]string, len(refs))
	for i, r := range refs {
		vals[i] = fmt.Sprintf("pg_catalog.left(%s::pg_catalog.text, %d)", r, sampleChars+1)
	}
	return "pg_catalog.json_build_array(" + strings.Join(vals, ", ") + ")::pg_catalog.text"
}

// direct is, when a row's reaching a document through use can be told
// from the row itself and its parent's CTE (no limit, no join table, no
// skipLast), the condition on t that it does not: one scan of the table
// and an anti-join on the join key, rather than building the node's rows
// and anti-joining on identity.
func (b *coverage) direct(ct *covTable, use covUse) (string, bool) {
	n := use.n
	if use.join || n.Through != nil || n.Limit > 0 || use.bucket != nil && use.bucket.SkipLast > 0 {
		return "", false
	}
	var conds []string
	if ct.only {
		conds = append(conds, fmt.Sprintf("t.tableoid = %s::pg_catalog.regclass", quoteLiteral(relName(ct.t))))
	}
	if n.Filter != "" {
		conds = append(conds, "("+n.Filter+")")
	}
	if use.bucket != nil {
		for _, c := range use.bucket.By {
			conds = append(conds, qualRef("t", n.Columns[c].Name)+" IS NOT NULL")
		}
	}
	for _, v := range idArrayValues(n) {
		conds = append(conds, qualRef("t", v)+" IS NOT NULL")
	}
	if n.Parent == nil {
		if len(conds) == 0 {
			return "false", true
		}
		return "NOT coalesce(" + strings.Join(conds, " AND ") + ", false)", true
	}
	// The row's own conditions go inside the anti-join (PostgreSQL keeps
	// them as a filter of the join), so that it stays an anti-join.
	conds = append([]string{equal(b.needRefs(n, "p"), qualified("t", identAll(joinCols(n))))}, conds...)
	return fmt.Sprintf("NOT EXISTS (SELECT 1 FROM n%d AS p WHERE %s)", b.num[n.Parent], strings.Join(conds, " AND ")), true
}

// filteredOrLimit is the reason of a row linked to reached parents through
// n's join table that n's pairs leave out: its filter (which may read the
// join table's columns), or its limit too.
func filteredOrLimit(n *mappings.Node) string {
	if n.Limit > 0 {
		return mappings.ReasonFilteredOrLimit
	}
	return mappings.ReasonFiltered
}

// explain is the node a reason is told for and the reason in words.
func (ct *covTable) explain(reason, child string) (node, msg string) {
	u := ct.uses[0]
	n := u.n
	node = n.Path
	tname := ct.t.Name
	join := func() string {
		cols := joinCols(n)
		q := tname
		if u.join || n.Through != nil {
			q = n.Through.Table.Name
		}
		parts := make([]string, len(cols))
		for i, c := range cols {
			parts[i] = q + "." + c
		}
		return strings.Join(parts, ", ")
	}
	parentJoin := func() string {
		if n.Parent == nil {
			return ""
		}
		cols := parentCols(n)
		parts := make([]string, len(cols))
		for i, c := range cols {
			parts[i] = n.Parent.Table.Name + "." + c
		}
		return strings.Join(parts, ", ")
	}
	switch reason {
	case mappings.ReasonInherited:
		msg = fmt.Sprintf("stored in inheritance child %s, and denorm reads ONLY %s", child, ct.t.QualifiedName())
	case mappings.ReasonFiltered:
		if n.Through != nil {
			msg = fmt.Sprintf("linked to parents that reach a document, but the filter of %s (%s) leaves them out", n.Path, n.Filter)
		} else {
			msg = fmt.Sprintf("the filter of %s (%s) leaves them out", n.Path, n.Filter)
		}
	case mappings.ReasonFilteredOrLimit:
		msg = fmt.Sprintf("linked to parents that reach a document, but the filter or the limit %d of %s leaves them out", n.Limit, n.Path)
	case mappings.ReasonNullKey:
		if n.Parent == nil {
			var by []string
			for _, c := range u.bucket.By {
				by = append(by, tname+"."+n.Columns[c].Name)
			}
			msg = fmt.Sprintf("bucket parent key %s is NULL: migrate rejects these rows (%s)", strings.Join(by, ", "), n.Path)
		} else {
			msg = fmt.Sprintf("%s is NULL, so they join no %s row (%s)", join(), n.Parent.Table.Name, n.Path)
		}
	case mappings.ReasonNullID:
		var cols []string
		for _, v := range idArrayValues(n) {
			cols = append(cols, tname+"."+v)
		}
		msg = fmt.Sprintf("%s is NULL, and the id array %s leaves out NULL ids", strings.Join(cols, ", "), n.Path)
	case mappings.ReasonNoParent:
		msg = fmt.Sprintf("no %s row has %s equal to their %s (%s)", n.Parent.Table.Name, parentJoin(), join(), n.Path)
	case mappings.ReasonParentUnreached:
		msg = fmt.Sprintf("their %s rows reach no document themselves (%s)", n.Parent.Table.Name, n.Path)
	case mappings.ReasonBeyondLimit:
		if n.Limit == 1 && n.Object {
			msg = fmt.Sprintf("not the first in orderBy for any %s row (%s uses the first only)", n.Parent.Table.Name, n.Path)
		} else {
			msg = fmt.Sprintf("beyond the first %d per %s row (limit of %s)", n.Limit, n.Parent.Table.Name, n.Path)
		}
	case mappings.ReasonHeldBack:
		msg = fmt.Sprintf("among the last %d of their parent, which skipLast leaves to a subset in the parent, and no subset holds them (%s)", u.bucket.SkipLast, n.Path)
	case mappings.ReasonNotLinked:
		msg = fmt.Sprintf("no row of join table %s links them (%s)", n.Through.Table.Name, n.Path)
	case mappings.ReasonNoRelated:
		msg = fmt.Sprintf("they link a parent to no row of %s (%s)", n.Table.Name, n.Path)
	default:
		msg = fmt.Sprintf("reach no document (%s)", n.Path)
	}
	return node, msg
}
