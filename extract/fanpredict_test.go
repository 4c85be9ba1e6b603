package extract

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
)

// TestPredictFanout: the fan-out PredictFanout counts set-wise is, table
// by table and place by place, what sync's own trace (Trace, the path
// fan-out takes at run time) gives row by row: for every row of every
// table the coverage fixture's mappings read (roots, buckets, embeds
// with limits, lookups, aggregates, relations through a join table and
// the join table itself, an inheritance parent, a partitioned table,
// tables without a primary key, link join tables), each rule's starting
// tuple is traced alone and its keys counted; the figures of those counts
// (p50 and p99 as percentile_disc, max, mean) must equal the predicted
// ones. Here a trace per row is the point: the reference is the slow,
// obvious way.
func TestPredictFanout(t *testing.T) {
	db := testenv.PostgresDB(t, "testdata/coverage/fixture.sql")
	ctx := context.Background()
	_, snap := openSnapshot(t, ctx, db)
	for _, name := range []string{"main", "subsets", "links"} {
		t.Run(name, func(t *testing.T) {
			plan := coveragePlan(t, ctx, snap, name)
			got, err := PredictFanout(ctx, snap, plan)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(plan.Tables()) {
				t.Errorf("%d tables predicted, the plan reads %d", len(got), len(plan.Tables()))
			}
			nonzero := 0
			for _, tf := range got {
				want, places := tracedFanout(t, ctx, snap, plan, tf.Table)
				if tf.Rows != want.rows || !sameFigures(tf.FanoutFigures, want.figs) {
					t.Errorf("%s: predicted %d rows %+v; traced row by row: %d rows %+v", tf.Table, tf.Rows, tf.FanoutFigures, want.rows, want.figs)
				}
				if len(tf.Places) != len(places) {
					t.Fatalf("%s: %d places predicted, %d dependents", tf.Table, len(tf.Places), len(places))
				}
				for i, p := range tf.Places {
					if !sameFigures(p.FanoutFigures, places[i]) {
						t.Errorf("%s place %s (%s): predicted %+v; traced %+v", tf.Table, p.Node, p.How, p.FanoutFigures, places[i])
					}
					if len(p.Columns) == 0 || p.How == "" || p.Collection == "" {
						t.Errorf("%s place %+v: no columns, how or collection", tf.Table, p)
					}
				}
				if tf.Max > 0 {
					nonzero++
				}
				t.Logf("%s: %d rows, p50 %d p99 %d max %d mean %.2f", tf.Table, tf.Rows, tf.P50, tf.P99, tf.Max, tf.Mean)
			}
			if nonzero == 0 {
				t.Error("every table predicted to rewrite no document")
			}
		})
	}
}

type traced struct {
	rows int64
	figs mappings.FanoutFigures
}

// tracedFanout traces each row of table alone by each of its rules, and
// returns the figures of the per-row sums over distinct rules, and of
// each dependent's rule.
func tracedFanout(t *testing.T, ctx context.Context, snap *Snapshot, plan *mappings.Plan, table string) (traced, []mappings.FanoutFigures) {
	t.Helper()
	deps := plan.Dependents(table)
	var tb *mappings.Table
	var rules []TraceRule
	var ruleOf []int
	for _, d := range deps {
		if d.Through {
			tb = d.Node.Through.Table
		} else {
			tb = d.Node.Table
		}
		r := ruleFor(d)
		r.ID = fmt.Sprintf("%d %s <- %s", r.Entry, r.From, strings.Join(r.Cols, ","))
		i := slices.IndexFunc(rules, func(o TraceRule) bool { return o.ID == r.ID })
		if i < 0 {
			rules = append(rules, r)
			i = len(rules) - 1
		}
		ruleOf = append(ruleOf, i)
	}
	// Every row's values of every rule's columns, as text.
	var cols []string
	for _, r := range rules {
		for _, c := range r.Cols {
			cols = append(cols, qualRef("t", c)+"::text")
		}
	}
	rows, err := snap.Query(ctx, fmt.Sprintf("SELECT %s FROM %s AS t", strings.Join(cols, ", "), tableRef(tb)))
	if err != nil {
		t.Fatal(err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]*string, error) {
		vals := make([]*string, len(cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		return vals, r.Scan(ptrs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	perRule := make([][]int64, len(rules))
	var sums []int64
	for _, vals := range all {
		var sum int64
		at := 0
		for i, r := range rules {
			tuple := Key(vals[at : at+len(r.Cols)])
			at += len(r.Cols)
			var n int64
			if err := Trace(ctx, snap, plan.Collections[r.Entry], r.From, []Key{tuple}, func(Key) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			perRule[i] = append(perRule[i], n)
			sum += n
		}
		sums = append(sums, sum)
	}
	places := make([]mappings.FanoutFigures, len(deps))
	for i := range deps {
		places[i] = figuresOf(perRule[ruleOf[i]])
	}
	return traced{rows: int64(len(all)), figs: figuresOf(sums)}, places
}

// figuresOf are p50 and p99 as percentile_disc gives them (the first
// value whose cumulative share reaches the fraction), the max and the
// mean.
func figuresOf(vals []int64) mappings.FanoutFigures {
	if len(vals) == 0 {
		return mappings.FanoutFigures{}
	}
	s := slices.Sorted(slices.Values(vals))
	disc := func(f float64) int64 { return s[max(0, int(math.Ceil(f*float64(len(s))))-1)] }
	var sum int64
	for _, v := range s {
		sum += v
	}
	return mappings.FanoutFigures{P50: disc(0.5), P99: disc(0.99), Max: s[len(s)-1], Mean: float64(sum) / float64(len(s))}
}

// sameFigures compares the figures, the mean (numeric's avg as float8 in
// PostgreSQL, a division here) to 1e-9.
func sameFigures(a, b mappings.FanoutFigures) bool {
	return a.P50 == b.P50 && a.P99 == b.P99 && a.Max == b.Max && math.Abs(a.Mean-b.Mean) < 1e-9
}
