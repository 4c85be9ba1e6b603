package extract

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// Batch is a page of root rows with every related row they need. Values are
// document values (see transform), in each node's Columns order (followed
// by its JoinKeyCols).
//
// A Batch is immutable once returned and may be read from any goroutine.
type Batch struct {
	Roots [][]any
	// Queries is the number of statements the batch took.
	Queries int
	// Asked, in a key-set read (NewKeyReader), is set on the last batch
	// of each group of keys: what was found for every key of the group.
	Asked   []Asked
	related map[*mappings.Node]*relation
}

// Related returns the rows of relation n joined to parent (a row of n's
// parent node), in the relation's order. It implements transform.Related.
func (b *Batch) Related(n *mappings.Node, parent []any) [][]any {
	rel := b.related[n]
	if rel == nil {
		return nil
	}
	return rel.get(n, parent)
}

// Key is a position in a collection's root stream: the text form of each
// key column's value (PostgreSQL input syntax), nil for NULL. It is what a
// checkpoint stores.
type Key []*string

// String shows a key for messages: (42, 'x', NULL).
func (k Key) String() string {
	parts := make([]string, len(k))
	for i, v := range k {
		if v == nil {
			parts[i] = "NULL"
		} else {
			parts[i] = strconv.Quote(*v)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Reader reads one collection's root rows batch by batch in stream order
// (the _id columns, or a bucket collection's full order), each batch with
// the related rows its documents need. Reader is used by one goroutine.
type Reader struct {
	snap      *Snapshot
	plan      *mappings.CollectionPlan
	batchSize int
	after     Key
	done      bool
	part      Part
	// Queries counts the statements sent, for reports and tests.
	Queries int
	// SetWise turns merge streams off (see merge.go): every relation is
	// read with one set-wise query per batch on the snapshot's connection.
	SetWise bool
	merge   *merger
	lookups map[*mappings.Node]*lookupCache
	tried   bool
	pending int // stream queries not yet counted in a batch
	// keys, when set, is a key-set read's state (keys.go).
	keys *keySet
}

// NewReader reads plan's collection from snap in batches of batchSize root
// rows. after, when not nil, is the position of the last row already
// handled: reading resumes after it.
func NewReader(snap *Snapshot, plan *mappings.CollectionPlan, batchSize int, after Key) *Reader {
	if batchSize <= 0 {
		batchSize = 1000
	}
	return &Reader{snap: snap, plan: plan, batchSize: batchSize, after: after}
}

// Next returns the next batch, or io.EOF after the last one.
func (r *Reader) Next(ctx context.Context) (*Batch, error) {
	if r.done {
		return nil, io.EOF
	}
	if r.keys != nil {
		return r.nextKeys(ctx)
	}
	if !r.tried && !r.SetWise && r.snap.src != nil {
		r.tried = true
		// Without a connection for the streams, read set-wise: slower,
		// same documents.
		_ = r.startStreams(ctx, Streamable(r.plan))
	}
	if r.merge != nil {
		return r.nextMerged(ctx)
	}
	root := r.plan.Root
	sql, args := rootQuery(r.plan, r.after, r.batchSize, partPredicate(r.plan, r.part), nil)
	roots, err := r.read(ctx, root, sql, args)
	if err != nil {
		return nil, fmt.Errorf("extract %q after key %v: %w", root.Table.Name, r.after, err)
	}
	queries := 1
	if len(roots) < r.batchSize {
		r.done = true
	}
	if len(roots) == 0 {
		r.Queries += queries
		return nil, io.EOF
	}
	b := &Batch{Roots: roots, related: map[*mappings.Node]*relation{}}
	after, err := KeyOf(r.plan, roots[len(roots)-1])
	if err != nil {
		return nil, fmt.Errorf("extract %q: %w", root.Table.Name, err)
	}
	n, err := r.children(ctx, b, root, roots)
	if err != nil {
		return nil, err
	}
	queries += n
	r.after, b.Queries = after, queries
	r.Queries += queries
	return b, nil
}

// Close stops the reader's streams, if any, and releases their
// connections. It may be called at any time, more than once.
func (r *Reader) Close() {
	if r.merge != nil {
		r.merge.close()
	}
}

// children fetches, set-wise, the rows of every relation of n for parents,
// and returns the number of statements sent.
func (r *Reader) children(ctx context.Context, b *Batch, n *mappings.Node, parents [][]any) (int, error) {
	queries := 0
	for _, c := range n.Children {
		if r.merge != nil && r.merge.children[c] != nil {
			continue // read by its stream
		}
		rel := newRelation(c, 0, 0)
		b.related[c] = rel
		cache := r.cacheFor(c)
		keys := make([][]string, len(c.ParentCols))
		var missing []string // keys asked for, when cached
		seen := map[string]bool{}
		for _, p := range parents {
			k, ok := joinKey(p, c.ParentCols)
			if !ok || seen[k] {
				continue
			}
			seen[k] = true
			if cache != nil {
				if rows, hit := cache.rows[k]; hit {
					for _, row := range rows {
						rel.add(c, row)
					}
					continue
				}
				missing = append(missing, k)
			}
			for i, pc := range c.ParentCols {
				s, _ := textParam(p[pc])
				keys[i] = append(keys[i], s)
			}
		}
		if len(keys[0]) == 0 {
			continue
		}
		args := make([]any, len(keys))
		for i := range keys {
			args[i] = keys[i]
		}
		rows, err := r.read(ctx, c, relatedQuery(c), args)
		if err != nil {
			return queries, fmt.Errorf("extract %q for %s: %w", c.Table.Name, c.Path, err)
		}
		queries++
		for _, row := range rows {
			rel.add(c, row)
		}
		if cache != nil {
			cache.store(c, missing, rows)
		}
		if c.Kind == mappings.NodeEmbed {
			q, err := r.children(ctx, b, c, rows)
			queries += q
			if err != nil {
				return queries, err
			}
		}
	}
	return queries, nil
}

// read runs sql and converts every row of n to document values: the
// node's Columns, then its JoinKeyCols.
func (r *Reader) read(ctx context.Context, n *mappings.Node, sql string, args []any) ([][]any, error) {
	rows, err := r.snap.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	dec := newRowDecoder(n, rows)
	for rows.Next() {
		row, err := dec.decode(rows.RawValues())
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// keyColumn is the column behind value i of a row of n.
func keyColumn(n *mappings.Node, i int) (mappings.Column, mappings.NumericMode) {
	if i < len(n.Columns) {
		return n.Columns[i], n.Numeric[i]
	}
	return n.JoinKeyCols[i-len(n.Columns)], mappings.NumericDecimal
}

func rowName(n *mappings.Node, raw []any) string {
	var cols, vals []string
	for _, k := range n.Table.PrimaryKey {
		for i, c := range n.Columns {
			if c.Name == k && i < len(raw) {
				cols = append(cols, k)
				vals = append(vals, fmt.Sprint(raw[i]))
			}
		}
	}
	if len(cols) == 0 {
		return fmt.Sprintf("row of %q", n.Table.Name)
	}
	return fmt.Sprintf("row %s (%s)=(%s)", n.Table.Name, strings.Join(cols, ", "), strings.Join(vals, ", "))
}

// tableRef names table t in a query's FROM: ONLY t for a plain or
// foreign table, so that the rows of tables inheriting from it are not
// read as its own (their keys may repeat its keys: see
// mappings.Table.OwnRowsOnly); a partitioned table, or a view, as it is.
func tableRef(t *mappings.Table) string {
	ref := relName(t)
	if t.OwnRowsOnly() {
		return "ONLY " + ref
	}
	return ref
}

// relName is t's quoted name, for what is not a read of its rows
// (a regclass, a count of all its rows, children included).
func relName(t *mappings.Table) string { return pgx.Identifier{t.Schema, t.Name}.Sanitize() }

func qualRef(q, c string) string { return q + "." + pgx.Identifier{c}.Sanitize() }

func colRef(c string) string { return qualRef("t", c) }

// selectList selects n's Columns from t and its JoinKeyCols from j (through)
// or t.
func selectList(n *mappings.Node) string {
	parts := make([]string, 0, len(n.Columns)+len(n.JoinKeyCols))
	for _, c := range n.Columns {
		parts = append(parts, SelectExpr(c, "t"))
	}
	for _, c := range n.JoinKeyCols {
		parts = append(parts, SelectExpr(c, keyQual(n)))
	}
	return strings.Join(parts, ", ")
}

// keyQual is the alias of the table holding n's join key columns.
func keyQual(n *mappings.Node) string {
	if n.Through != nil {
		return "j"
	}
	return "t"
}

// keyRefs are the SQL references of the columns n's join key values come
// from (for a key computed by PostgreSQL, the column it is computed
// from), pair by pair with JoinCols: conditions on them are PostgreSQL's
// own, and indexes serve them.
func keyRefs(n *mappings.Node) []string {
	out := make([]string, len(n.JoinCols))
	for i, c := range n.JoinCols {
		col, _ := keyColumn(n, c)
		q := "t"
		if c >= len(n.Columns) {
			q = keyQual(n)
		}
		out[i] = qualRef(q, col.Name)
	}
	return out
}

// keySelects are the select expressions of n's JoinKeyCols, and their
// positions in the select list (from 1), for GROUP BY and ORDER BY.
func keySelects(n *mappings.Node) (exprs, positions []string) {
	for i, c := range n.JoinKeyCols {
		exprs = append(exprs, SelectExpr(c, keyQual(n)))
		positions = append(positions, strconv.Itoa(len(n.Columns)+1+i))
	}
	return exprs, positions
}

// fromClause is n's table, joined to its join table when it has one.
func fromClause(n *mappings.Node) string {
	if n.Through == nil {
		return tableRef(n.Table) + " AS t"
	}
	on := make([]string, len(n.Through.On))
	for i, p := range n.Through.On {
		on[i] = fmt.Sprintf("%s = %s", colRef(p[0]), qualRef("j", p[1]))
	}
	return fmt.Sprintf("%s AS j JOIN %s AS t ON %s", tableRef(n.Through.Table), tableRef(n.Table), strings.Join(on, " AND "))
}

// orderExpr is one ORDER BY item with explicit NULLS placement
// (PostgreSQL's defaults), which keyset predicates rely on.
func orderExpr(ref string, desc bool) string {
	if desc {
		return ref + " DESC NULLS FIRST"
	}
	return ref + " ASC NULLS LAST"
}

// rootQuery is the keyset page query: rows after the last key, in stream
// order; limit 0 reads to the end. cond are more conditions (a part, a
// key set) whose parameters, args, are numbered from $1.
func rootQuery(p *mappings.CollectionPlan, after Key, limit int, cond []string, args []any) (string, []any) {
	n := p.Root
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s FROM %s AS t", selectList(n), tableRef(n.Table))
	where := append([]string(nil), cond...)
	if n.Filter != "" {
		where = append(where, "("+n.Filter+")")
	}
	key := p.StreamOrder()
	args = append([]any(nil), args...)
	if len(after) == len(key) {
		pred, a := keysetPredicate(n, key, after, len(args))
		where = append(where, pred)
		args = append(args, a...)
	}
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	order := make([]string, len(key))
	for i, k := range key {
		order[i] = orderExpr(colRef(n.Columns[k.Col].Name), k.Desc)
	}
	fmt.Fprintf(&b, " ORDER BY %s", strings.Join(order, ", "))
	if limit > 0 {
		fmt.Fprintf(&b, " LIMIT %d", limit)
	}
	return b.String(), args
}

// keysetPredicate is the condition "the row comes after the key `after`"
// in the order key, with parameters numbered from argBase+1. When every
// column is ascending and NOT NULL it is a row comparison, which an index
// serves directly; otherwise the expanded form, NULL-aware.
func keysetPredicate(n *mappings.Node, key []mappings.OrderCol, after Key, argBase int) (string, []any) {
	var args []any
	param := func(i int) string {
		args = append(args, *after[i])
		return fmt.Sprintf("$%d::text::%s", argBase+len(args), n.Columns[key[i].Col].Type)
	}
	simple := true
	for i, k := range key {
		if k.Desc || !n.Columns[k.Col].NotNull || after[i] == nil {
			simple = false
		}
	}
	if simple {
		cols := make([]string, len(key))
		ps := make([]string, len(key))
		for i, k := range key {
			cols[i] = colRef(n.Columns[k.Col].Name)
			ps[i] = param(i)
		}
		return fmt.Sprintf("(%s) > (%s)", strings.Join(cols, ", "), strings.Join(ps, ", ")), args
	}
	var ors []string
	for i := range key {
		var ands []string
		for j := 0; j < i; j++ {
			ref := colRef(n.Columns[key[j].Col].Name)
			if after[j] == nil {
				ands = append(ands, ref+" IS NULL")
			} else {
				ands = append(ands, ref+" = "+param(j))
			}
		}
		ref := colRef(n.Columns[key[i].Col].Name)
		switch {
		case !key[i].Desc && after[i] == nil:
			continue // nothing comes after NULL ascending (NULLS LAST)
		case !key[i].Desc:
			ands = append(ands, fmt.Sprintf("(%s > %s OR %s IS NULL)", ref, param(i), ref))
		case after[i] == nil:
			ands = append(ands, ref+" IS NOT NULL")
		default:
			ands = append(ands, fmt.Sprintf("%s < %s", ref, param(i)))
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	if len(ors) == 0 {
		return "false", args
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}

// orderList is a relation's order, made total (tieBreak).
func orderList(n *mappings.Node) []string {
	var out []string
	for _, o := range n.Order {
		out = append(out, orderExpr(colRef(n.Columns[o.Col].Name), o.Desc))
	}
	return append(out, tieBreak(n.Table, "t")...)
}

// tieBreak orders the rows of table t (alias q) that the mapping's order
// leaves tied, so that which rows a limit, an object embed or a lookup
// picks, and the order of an array, never depend on where rows sit in
// the table: by the primary key; for a table without one (and views,
// materialized views, foreign tables), by every column of the table in
// column order, each compared by its text form in the "C" collation
// (values PostgreSQL's ordering calls equal but that print differently,
// numeric 1.0 and 1.00, citext 'A' and 'a', are ordered too). Rows tied
// then are equal in every column, so which comes first cannot show.
// docs/source.md states the rule ("Order of rows").
func tieBreak(t *mappings.Table, q string) []string {
	var out []string
	for _, k := range t.PrimaryKey {
		out = append(out, qualRef(q, k))
	}
	if len(out) > 0 {
		return out
	}
	for _, c := range t.Columns {
		out = append(out, qualRef(q, c.Name)+`::pg_catalog.text COLLATE "C"`)
	}
	return out
}

// relatedQuery fetches the rows of relation n for a set of parent keys
// given as parallel text arrays, one per join column. Rows come grouped by
// key, each group in the relation's order.
func relatedQuery(n *mappings.Node) string {
	keys := keyRefs(n)
	types := n.ParamTypes
	filter := ""
	if n.Filter != "" {
		filter = " AND (" + n.Filter + ")"
	}
	if n.Kind == mappings.NodeAggregate {
		exprs, pos := keySelects(n)
		return fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s%s GROUP BY %s",
			aggregateExpr(n), strings.Join(exprs, ", "), fromClause(n), inKeySet(keys, types), filter, strings.Join(pos, ", "))
	}
	order := orderList(n)
	if n.Limit > 0 {
		// A subset: the first Limit rows per parent, through the index on
		// the join columns.
		unnest, names, casts := keyArrays(types)
		cond := make([]string, len(keys))
		for i := range keys {
			cond[i] = fmt.Sprintf("%s = p.%s", keys[i], casts[i])
		}
		return fmt.Sprintf("SELECT x.* FROM unnest(%s) WITH ORDINALITY AS p(%s, ord) CROSS JOIN LATERAL (SELECT %s, row_number() OVER (ORDER BY %s) AS denorm_rn FROM %s WHERE %s%s ORDER BY %s LIMIT %d) AS x ORDER BY p.ord, x.denorm_rn",
			strings.Join(unnest, ", "), strings.Join(names, ", "), selectList(n), strings.Join(order, ", "),
			fromClause(n), strings.Join(cond, " AND "), filter, strings.Join(order, ", "), n.Limit)
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s%s ORDER BY %s",
		selectList(n), fromClause(n), inKeySet(keys, types), filter, strings.Join(append(groupOrder(n), order...), ", "))
}

// groupOrder orders n's rows by the values their join key is grouped by
// (see relation): the rows of one parent come together, in n's order
// after it.
func groupOrder(n *mappings.Node) []string {
	refs := keyRefs(n)
	out := make([]string, len(n.JoinCols))
	for i, c := range n.JoinCols {
		if c >= len(n.Columns) {
			out[i] = strconv.Itoa(c + 1) // a key column PostgreSQL computed
		} else {
			out[i] = refs[i]
		}
	}
	return out
}

// equalButDifferent are the types whose values PostgreSQL may call equal
// while they print differently (numeric 1.0 and 1.00, -0 and 0, citext
// 'A' and 'a', interval '1 day' and '24:00:00'): which one min or max
// gives depends on the order the rows come in.
var equalButDifferent = map[string]bool{"numeric": true, "float4": true, "float8": true, "citext": true, "interval": true}

// aggregateExpr is the aggregate call of aggregate node n. Sums and
// averages of real, double precision and interval values are exact
// (exactSum): PostgreSQL's own add in the order the rows come and end the
// query on an overflow. Min and max of a type with equal values that
// print differently give the first of them in the table's tie-break
// order (its primary key, or every column: tieBreak), whatever plan
// PostgreSQL picks and wherever the rows sit.
func aggregateExpr(n *mappings.Node) string {
	arg := "*"
	if n.Agg.Column != "" {
		arg = colRef(n.Agg.Column)
	}
	if n.Agg.Column != "" && (n.Agg.Fn == "sum" || n.Agg.Fn == "avg") {
		if src := n.Table.Column(n.Agg.Column); src != nil {
			if e, ok := exactSum(n.Agg.Fn, arg, src.TypeName); ok {
				return e
			}
		}
	}
	order := ""
	t := n.Columns[0].TypeName
	switch {
	case (n.Agg.Fn == "min" || n.Agg.Fn == "max") && equalButDifferent[t]:
		// Of values equal to PostgreSQL that print differently, min and
		// max keep the last one they are given: given in the reverse
		// tie-break order, the first one in it.
		desc := tieBreak(n.Table, "t")
		for i := range desc {
			desc[i] += " DESC"
		}
		order = " ORDER BY " + strings.Join(desc, ", ")
	}
	agg := fmt.Sprintf("%s(%s%s)", n.Agg.Fn, arg, order)
	if c := n.Columns[0]; !nativeTypes[c.TypeName] {
		// min/max of an enum, inet, time..., sum/avg of an interval or
		// money: read as the type's text, as SelectExpr reads a column of
		// it (Convert expects that)
		agg = "(" + agg + ")::pg_catalog.text"
	}
	return agg
}

// Sums and averages of floating point and interval values, exactly.
//
// PostgreSQL adds real and double precision values one by one in
// floating point, in whatever order the rows come (so the last digits
// depend on the plan), and ends the whole query ("value out of range:
// overflow", "interval out of range") when a partial sum overflows, also
// when the final one would not. Here the values are added exactly, in
// NUMERIC, and rounded once when read (Convert): a float sum or average
// is the value nearest to the exact one (NaN and ±Infinity as
// PostgreSQL's float arithmetic gives them), whatever the order; a
// result beyond the type's range rejects the row of the document that
// would hold it, in words, and the run goes on.
//
// The SQL gives text: for a float sum, NaN, Infinity, -Infinity or the
// exact sum of the values' shortest decimals (extra_float_digits = 1);
// for an average, the same sum, "/" and the count; for an interval sum,
// the interval of the exact sums of its months, days and microseconds
// (PostgreSQL adds the three apart), built by make_interval from parts
// that cannot overflow, or intervalOverflow when a sum is beyond its
// field's range; an interval average divides that sum by the count as
// PostgreSQL's avg does (interval_div).
func exactSum(fn, arg, typ string) (string, bool) {
	switch typ {
	case "float4", "float8":
		special := func(v string) string { return fmt.Sprintf("bool_or(%s = '%s')", arg, v) }
		finite := fmt.Sprintf("sum(%s::pg_catalog.text::pg_catalog.numeric) FILTER (WHERE %s NOT IN ('Infinity', '-Infinity', 'NaN'))", arg, arg)
		value := finite + "::pg_catalog.text"
		if fn == "avg" {
			value = fmt.Sprintf("%s::pg_catalog.text || '/' || count(%s)::pg_catalog.text", finite, arg)
		}
		return fmt.Sprintf("CASE WHEN count(%[1]s) = 0 THEN NULL WHEN %[2]s OR (%[3]s AND %[4]s) THEN 'NaN' WHEN %[3]s THEN 'Infinity' WHEN %[4]s THEN '-Infinity' ELSE %[5]s END",
			arg, special("NaN"), special("Infinity"), special("-Infinity"), value), true
	case "interval":
		months := fmt.Sprintf("sum(extract(year FROM %[1]s)::pg_catalog.numeric * 12 + extract(month FROM %[1]s)::pg_catalog.numeric)", arg)
		days := fmt.Sprintf("sum(extract(day FROM %s)::pg_catalog.numeric)", arg)
		micros := fmt.Sprintf("sum(extract(hour FROM %[1]s)::pg_catalog.numeric * 3600000000 + extract(minute FROM %[1]s)::pg_catalog.numeric * 60000000 + extract(microseconds FROM %[1]s)::pg_catalog.numeric)", arg)
		hours := "trunc(" + micros + " / 3600000000)"
		total := fmt.Sprintf("make_interval(months => %[1]s::int4, days => %[2]s::int4) + make_interval(hours => trunc(%[3]s / 2)::int4) + make_interval(hours => (%[3]s - trunc(%[3]s / 2))::int4, secs => ((%[4]s - %[3]s * 3600000000) / 1000000)::float8)",
			months, days, hours, micros)
		if fn == "avg" {
			total = fmt.Sprintf("(%s) / count(%s)::float8", total, arg)
		}
		return fmt.Sprintf("CASE WHEN count(%[1]s) = 0 THEN NULL WHEN %[2]s NOT BETWEEN -2147483648 AND 2147483647 OR %[3]s NOT BETWEEN -2147483648 AND 2147483647 OR %[4]s NOT BETWEEN -9223372036854775808 AND 9223372036854775807 THEN '%[5]s' ELSE (%[6]s)::pg_catalog.text END",
			arg, months, days, micros, intervalOverflow, total), true
	}
	return "", false
}

// intervalOverflow is exactSum's text for an interval sum beyond an
// interval's range (no interval prints so).
const intervalOverflow = "out of range"

// inKeySet is the condition "the values refs (of SQL types types) are one
// of the keys given as parallel text arrays $1, $2, ...", each text cast
// to its column's type by PostgreSQL, so keys of any type travel as text.
func inKeySet(refs, types []string) string {
	unnest, names, casts := keyArrays(types)
	return fmt.Sprintf("(%s) IN (SELECT %s FROM unnest(%s) AS p(%s))",
		strings.Join(refs, ", "), strings.Join(casts, ", "), strings.Join(unnest, ", "), strings.Join(names, ", "))
}

// keyArrays are the SQL pieces reading keys given as parallel text
// arrays, one per column of types types: the arrays ($1::text[], ...) for
// unnest, the names of their columns (k0, ...) and each name cast to its
// type (k0::int4, ...).
func keyArrays(types []string) (unnest, names, casts []string) {
	for i, t := range types {
		unnest = append(unnest, fmt.Sprintf("$%d::text[]", i+1))
		names = append(names, fmt.Sprintf("k%d", i))
		casts = append(casts, fmt.Sprintf("k%d::%s", i, t))
	}
	return unnest, names, casts
}

// textParam renders a key value as PostgreSQL input text, so keys of any
// type travel as text[] parameters and are cast back in SQL.
func textParam(v any) (string, error) {
	switch x := v.(type) {
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case string:
		return x, nil
	case transform.Decimal:
		return string(x), nil
	case float64:
		switch {
		case math.IsNaN(x):
			return "NaN", nil
		case math.IsInf(x, 1):
			return "Infinity", nil
		case math.IsInf(x, -1):
			return "-Infinity", nil
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.999999Z07:00"), nil
	case transform.UUID:
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16]), nil
	case transform.Binary:
		return `\x` + hex.EncodeToString(x), nil
	case transform.Invalid:
		if x.Text != "" {
			return x.Text, nil
		}
		return "", x.Err
	case nil:
		return "", fmt.Errorf("key value is NULL")
	}
	return "", fmt.Errorf("a %T cannot be a key", v)
}

// KeyOf is the stream position of a root row of plan (see Key).
func KeyOf(plan *mappings.CollectionPlan, row []any) (Key, error) {
	key := plan.StreamOrder()
	cols := make([]int, len(key))
	for i, k := range key {
		cols[i] = k.Col
	}
	return keyOf(plan.Root, row, cols)
}

// keyOf is the Key of the values at cols of a row of n.
func keyOf(n *mappings.Node, row []any, cols []int) (Key, error) {
	out := make(Key, len(cols))
	for i, c := range cols {
		if row[c] == nil {
			continue
		}
		s, err := textParam(row[c])
		if err != nil {
			return nil, fmt.Errorf("key column %q: %w", n.Columns[c].Name, err)
		}
		out[i] = &s
	}
	return out, nil
}
