package extract

// Trace rules: where a changed row sits in the documents of each
// collection entry that reads its table (mappings.Dependents), as the
// columns of the row whose values, old and new, name the rows of the
// enclosing node that hold it - the starting tuple of a Trace. Sync's
// fan-out traces changes by them; the replica identity a table needs for
// logical sync (IdentityNeeds, CheckLogical) is every column they read.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// TraceRule says how a changed row of one table reaches the documents of
// one collection entry: the values of the row's columns Cols are the
// trace's starting tuple, column for column with From.Columns.
type TraceRule struct {
	Entry int
	From  TraceFrom
	Cols  []string
	// ID names the rule: two places giving the same rule are one.
	ID string
}

// TraceRules are a plan's rules, by table ("schema.table"), and by table
// the columns the plan reads (nodes' columns, join and link columns): a
// change of their definition is one sync cannot follow.
type TraceRules struct {
	Rules map[string][]TraceRule
	Used  map[string][]string
	// Opaque are the tables a node reads with a filter or an sql: field,
	// whose columns Used cannot list: any change of their rows may
	// matter.
	Opaque map[string]bool
}

// RulesOf returns plan's trace rules.
func RulesOf(plan *mappings.Plan) *TraceRules {
	f := &TraceRules{Rules: map[string][]TraceRule{}, Used: map[string][]string{}, Opaque: map[string]bool{}}
	for _, t := range plan.Tables() {
		q := t.QualifiedName()
		for _, d := range plan.Dependents(q) {
			r := ruleFor(d)
			r.ID = fmt.Sprintf("%d %s <- %s", r.Entry, r.From, strings.Join(r.Cols, ","))
			if !slices.ContainsFunc(f.Rules[q], func(o TraceRule) bool { return o.ID == r.ID }) {
				f.Rules[q] = append(f.Rules[q], r)
			}
			f.use(q, r.Cols...)
			n := d.Node
			if d.Through {
				for _, p := range n.Through.On {
					f.use(q, p[1])
				}
				continue
			}
			for _, c := range n.Columns {
				if n.Kind != mappings.NodeAggregate {
					f.use(q, c.Name)
				}
				if c.SQL != "" {
					f.Opaque[q] = true
				}
			}
			if n.Filter != "" {
				f.Opaque[q] = true
			}
			if n.Agg != nil && n.Agg.Column != "" {
				f.use(q, n.Agg.Column)
			}
			if n.Through == nil {
				for _, c := range n.JoinKeyCols {
					f.use(q, c.Name)
				}
			}
		}
	}
	return f
}

func (f *TraceRules) use(table string, cols ...string) {
	for _, c := range cols {
		if !slices.Contains(f.Used[table], c) {
			f.Used[table] = append(f.Used[table], c)
		}
	}
}

// ruleFor is the rule of one place a table is read.
func ruleFor(d mappings.Dependent) TraceRule {
	n := d.Node
	r := TraceRule{Entry: d.Entry}
	switch {
	case n.Parent == nil:
		// A root row: its own key (a bucket collection: its parent's).
		for _, c := range KeyColumns(d.Collection) {
			r.Cols = append(r.Cols, n.Columns[c].Name)
		}
		r.From = TraceFrom{Node: n, Columns: r.Cols}
	case d.Through || n.Through == nil:
		// A row of the node (or of its join table) names the parent rows
		// whose ParentCols equal its join key.
		var par []string
		for i, jc := range n.JoinCols {
			col := joinKeyColumn(n, jc)
			r.Cols = append(r.Cols, col.Name)
			par = append(par, n.Parent.Columns[n.ParentCols[i]].Name)
		}
		r.From = TraceFrom{Node: n.Parent, Columns: par}
	default:
		// A row of a node reached through a join table names the join
		// table rows that link it: the trace starts there.
		var jcols []string
		for _, p := range n.Through.On {
			r.Cols = append(r.Cols, p[0])
			jcols = append(jcols, p[1])
		}
		r.From = TraceFrom{Node: n, Through: true, Columns: jcols}
	}
	return r
}

// joinKeyColumn is the column behind value i of a row of n: one of its
// Columns, or of its JoinKeyCols (a join table's, or an aggregate's group
// columns).
func joinKeyColumn(n *mappings.Node, i int) mappings.Column {
	if i < len(n.Columns) {
		return n.Columns[i]
	}
	return n.JoinKeyCols[i-len(n.Columns)]
}

// IdentityNeeds lists, by table, the columns whose old values the change
// stream must carry for sync to trace updates and deletes: every column
// a rule reads.
func IdentityNeeds(plan *mappings.Plan) map[string][]string {
	out := map[string][]string{}
	for t, rs := range RulesOf(plan).Rules {
		for _, r := range rs {
			for _, c := range r.Cols {
				if !slices.Contains(out[t], c) {
					out[t] = append(out[t], c)
				}
			}
		}
	}
	return out
}

// UntraceableError: the mapping has filters that logical sync cannot
// follow.
type UntraceableError struct {
	Filters []UntraceableFilter
}

func (e *UntraceableError) Error() string {
	var b []byte
	for i, f := range e.Filters {
		if i > 0 {
			b = append(b, "; "...)
		}
		b = fmt.Appendf(b, "%s: filter %q: %s", f.Node.Path, f.Node.Filter, f.Why)
	}
	return "logical sync cannot follow these filters (" + string(b) + "): use --method diff, which rebuilds every document each pass"
}

// CheckLogical checks that logical sync can follow plan: the server
// streams changes (CheckServer: wal_level = logical), every filter is
// traceable (UntraceableFilters, read in snap: an *UntraceableError),
// and every table's replica identity gives the old values the trace
// rules read (read on the source: a *ReplicaIdentityError).
func CheckLogical(ctx context.Context, snap *Snapshot, lg *Logical, plan *mappings.Plan) error {
	if err := lg.CheckServer(ctx); err != nil {
		return err
	}
	bad, err := UntraceableFilters(ctx, snap, plan)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return &UntraceableError{Filters: bad}
	}
	needs := IdentityNeeds(plan)
	tables := make([]string, 0, len(needs))
	for t := range needs {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	ids, err := lg.ReplicaIdentity(ctx, tables)
	if err != nil {
		return err
	}
	var short []ReplicaIdentity
	for i, id := range ids {
		if !id.Covers(needs[tables[i]]...) {
			id.Needs = needs[tables[i]]
			short = append(short, id)
		}
	}
	if len(short) > 0 {
		return &ReplicaIdentityError{Tables: short, Why: "sync needs the old values of the columns that place a row in its documents (join and key columns), to rebuild the documents a row leaves when it is updated or deleted"}
	}
	return nil
}
