package extract

// Fan-out predicted from the data: for every table a mapping reads, how
// many documents one change of a row makes sync rewrite, as p50, p99, max
// and mean over the table's rows, in total and per place the mapping reads
// the table. It follows sync's own trace (fanrules.go, trace.go): a
// changed row names, by each rule of its table, the start tuple of a trace
// whose join path leads up to the root keys; so here, per rule, the same
// join path is grouped by the start tuple, counting the distinct root keys
// each tuple reaches (one GROUP BY per rule), and the table's rows are
// joined to those counts, summed over the rules, and ranked by
// percentile_disc. One statement per table, set-wise, never a query per
// row nor a row held here; PostgreSQL sorts for the percentiles within
// work_mem, spilling to disk beyond.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// PredictFanout computes, in q's snapshot, the fan-out of every table plan
// reads (plan.Tables() order). Like sync's trace, it applies no filter on
// the way up: a row a filter leaves out still names the documents sync
// rebuilds for it.
func PredictFanout(ctx context.Context, q Querier, plan *mappings.Plan) ([]mappings.TableFanout, error) {
	var out []mappings.TableFanout
	for _, t := range plan.Tables() {
		tf, err := predictTable(ctx, q, plan, t)
		if err != nil {
			return nil, fmt.Errorf("predict the fan-out of %s: %w", t.QualifiedName(), err)
		}
		if tf != nil {
			out = append(out, *tf)
		}
	}
	return out, nil
}

// fanRule is one trace rule of a table and the places that give it.
type fanRule struct {
	rule   TraceRule
	cp     *mappings.CollectionPlan
	places []int
}

func predictTable(ctx context.Context, q Querier, plan *mappings.Plan, table *mappings.Table) (*mappings.TableFanout, error) {
	qn := table.QualifiedName()
	deps := plan.Dependents(qn)
	if len(deps) == 0 {
		return nil, nil
	}
	tf := &mappings.TableFanout{Table: qn}
	var rules []*fanRule
	for _, d := range deps {
		r := ruleFor(d)
		r.ID = fmt.Sprintf("%d %s <- %s", r.Entry, r.From, strings.Join(r.Cols, ","))
		tf.Places = append(tf.Places, mappings.FanoutPlace{Collection: d.Collection.Name, Node: d.Node.Path, How: placeHow(d), Columns: placeColumns(d, r, table)})
		i := slices.IndexFunc(rules, func(o *fanRule) bool { return o.rule.ID == r.ID })
		if i < 0 {
			rules = append(rules, &fanRule{rule: r, cp: d.Collection})
			i = len(rules) - 1
		}
		rules[i].places = append(rules[i].places, len(tf.Places)-1)
	}
	sql, err := fanoutStatement(table, rules)
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	figs := make([]mappings.FanoutFigures, len(rules)+1)
	dest := []any{&tf.Rows}
	pcts := make([][]int64, len(figs))
	for i := range figs {
		dest = append(dest, &pcts[i], &figs[i].Max, &figs[i].Mean)
	}
	found := false
	for rows.Next() {
		found = true
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("the fan-out statement returned no row")
	}
	for i := range figs {
		if len(pcts[i]) == 2 {
			figs[i].P50, figs[i].P99 = pcts[i][0], pcts[i][1]
		}
	}
	tf.FanoutFigures = figs[0]
	for i, r := range rules {
		for _, p := range r.places {
			tf.Places[p].FanoutFigures = figs[i+1]
		}
	}
	return tf, nil
}

// fanoutStatement is the statement of one table: a CTE per rule counting
// the root keys each start tuple reaches, the table's rows joined to them
// (f<i>: the documents a row reaches by rule i; f: their sum), and the
// figures of f and of each f<i>.
func fanoutStatement(table *mappings.Table, rules []*fanRule) (string, error) {
	var (
		ctes, joins, exprs []string
	)
	for i, fr := range rules {
		r, cp := fr.rule, fr.cp
		keyNames := make([]string, len(KeyColumns(cp)))
		for j, c := range KeyColumns(cp) {
			keyNames[j] = cp.Root.Columns[c].Name
		}
		own := make([]string, len(r.Cols))
		for j, c := range r.Cols {
			own[j] = qualRef("t", c)
		}
		if r.From.Node == cp.Root && !r.From.Through && permutation(r.From.Columns, keyNames) != nil {
			// A root row: its own document (a bucket's parent), when its
			// key is not NULL.
			nn := make([]string, len(own))
			for j, o := range own {
				nn[j] = o + " IS NOT NULL"
			}
			exprs = append(exprs, fmt.Sprintf("(CASE WHEN %s THEN 1 ELSE 0 END)::int8", strings.Join(nn, " AND ")))
			continue
		}
		types, err := r.From.types()
		if err != nil {
			return "", err
		}
		fromSQL, refs, selected := tracePath(r.From, keyNames)
		name := fmt.Sprintf("c%d", i)
		ks := make([]string, len(refs))
		on := make([]string, len(refs))
		var nn []string
		for j, ref := range refs {
			ks[j] = fmt.Sprintf("%s AS k%d", ref, j)
			nn = append(nn, ref+" IS NOT NULL")
			v := own[j]
			if c := table.Column(r.Cols[j]); c == nil || c.Type != types[j] {
				// As sync gives it: the row's value as text, cast to the
				// start column's type.
				v = fmt.Sprintf("(%s::text)::%s", v, types[j])
			}
			on[j] = fmt.Sprintf("%s.k%d = %s", name, j, v)
		}
		for _, s := range selected {
			nn = append(nn, s+" IS NOT NULL")
		}
		key := selected[0]
		if len(selected) > 1 {
			key = "ROW(" + strings.Join(selected, ", ") + ")"
		}
		groups := make([]string, len(refs))
		for j := range refs {
			groups[j] = fmt.Sprint(j + 1)
		}
		ctes = append(ctes, fmt.Sprintf("%s AS (SELECT %s, count(DISTINCT %s) AS n FROM %s WHERE %s GROUP BY %s)",
			name, strings.Join(ks, ", "), key, fromSQL, strings.Join(nn, " AND "), strings.Join(groups, ", ")))
		joins = append(joins, fmt.Sprintf("LEFT JOIN %s ON %s", name, strings.Join(on, " AND ")))
		exprs = append(exprs, fmt.Sprintf("coalesce(%s.n, 0)", name))
	}
	inner := make([]string, len(exprs)+1)
	inner[0] = "(" + strings.Join(exprs, " + ") + ") AS f"
	for i, e := range exprs {
		inner[i+1] = fmt.Sprintf("%s AS f%d", e, i)
	}
	figures := func(f string) string {
		return fmt.Sprintf("coalesce(percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY %[1]s), ARRAY[0, 0]::int8[]), coalesce(max(%[1]s), 0)::int8, coalesce(avg(%[1]s), 0)::float8", f)
	}
	outer := []string{"count(*)::int8", figures("f")}
	for i := range exprs {
		outer = append(outer, figures(fmt.Sprintf("f%d", i)))
	}
	var with string
	if len(ctes) > 0 {
		with = "WITH " + strings.Join(ctes, ", ") + " "
	}
	return fmt.Sprintf("%sSELECT %s FROM (SELECT %s FROM %s AS t %s) AS x",
		with, strings.Join(outer, ", "), strings.Join(inner, ", "), tableRef(table), strings.Join(joins, " ")), nil
}

// placeHow says how a place uses its table's rows.
func placeHow(d mappings.Dependent) string {
	n := d.Node
	switch {
	case d.Through:
		return "join table of"
	case n.Parent == nil && d.Collection.Bucket != nil:
		return "bucket rows of"
	case n.Parent == nil:
		return "root rows of"
	}
	switch n.Kind {
	case mappings.NodeEmbed:
		if n.Object {
			return "copied into"
		}
		return "embedded in"
	case mappings.NodeLookup:
		return "copied by lookup into"
	case mappings.NodeIds:
		return "listed as ids in"
	case mappings.NodeAggregate:
		return "aggregated into"
	}
	return "read by"
}

// placeColumns are the table's columns a place reads (as RulesOf counts
// them) and the columns its rule reads.
func placeColumns(d mappings.Dependent, r TraceRule, table *mappings.Table) []string {
	var cols []string
	use := func(c string) {
		if table.Column(c) != nil && !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	n := d.Node
	if d.Through {
		for _, p := range n.Through.On {
			use(p[1])
		}
	} else {
		for _, c := range n.Columns {
			if n.Kind != mappings.NodeAggregate {
				use(c.Name)
			}
		}
		if n.Agg != nil && n.Agg.Column != "" {
			use(n.Agg.Column)
		}
	}
	for _, c := range r.Cols {
		use(c)
	}
	return cols
}
