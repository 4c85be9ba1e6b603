package extract

// Tracing rows up to the documents that hold them, for sync: a changed row
// of a table a collection reads, given by some of its column values, is
// followed through every enclosing relation up to the root rows whose
// documents embed, count, list or look it up. One statement per call,
// set-wise over all the rows given (= ANY of text arrays, like the
// key-set reads), never a query per row. Relation filters are not applied
// on the way up: a row that a filter leaves out names documents that do
// not hold it, whose rebuild changes nothing, which costs a write but
// never misses a document.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// TraceFrom is where a trace starts: the rows of Node's table (or, with
// Through, of its join table) whose Columns hold one of the tuples given.
type TraceFrom struct {
	Node    *mappings.Node
	Through bool
	Columns []string
}

// table is the table the trace starts from.
func (f TraceFrom) table() *mappings.Table {
	if f.Through {
		return f.Node.Through.Table
	}
	return f.Node.Table
}

// String names the start for messages and map keys.
func (f TraceFrom) String() string {
	via := ""
	if f.Through {
		via = " (join table)"
	}
	return fmt.Sprintf("%s%s %s.(%s)", f.Node.Path, via, f.table().Name, strings.Join(f.Columns, ", "))
}

// types checks that the start's columns exist and returns their SQL
// types.
func (f TraceFrom) types() ([]string, error) {
	t := f.table()
	out := make([]string, len(f.Columns))
	for i, name := range f.Columns {
		c := t.Column(name)
		if c == nil {
			return nil, fmt.Errorf("trace from %s: table %s has no column %q", f.Node.Path, t.QualifiedName(), name)
		}
		out[i] = c.Type
	}
	return out, nil
}

// Trace calls fn with the key (the KeyColumns of plan, in text form: the
// _id columns, or a bucket collection's parent columns) of every root row
// of plan that holds, at any depth, a row from which the trace starts:
// each tuple of values is the text of the start's Columns (PostgreSQL
// input syntax, nil for NULL, which matches nothing). It reads snap, the
// current state: a key is given once per call, in no particular order.
// When the start is the root and its columns are the key columns, the
// tuples are the keys and nothing is read.
func Trace(ctx context.Context, snap *Snapshot, plan *mappings.CollectionPlan, from TraceFrom, tuples []Key, fn func(Key) error) error {
	tuples = slices.DeleteFunc(slices.Clone(tuples), func(k Key) bool { return slices.Contains(k, nil) })
	if len(tuples) == 0 {
		return nil
	}
	root := plan.Root
	keyNames := make([]string, len(KeyColumns(plan)))
	for i, c := range KeyColumns(plan) {
		keyNames[i] = root.Columns[c].Name
	}
	if from.Node == root && !from.Through {
		if perm := permutation(from.Columns, keyNames); perm != nil {
			seen := map[string]bool{}
			for _, t := range tuples {
				k := make(Key, len(perm))
				for i, j := range perm {
					k[i] = t[j]
				}
				if s := k.String(); !seen[s] {
					seen[s] = true
					if err := fn(k); err != nil {
						return err
					}
				}
			}
			return nil
		}
	}
	types, err := from.types()
	if err != nil {
		return err
	}
	sql := traceQuery(plan, from, keyNames, types)
	args := make([]any, len(from.Columns))
	for i := range from.Columns {
		col := make([]*string, len(tuples))
		for j, t := range tuples {
			if len(t) != len(from.Columns) {
				return fmt.Errorf("trace from %s: a tuple of %d values for %d columns", from, len(t), len(from.Columns))
			}
			col[j] = t[i]
		}
		args[i] = col
	}
	rows, err := snap.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("trace from %s: %w", from, err)
	}
	defer rows.Close()
	for rows.Next() {
		vals := make([]*string, len(keyNames))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("trace from %s: %w", from, err)
		}
		if err := fn(Key(vals)); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("trace from %s: %w", from, err)
	}
	return nil
}

// permutation returns, for each of want, its index in have, when have and
// want hold the same names; nil otherwise.
func permutation(have, want []string) []int {
	if len(have) != len(want) {
		return nil
	}
	out := make([]int, len(want))
	for i, w := range want {
		j := slices.Index(have, w)
		if j < 0 {
			return nil
		}
		out[i] = j
	}
	return out
}

// traceQuery is the statement of a trace: the start's rows, joined up
// through each enclosing node to the root, selecting the root's key
// columns as text. The last join is left out when the child's join
// columns are the root's key columns (the child holds the key).
func traceQuery(plan *mappings.CollectionPlan, from TraceFrom, keyNames, types []string) string {
	fromSQL, refs, selected := tracePath(from, keyNames)
	nulls := make([]string, len(selected))
	for i, s := range selected {
		nulls[i] = s + " IS NOT NULL"
	}
	return fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s AND %s",
		strings.Join(selected, ", "), fromSQL, inKeySet(refs, types), strings.Join(nulls, " AND "))
}

// tracePath is the join path of a trace (see traceQuery): the FROM
// clause (the start's table, joined up through each enclosing node),
// the start's Columns as qualified references, and the root's key
// columns as text expressions.
func tracePath(from TraceFrom, keyNames []string) (fromSQL string, refs, selected []string) {
	alias := 0
	next := func() string { alias++; return fmt.Sprintf("a%d", alias) }
	start := next()
	var joins []string
	fromSQL = tableRef(from.table()) + " AS " + start
	refs = make([]string, len(from.Columns))
	for i, c := range from.Columns {
		refs[i] = qualRef(start, c)
	}
	// cur is the node whose row is at hand (alias at); through says that
	// row is the node's join table row rather than the node's own.
	cur, at, through := from.Node, start, from.Through
	for {
		if cur.Parent == nil && !through {
			for _, k := range keyNames {
				selected = append(selected, qualRef(at, k)+"::text")
			}
			break
		}
		if !through && cur.Through != nil {
			// From the node's row to its join table's rows.
			j := next()
			on := make([]string, len(cur.Through.On))
			for i, p := range cur.Through.On {
				on[i] = fmt.Sprintf("%s = %s", qualRef(j, p[1]), qualRef(at, p[0]))
			}
			joins = append(joins, fmt.Sprintf("JOIN %s AS %s ON %s", tableRef(cur.Through.Table), j, strings.Join(on, " AND ")))
			at, through = j, true
		}
		// From the row (or join table row) at hand to the parent's rows:
		// the row's join key columns equal the parent's ParentCols.
		parent := cur.Parent
		child := make([]string, len(cur.JoinCols))
		par := make([]string, len(cur.JoinCols))
		for i, jc := range cur.JoinCols {
			col, _ := keyColumn(cur, jc)
			child[i] = col.Name
			par[i] = parent.Columns[cur.ParentCols[i]].Name
		}
		if parent.Parent == nil {
			if perm := permutation(par, keyNames); perm != nil {
				for _, j := range perm {
					selected = append(selected, qualRef(at, child[j])+"::text")
				}
				break
			}
		}
		p := next()
		on := make([]string, len(child))
		for i := range child {
			on[i] = fmt.Sprintf("%s = %s", qualRef(p, par[i]), qualRef(at, child[i]))
		}
		joins = append(joins, fmt.Sprintf("JOIN %s AS %s ON %s", tableRef(parent.Table), p, strings.Join(on, " AND ")))
		cur, at, through = parent, p, false
	}
	if len(joins) > 0 {
		fromSQL += " " + strings.Join(joins, " ")
	}
	return fromSQL, refs, selected
}
