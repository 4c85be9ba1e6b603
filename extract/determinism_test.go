package extract

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
)

// parallelRows is a table large enough for parallel plans once they are
// made cheap (the settings below, as a DBA's tuning might), with doubles
// of very different magnitudes: their sum depends on the order they are
// added in, stored in an order other than their primary key's (as
// updates, VACUUM FULL or CLUSTER leave rows), so that a scan's order is
// not the key order.
const parallelRows = `
CREATE TABLE grp (g int PRIMARY KEY);
INSERT INTO grp SELECT generate_series(1, 3);
CREATE TABLE big (id int PRIMARY KEY, g int NOT NULL, x float8 NOT NULL);
INSERT INTO big SELECT i, 1 + i % 3, (CASE WHEN i % 7 = 0 THEN 1e15 ELSE 1 END) * sin(i) FROM generate_series(1, 60000) i ORDER BY md5(i::text);
ANALYZE big;
`

// TestReadsAreNotParallel: with settings that make PostgreSQL plan the
// aggregate of a relation in parallel (a plain session shows it), denorm's
// snapshot plans it without workers - a parallel sum of doubles adds its
// partial sums in whichever order the workers finish - and its sums of
// doubles add in primary key order, so they equal that order's sum
// whatever the plan, and differ from another order's (the order matters).
func TestReadsAreNotParallel(t *testing.T) {
	db := testenv.PostgresDB(t)
	testenv.Exec(t, db, parallelRows)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := conn.Config().Database
	for _, set := range []string{"parallel_setup_cost = 0", "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0", "max_parallel_workers_per_gather = 2"} {
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET "+set); err != nil {
			t.Fatal(err)
		}
	}
	plain, err := pgx.Connect(ctx, db) // a new session: the settings apply
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	const unordered = "SELECT sum(x), g FROM big GROUP BY g"
	if plan := explain(t, ctx, plain, unordered); !strings.Contains(plan, "Gather") {
		t.Fatalf("the plain session does not plan in parallel: the test proves nothing\n%s", plan)
	}

	src, snap := openSnapshot(t, ctx, db)
	adopted, err := src.Adopt(ctx, snap.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer adopted.Close(ctx)
	for _, s := range []*Snapshot{snap, adopted} {
		if plan := explain(t, ctx, s.tx, unordered); strings.Contains(plan, "Gather") {
			t.Errorf("denorm's snapshot plans in parallel:\n%s", plan)
		}
	}

	f, err := mappings.Parse("sums.yaml", []byte(`version: 1
collections:
  - name: groups
    table: grp
    fields:
      - {name: total, aggregate: {fn: sum, table: big, join: {g: g}, column: x}}
      - {name: mean, aggregate: {fn: avg, table: big, join: {g: g}, column: x}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cp := resolveIn(t, ctx, snap, f).Collections[0]
	// PostgreSQL's own float sums depend on the order of the rows (the
	// data is made so); denorm's are exact: the sum of the values'
	// shortest decimals, rounded once (extract.exactSum), computed here
	// apart with big.Rat.
	rows, err := plain.Query(ctx, "SELECT g, sum(x ORDER BY id) <> sum(x ORDER BY id DESC) FROM big GROUP BY g")
	if err != nil {
		t.Fatal(err)
	}
	differs := false
	for rows.Next() {
		var g int32
		var d bool
		if err := rows.Scan(&g, &d); err != nil {
			t.Fatal(err)
		}
		differs = differs || d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !differs {
		t.Fatal("the sums do not depend on the order: the data proves nothing")
	}
	sums, counts := map[int32]*big.Rat{}, map[int32]int64{}
	if _, err := plain.Exec(ctx, "SET extra_float_digits = 1"); err != nil {
		t.Fatal(err)
	}
	rows, err = plain.Query(ctx, "SELECT g, x::text FROM big WHERE x IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var g int32
		var x string
		if err := rows.Scan(&g, &x); err != nil {
			t.Fatal(err)
		}
		r, ok := new(big.Rat).SetString(x)
		if !ok {
			t.Fatalf("%q", x)
		}
		if sums[g] == nil {
			sums[g] = new(big.Rat)
		}
		sums[g].Add(sums[g], r)
		counts[g]++
	}
	if err := rows.Err(); err != nil || len(sums) != 3 {
		t.Fatalf("%d groups, %v", len(sums), err)
	}
	want := map[int32][2]float64{}
	for g, sum := range sums {
		s, _ := sum.Float64()
		a, _ := new(big.Rat).Quo(sum, big.NewRat(counts[g], 1)).Float64()
		want[g] = [2]float64{s, a}
	}
	for _, setWise := range []bool{true, false} {
		for run := range 2 {
			r := NewReader(snap, cp, 2, nil)
			r.SetWise = setWise
			for {
				b, err := r.Next(ctx)
				if err != nil {
					break
				}
				for _, root := range b.Roots {
					g := root[0].(int32)
					var got [2]float64
					for i, c := range cp.Root.Children {
						got[i] = b.Related(c, root)[0][0].(float64)
					}
					if got != want[g] {
						t.Errorf("setwise=%v run %d: group %d: sum, avg %v, want (exact, rounded once) %v", setWise, run, g, got, want[g])
					}
				}
			}
			r.Close()
		}
	}
}

func explain(t *testing.T, ctx context.Context, q Querier, sql string) string {
	t.Helper()
	rows, err := q.Query(ctx, "EXPLAIN "+sql)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
