package extract

import (
	"context"
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
// document values (see transform), in each node's Columns order.
//
// A Batch is immutable once returned and may be read from any goroutine.
type Batch struct {
	Roots   [][]any
	related map[*mappings.Node]map[string][][]any
}

// Related returns the rows of relation n joined to parent (a row of n's
// parent node), in the relation's order. It implements transform.Related.
func (b *Batch) Related(n *mappings.Node, parent []any) [][]any {
	m := b.related[n]
	if m == nil {
		return nil
	}
	k, ok := joinKey(parent, n.ParentCols)
	if !ok {
		return nil
	}
	return m[k]
}

// Reader reads one collection's rows batch by batch in _id order.
type Reader struct {
	snap      *Snapshot
	plan      *mappings.CollectionPlan
	batchSize int
	after     []string // last _id read, as text parameters
	done      bool
	// Queries counts the statements sent, for reports and tests.
	Queries int
}

// NewReader reads plan's collection from snap in batches of batchSize root
// rows. after, when not nil, is the text form of the last _id already
// handled: reading resumes after it.
func NewReader(snap *Snapshot, plan *mappings.CollectionPlan, batchSize int, after []string) *Reader {
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
	root := r.plan.Root
	sql, args := rootQuery(r.plan, r.after, r.batchSize)
	roots, err := r.read(ctx, root, sql, args)
	if err != nil {
		return nil, fmt.Errorf("extract %q after key %v: %w", root.Table.Name, r.after, err)
	}
	r.Queries++
	if len(roots) < r.batchSize {
		r.done = true
	}
	if len(roots) == 0 {
		return nil, io.EOF
	}
	b := &Batch{Roots: roots, related: map[*mappings.Node]map[string][][]any{}}
	last := roots[len(roots)-1]
	r.after = r.after[:0]
	for _, i := range r.plan.ID {
		s, err := textParam(last[i])
		if err != nil {
			return nil, err
		}
		r.after = append(r.after, s)
	}
	if err := r.children(ctx, b, root, roots); err != nil {
		return nil, err
	}
	return b, nil
}

// AfterKey is the text form of the last _id returned.
func (r *Reader) AfterKey() []string { return append([]string(nil), r.after...) }

// children fetches, set-wise, the rows of every relation of n for parents.
func (r *Reader) children(ctx context.Context, b *Batch, n *mappings.Node, parents [][]any) error {
	for _, c := range n.Children {
		keys := make([][]string, len(c.ParentCols))
		seen := map[string]bool{}
		for _, p := range parents {
			k, ok := joinKey(p, c.ParentCols)
			if !ok || seen[k] {
				continue
			}
			seen[k] = true
			for i, pc := range c.ParentCols {
				s, _ := textParam(p[pc])
				keys[i] = append(keys[i], s)
			}
		}
		m := map[string][][]any{}
		b.related[c] = m
		if len(seen) == 0 {
			continue
		}
		sql := relatedQuery(c)
		args := make([]any, len(keys))
		for i := range keys {
			args[i] = keys[i]
		}
		rows, err := r.read(ctx, c, sql, args)
		if err != nil {
			return fmt.Errorf("extract %q for %s: %w", c.Table.Name, c.Path, err)
		}
		r.Queries++
		for _, row := range rows {
			k, ok := joinKey(row, c.JoinCols)
			if ok {
				m[k] = append(m[k], row)
			}
		}
		if err := r.children(ctx, b, c, rows); err != nil {
			return err
		}
	}
	return nil
}

// read runs sql and converts every row of n to document values.
func (r *Reader) read(ctx context.Context, n *mappings.Node, sql string, args []any) ([][]any, error) {
	rows, err := r.snap.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		row := make([]any, len(n.Columns))
		for i := range n.Columns {
			v, err := Convert(n.Columns[i], vals[i], n.Numeric[i])
			if err != nil {
				return nil, fmt.Errorf("%s, column %q: %w", rowName(n, row, vals), n.Columns[i].Name, err)
			}
			row[i] = v
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func rowName(n *mappings.Node, _ []any, raw []any) string {
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

func tableRef(t *mappings.Table) string {
	return pgx.Identifier{t.Schema, t.Name}.Sanitize()
}

func colRef(c string) string { return "t." + pgx.Identifier{c}.Sanitize() }

func selectList(n *mappings.Node) string {
	parts := make([]string, len(n.Columns))
	for i, c := range n.Columns {
		parts[i] = SelectExpr(c, "t")
	}
	return strings.Join(parts, ", ")
}

// rootQuery is the keyset page query: rows after the last key, in key order.
func rootQuery(p *mappings.CollectionPlan, after []string, limit int) (string, []any) {
	n := p.Root
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s FROM %s AS t", selectList(n), tableRef(n.Table))
	var where []string
	if n.Filter != "" {
		where = append(where, "("+n.Filter+")")
	}
	var args []any
	keys := make([]string, len(p.ID))
	for i, c := range p.ID {
		keys[i] = colRef(n.Columns[c].Name)
	}
	if len(after) > 0 {
		ps := make([]string, len(after))
		for i, a := range after {
			args = append(args, a)
			ps[i] = fmt.Sprintf("$%d::text::%s", len(args), n.Columns[p.ID[i]].Type)
		}
		where = append(where, fmt.Sprintf("(%s) > (%s)", strings.Join(keys, ", "), strings.Join(ps, ", ")))
	}
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	fmt.Fprintf(&b, " ORDER BY %s LIMIT %d", strings.Join(keys, ", "), limit)
	return b.String(), args
}

// orderList is the relation's order, made total by the table's primary key.
func orderList(n *mappings.Node) []string {
	var out []string
	for _, o := range n.Order {
		s := colRef(n.Columns[o.Col].Name)
		if o.Desc {
			s += " DESC"
		}
		out = append(out, s)
	}
	for _, k := range n.Table.PrimaryKey {
		out = append(out, colRef(k))
	}
	return out
}

// relatedQuery fetches the rows of relation n for a set of parent keys
// given as parallel text arrays, one per join column.
func relatedQuery(n *mappings.Node) string {
	join := make([]string, len(n.JoinCols))
	unnest := make([]string, len(n.JoinCols))
	for i, c := range n.JoinCols {
		col := n.Columns[c]
		join[i] = colRef(col.Name)
		unnest[i] = fmt.Sprintf("$%d::text[]", i+1)
	}
	filter := ""
	if n.Filter != "" {
		filter = " AND (" + n.Filter + ")"
	}
	order := orderList(n)
	if n.Limit > 0 {
		// A subset: the first Limit rows per parent, through the index on
		// the join columns.
		cond := make([]string, len(n.JoinCols))
		pk := make([]string, len(n.JoinCols))
		for i, c := range n.JoinCols {
			col := n.Columns[c]
			pk[i] = fmt.Sprintf("k%d", i)
			cond[i] = fmt.Sprintf("%s = p.k%d::%s", join[i], i, col.Type)
		}
		return fmt.Sprintf("SELECT x.* FROM unnest(%s) WITH ORDINALITY AS p(%s, ord) CROSS JOIN LATERAL (SELECT %s, row_number() OVER (ORDER BY %s) AS denorm_rn FROM %s AS t WHERE %s%s ORDER BY %s LIMIT %d) AS x ORDER BY p.ord, x.denorm_rn",
			strings.Join(unnest, ", "), strings.Join(pk, ", "), selectList(n), strings.Join(order, ", "),
			tableRef(n.Table), strings.Join(cond, " AND "), filter, strings.Join(order, ", "), n.Limit)
	}
	casts := make([]string, len(n.JoinCols))
	for i, c := range n.JoinCols {
		casts[i] = fmt.Sprintf("k%d::%s", i, n.Columns[c].Type)
	}
	ks := make([]string, len(n.JoinCols))
	for i := range ks {
		ks[i] = fmt.Sprintf("k%d", i)
	}
	return fmt.Sprintf("SELECT %s FROM %s AS t WHERE (%s) IN (SELECT %s FROM unnest(%s) AS p(%s))%s ORDER BY %s",
		selectList(n), tableRef(n.Table), strings.Join(join, ", "), strings.Join(casts, ", "),
		strings.Join(unnest, ", "), strings.Join(ks, ", "), filter, strings.Join(append(join, order...), ", "))
}

// joinKey is the map key of a row's values at cols; ok is false when one is
// NULL (NULL joins nothing).
func joinKey(row []any, cols []int) (string, bool) {
	if len(cols) == 1 {
		s, err := textParam(row[cols[0]])
		return s, err == nil && row[cols[0]] != nil
	}
	var b strings.Builder
	for i, c := range cols {
		if row[c] == nil {
			return "", false
		}
		s, err := textParam(row[c])
		if err != nil {
			return "", false
		}
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(s)
	}
	return b.String(), true
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
	case nil:
		return "", fmt.Errorf("key value is NULL")
	}
	return "", fmt.Errorf("a %T cannot be a key", v)
}
