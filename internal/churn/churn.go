// Package churn is test support: a schema-generic generator of random
// writes driven by a seed, and a harness (RunRounds) that proves a way of
// keeping a target current (denorm sync, or any other) against a
// fresh migrate of the same source, round after round.
//
// The generator reads the test database's catalog itself (tables,
// columns and their types with domains, enums and arrays, primary keys,
// foreign keys including composite ones and those declared on partitions,
// unique and check constraints, defaults, identity and generated columns,
// partitioned tables and their bounds) and makes rounds of inserts,
// updates (ordinary columns, foreign keys = moves, lookup renames, primary
// keys), deletes (leaf rows, and parents with their children deleted
// first in the same transaction) and TRUNCATEs, in one or several
// transactions. Every operation runs in a savepoint: when a constraint
// says no, the savepoint is rolled back and the operation is tried again
// with other random choices. Every second round is sparse: a row or two of
// one or two focus tables, preferably rows other rows point to, so that a
// change has to reach documents nothing else changed (where a missed
// fan-out shows).
//
// Deterministic: the same seed on the same starting data makes the same
// statements. Rows are sampled by a hash of their primary key and a salt
// drawn from the seed (never by physical order, which autovacuum and
// retries change), and values are made in Go from the seed. Columns whose
// default is volatile (now(), ...) are written with generated values and
// never used to derive others. Tables without a primary key are sampled
// by ctid, which is the one exception.
//
// Bounded: existing keys are sampled set-wise (ORDER BY a hash LIMIT n,
// max() of a key); a delete's dependent rows are fetched with one query per
// foreign key and capped (Options.MaxCascade). No table is ever read whole
// into memory.
//
// Limits: values of types it has no generator for (geometric, network,
// ranges, ...) are copied from existing rows or left to defaults; CHECK
// constraints are not parsed (a violation rolls the operation back, and
// such columns prefer values near existing ones); multi-level partitioning
// is seen through its top level only.
//
// It imports pgx (an exception to the layering rules, for a test helper)
// and is imported only by tests (TestNoProductionImports checks that no
// other package does).
package churn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Options tune a Generator.
type Options struct {
	// Seed drives every choice.
	Seed uint64
	// Tables restricts the writes to these tables ("t" or "schema.t");
	// nil: every table outside the system schemas.
	Tables []string
	// Focus lists the tables whose changes matter (a mapping's tables):
	// TRUNCATE picks among them. nil: all of Tables.
	Focus []string
	// ExtraOps is the number of operations per table and round, chosen by
	// Weights, beyond the insert, update and delete (and move, rename)
	// every table gets each round. Default 2.
	ExtraOps int
	// Transactions: a round's operations are split into 1 to Transactions
	// transactions. Default 3.
	Transactions int
	// Weights of the extra operations; zero Weights use the defaults.
	Weights Weights
	// SparseWeights choose the operations of sparse rounds, which favour
	// changes of rows others point to; zero uses the defaults.
	SparseWeights Weights
	// LookupRows: a table others point to with at most this many rows and
	// a text column is a lookup, whose text gets renamed. Default 20.
	LookupRows int
	// MaxCascade caps the rows one delete takes with it (the row and its
	// dependents); rows with more are not deleted. Default 200.
	MaxCascade int
	// Tries is how often a failed operation is tried again with other
	// random choices. Default 3.
	Tries int
	// MinRows: a round first inserts into every table with fewer rows
	// until it has this many (parents first), so that deletes and
	// TRUNCATE do not starve later rounds. Default 3.
	MinRows int
	// Dense makes every round write every table. By default every second
	// round is sparse: one or two Focus tables, one or two operations each.
	Dense bool
}

// Weights of the extra operations of a round.
type Weights struct {
	Insert, Update, Move, Delete, Rename, Rekey int
}

var (
	defaultWeights       = Weights{Insert: 4, Update: 3, Move: 2, Delete: 2, Rename: 1, Rekey: 1}
	defaultSparseWeights = Weights{Insert: 2, Update: 4, Move: 2, Delete: 2, Rename: 3, Rekey: 1}
)

func (o *Options) defaults() {
	if o.ExtraOps == 0 {
		o.ExtraOps = 2
	}
	if o.Transactions <= 0 {
		o.Transactions = 3
	}
	if o.Weights == (Weights{}) {
		o.Weights = defaultWeights
	}
	if o.SparseWeights == (Weights{}) {
		o.SparseWeights = defaultSparseWeights
	}
	if o.LookupRows <= 0 {
		o.LookupRows = 20
	}
	if o.MaxCascade <= 0 {
		o.MaxCascade = 200
	}
	if o.Tries <= 0 {
		o.Tries = 3
	}
	if o.MinRows <= 0 {
		o.MinRows = 3
	}
}

// Generator writes random rounds into one database. Not safe for
// concurrent use.
type Generator struct {
	conn   *pgx.Conn
	rng    *rand.Rand
	opt    Options
	cat    *catalog
	tables []*table
	focus  []*table
	rounds int
	sparse bool           // this round is sparse
	rows   map[*table]int // rows per table at the round's start (counted up to 1000)
	cur    pgx.Tx         // the open savepoint
	log    []Statement    // this round's writes
	ops    []Statement    // this operation's writes
}

// New connects to the database and reads its catalog.
func New(ctx context.Context, dbURL string, opt Options) (*Generator, error) {
	opt.defaults()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("churn: %w", err)
	}
	// Text forms of dates and times the value makers read.
	cfg.RuntimeParams["DateStyle"] = "ISO, YMD"
	cfg.RuntimeParams["TimeZone"] = "UTC"
	cfg.RuntimeParams["IntervalStyle"] = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("churn: connect: %w", err)
	}
	cat, err := readCatalog(ctx, conn)
	if err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("churn: %w", err)
	}
	g := &Generator{conn: conn, opt: opt, cat: cat, rng: rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15))}
	if g.tables, err = cat.resolve(opt.Tables); err == nil {
		g.focus, err = cat.resolve(opt.Focus)
	}
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	if opt.Tables == nil {
		g.tables = cat.tables
	}
	if opt.Focus == nil {
		g.focus = g.tables
	}
	return g, nil
}

func (c *catalog) resolve(names []string) ([]*table, error) {
	var out []*table
	for _, n := range names {
		t := c.table(n)
		if t == nil {
			return nil, fmt.Errorf("churn: no table %q in the database", n)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Close closes the connection.
func (g *Generator) Close(ctx context.Context) error { return g.conn.Close(ctx) }

// TableInfo is what the generator knows of a table, for coverage checks.
type TableInfo struct {
	Name        string   // schema.table
	Parents     []string // tables its foreign keys point to
	Children    []string // tables whose foreign keys point to it
	Lookup      bool     // gets renames
	Partitioned bool
}

// Table describes a table ("t" means "public.t"); false when there is none.
func (g *Generator) Table(name string) (TableInfo, bool) {
	t := g.cat.table(name)
	if t == nil {
		return TableInfo{}, false
	}
	info := TableInfo{Name: t.name, Lookup: t.lookup(int64(g.opt.LookupRows)), Partitioned: t.partitioned}
	for _, fk := range t.fks {
		if !slices.Contains(info.Parents, fk.parent.name) {
			info.Parents = append(info.Parents, fk.parent.name)
		}
	}
	for _, fk := range t.refs {
		if !slices.Contains(info.Children, fk.child.name) {
			info.Children = append(info.Children, fk.child.name)
		}
	}
	return info, true
}

// Statements returns the writes of the last round, in order, the ones
// rolled back included (marked).
func (g *Generator) Statements() []Statement { return g.log }

type opKind int

const (
	opInsert opKind = iota
	opUpdate
	opMove
	opDelete
	opRename
	opRekey
	opTruncate
)

var opNames = [...]string{"insert", "update", "move", "delete", "rename", "rekey", "truncate"}

func (k opKind) String() string { return opNames[k] }

type op struct {
	kind opKind
	t    *table
}

// errNothing: the operation found nothing to work on (an empty table, no
// parent row, every candidate too big to delete).
var errNothing = errors.New("nothing to do")

// nothing is errNothing with the reason.
func nothing(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errNothing}, args...)...)
}

// Round makes one round of writes: for every table an insert, an update,
// a delete, a move (tables with foreign keys) and a rename (lookups),
// plus Options.ExtraOps chosen by weight, shuffled and split into one or
// several transactions; every second round is sparse instead (see
// Options.Dense). Tables below Options.MinRows get inserts first. With
// truncate, one TRUNCATE of a focus table (a child table; CASCADE when
// others point to it) is among the operations.
func (g *Generator) Round(ctx context.Context, truncate bool) (*Report, error) {
	rep := newReport()
	g.log = nil
	g.rounds++
	var ops []op
	rep.Sparse = !g.opt.Dense && g.rounds%2 == 0
	g.sparse = rep.Sparse
	if rep.Sparse {
		// A row or two of one or two focus tables, preferably rows others
		// point to: a change then reaches documents nothing else changed,
		// which is where a missed fan-out shows.
		for _, t := range shuffled(g, g.focus)[:min(len(g.focus), 1+g.rng.IntN(2))] {
			for i := 0; i < 1+g.rng.IntN(2); i++ {
				ops = append(ops, op{g.pick(t), t})
			}
		}
	}
	for _, t := range g.tables {
		if rep.Sparse {
			break
		}
		kinds := []opKind{opInsert, opUpdate, opDelete}
		if len(t.fks) > 0 {
			kinds = append(kinds, opMove)
		}
		if t.lookup(int64(g.opt.LookupRows)) {
			kinds = append(kinds, opRename)
		}
		for i := 0; i < g.opt.ExtraOps; i++ {
			kinds = append(kinds, g.pick(t))
		}
		for _, k := range kinds {
			ops = append(ops, op{k, t})
		}
	}
	g.rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	refill, err := g.refill(ctx)
	if err != nil {
		return rep, err
	}
	ops = append(refill, ops...)
	if truncate {
		if t := g.truncateTarget(); t != nil {
			i := g.rng.IntN(len(ops) + 1)
			ops = slices.Insert(ops, i, op{opTruncate, t})
		}
	}
	// Cut points of the transactions.
	n := 1 + g.rng.IntN(g.opt.Transactions)
	cuts := []int{0}
	for i := 1; i < n; i++ {
		cuts = append(cuts, g.rng.IntN(len(ops)+1))
	}
	slices.Sort(cuts)
	cuts = append(cuts, len(ops))
	for i := 0; i+1 < len(cuts); i++ {
		if cuts[i] == cuts[i+1] {
			continue
		}
		if err := g.transaction(ctx, ops[cuts[i]:cuts[i+1]], rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// refill lists the inserts that bring every table up to MinRows rows,
// parents before children.
func (g *Generator) refill(ctx context.Context) ([]op, error) {
	var ops []op
	g.rows = map[*table]int{}
	for _, t := range parentsFirst(g.tables) {
		var n int
		if err := g.conn.QueryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM "+t.ident+" LIMIT 1000) s").Scan(&n); err != nil {
			return nil, fmt.Errorf("churn: count %s: %w", t.name, err)
		}
		g.rows[t] = n
		for ; n < g.opt.MinRows; n++ {
			ops = append(ops, op{opInsert, t})
		}
	}
	return ops, nil
}

// parentsFirst orders tables so that a table comes after the tables its
// foreign keys point to (cycles broken in name order).
func parentsFirst(tables []*table) []*table {
	left := slices.Clone(tables)
	var out []*table
	for len(left) > 0 {
		i := slices.IndexFunc(left, func(t *table) bool {
			return !slices.ContainsFunc(t.fks, func(fk *fkey) bool { return fk.parent != t && slices.Contains(left, fk.parent) })
		})
		if i < 0 {
			i = 0
		}
		out = append(out, left[i])
		left = slices.Delete(left, i, i+1)
	}
	return out
}

// pick chooses an extra operation for t by weight.
func (g *Generator) pick(t *table) opKind {
	w := g.opt.Weights
	if g.sparse {
		w = g.opt.SparseWeights
	}
	type choice struct {
		k opKind
		w int
	}
	choices := []choice{{opInsert, w.Insert}, {opUpdate, w.Update}, {opDelete, w.Delete}}
	if len(t.fks) > 0 {
		choices = append(choices, choice{opMove, w.Move})
	}
	if t.lookup(int64(g.opt.LookupRows)) {
		choices = append(choices, choice{opRename, w.Rename})
	}
	if len(t.pk) > 0 {
		choices = append(choices, choice{opRekey, w.Rekey})
	}
	total := 0
	for _, c := range choices {
		total += max(c.w, 0)
	}
	if total == 0 {
		return opInsert
	}
	x := g.rng.IntN(total)
	for _, c := range choices {
		if x < max(c.w, 0) {
			return c.k
		}
		x -= max(c.w, 0)
	}
	return opInsert
}

// truncateTarget picks the table to TRUNCATE: a focus table with a parent
// and no children if there is one, else a focus table with a parent, else
// any focus table.
func (g *Generator) truncateTarget() *table {
	var leaves, children []*table
	for _, t := range g.focus {
		if len(t.fks) == 0 {
			continue
		}
		children = append(children, t)
		if !slices.ContainsFunc(t.refs, func(fk *fkey) bool { return fk.child != t }) {
			leaves = append(leaves, t)
		}
	}
	for _, set := range [][]*table{leaves, children, g.focus} {
		if len(set) > 0 {
			return set[g.rng.IntN(len(set))]
		}
	}
	return nil
}

func (g *Generator) transaction(ctx context.Context, ops []op, rep *Report) error {
	tx, err := g.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("churn: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	for _, o := range ops {
		if err := g.do(ctx, tx, o, rep); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("churn: commit: %w", err)
	}
	rep.Transactions++
	return nil
}

// do runs one operation in a savepoint, trying again with other random
// choices when a constraint rolls it back.
func (g *Generator) do(ctx context.Context, tx pgx.Tx, o op, rep *Report) error {
	for try := 0; try < g.opt.Tries; try++ {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return fmt.Errorf("churn: savepoint: %w", err)
		}
		g.cur, g.ops = sp, nil
		delta := newReport()
		err = g.run(ctx, o, delta)
		var pe interface{ SQLState() string } // *pgconn.PgError: the server said no
		switch {
		case err == nil:
			if err := sp.Commit(ctx); err != nil {
				return fmt.Errorf("churn: release savepoint: %w", err)
			}
			g.log = append(g.log, g.ops...)
			rep.Add(delta)
			rep.Statements += len(g.ops)
			return nil
		case errors.As(err, &pe) || errors.Is(err, errNothing):
			if pe == nil {
				g.ops = append(g.ops, Statement{SQL: fmt.Sprintf("-- %s %s", o.kind, o.t.name), Err: err.Error()})
			}
			if rbErr := sp.Rollback(ctx); rbErr != nil {
				return fmt.Errorf("churn: rollback to savepoint: %w", rbErr)
			}
			g.log = append(g.log, g.ops...)
			rep.counts(o.t.name).Failed++
		default:
			return fmt.Errorf("churn: %s %s: %w", o.kind, o.t.name, err)
		}
	}
	return nil
}

func (g *Generator) run(ctx context.Context, o op, rep *Report) error {
	c := rep.counts(o.t.name)
	switch o.kind {
	case opInsert:
		return g.insert(ctx, o.t, c)
	case opUpdate:
		return g.update(ctx, o.t, c)
	case opMove:
		return g.move(ctx, o.t, c)
	case opRename:
		return g.rename(ctx, o.t, c)
	case opRekey:
		return g.rekey(ctx, o.t, c)
	case opDelete:
		return g.delete(ctx, o.t, rep)
	case opTruncate:
		return g.truncate(ctx, o.t, rep)
	}
	return fmt.Errorf("unknown operation %d", o.kind)
}

// --- statements ---

func anyArgs(args []*string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// exec runs a write and logs it.
func (g *Generator) exec(ctx context.Context, sql string, args ...*string) (int64, error) {
	tag, err := g.cur.Exec(ctx, sql, anyArgs(args)...)
	st := Statement{SQL: sql, Args: args}
	if err != nil {
		st.Err = err.Error()
	}
	g.ops = append(g.ops, st)
	return tag.RowsAffected(), err
}

// row is one row of a table as text, by column, followed by tableoid and
// ctid for tables without a primary key.
type row []*string

// keyParts are the expressions that identify a row of t, and their types.
func (t *table) keyParts() (exprs, types []string) {
	if len(t.pk) == 0 {
		return []string{"x.tableoid", "x.ctid"}, []string{"oid", "tid"}
	}
	for _, c := range t.pk {
		exprs = append(exprs, "x."+c.ident)
		types = append(types, c.typ)
	}
	return exprs, types
}

// key returns the identifying values of r.
func (t *table) key(r row) []*string {
	if len(t.pk) == 0 {
		return r[len(t.cols):]
	}
	out := make([]*string, len(t.pk))
	for i, c := range t.pk {
		out[i] = r[slices.Index(t.cols, c)]
	}
	return out
}

func (t *table) value(r row, c *column) *string { return r[slices.Index(t.cols, c)] }

// selectRows reads rows of t matching cond (placeholders $1.. bound to
// args), in a random order drawn from the seed (sample) or in key order.
func (g *Generator) selectRows(ctx context.Context, t *table, cond string, args []*string, limit int, sample bool) ([]row, error) {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range t.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("x." + c.ident + "::text")
	}
	if len(t.pk) == 0 {
		b.WriteString(", x.tableoid::text, x.ctid::text")
	}
	b.WriteString(" FROM " + t.ident + " x")
	if cond != "" {
		b.WriteString(" WHERE " + cond)
	}
	exprs, _ := t.keyParts()
	if sample {
		args = append(slices.Clip(args), ptr(strconv.FormatUint(g.rng.Uint64(), 36)))
		fmt.Fprintf(&b, " ORDER BY md5(ROW(%s)::text || $%d)", strings.Join(exprs, ", "), len(args))
		b.WriteString(", " + strings.Join(exprs, ", "))
	} else {
		b.WriteString(" ORDER BY " + strings.Join(exprs, ", "))
	}
	fmt.Fprintf(&b, " LIMIT %d", limit)
	rows, err := g.cur.Query(ctx, b.String(), anyArgs(args)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	width := len(t.cols)
	if len(t.pk) == 0 {
		width += 2
	}
	var out []row
	for rows.Next() {
		r := make(row, width)
		dst := make([]any, width)
		for i := range r {
			dst[i] = &r[i]
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// sample returns up to n rows of t matching cond, chosen by the seed.
func (g *Generator) sample(ctx context.Context, t *table, n int, cond string, args ...*string) ([]row, error) {
	return g.selectRows(ctx, t, cond, args, n, true)
}

// conds builds "x.c1 = $k::text::t1 AND ..." for the columns and values,
// numbering placeholders after args; NULL values become IS NULL.
func conds(cols []*column, vals []*string, args []*string) (string, []*string) {
	var parts []string
	for i, c := range cols {
		if vals[i] == nil {
			parts = append(parts, "x."+c.ident+" IS NULL")
			continue
		}
		args = append(args, vals[i])
		parts = append(parts, fmt.Sprintf("x.%s = $%d::text::%s", c.ident, len(args), c.typ))
	}
	return strings.Join(parts, " AND "), args
}

func notNull(cols []*column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = "x." + c.ident + " IS NOT NULL"
	}
	return strings.Join(parts, " AND ")
}

func and(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " AND " + b
}

// whereKey is the condition selecting r by its key.
func (t *table) whereKey(r row, args []*string) (string, []*string) {
	exprs, types := t.keyParts()
	key := t.key(r)
	parts := make([]string, len(exprs))
	for i := range exprs {
		args = append(args, key[i])
		parts[i] = fmt.Sprintf("%s = $%d::text::%s", exprs[i], len(args), types[i])
	}
	return strings.Join(parts, " AND "), args
}

// arrayLiteral is the text of a one-dimensional array of the values.
func arrayLiteral(vals []*string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		if v == nil {
			b.WriteString("NULL")
			continue
		}
		b.WriteByte('"')
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(*v))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// inTuples is "ROW(exprs) IN (SELECT * FROM unnest(arrays))" for a set of
// value tuples (tuples[i][j]: column j of tuple i).
func inTuples(exprs, types []string, tuples [][]*string, args []*string) (string, []*string) {
	arrays := make([]string, len(exprs))
	for j := range exprs {
		col := make([]*string, len(tuples))
		for i, tu := range tuples {
			col[i] = tu[j]
		}
		args = append(args, ptr(arrayLiteral(col)))
		arrays[j] = fmt.Sprintf("$%d::text::text[]::%s[]", len(args), types[j])
	}
	return fmt.Sprintf("ROW(%s) IN (SELECT * FROM unnest(%s))", strings.Join(exprs, ", "), strings.Join(arrays, ", ")), args
}

func colExprs(cols []*column) (exprs, types []string) {
	for _, c := range cols {
		exprs = append(exprs, "x."+c.ident)
		types = append(types, c.typ)
	}
	return exprs, types
}
