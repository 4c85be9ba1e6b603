package syncer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// TestFanoutPredicted: the fan-out plan and advise predict
// (extract.PredictFanout) is what sync measures. On every example mapping
// over seed.sql and on Pagila, a sample of each mapped table's rows is
// changed, one row per transaction - an update of a column the mapping
// reads that places no row (rotating over those columns, so each is
// changed), or, for a table whose mapped columns all place rows (a join
// table), a delete and an insert of the row as it was - and one `sync
// --once` pass applies them with batches of one change each (MaxChanges
// 1), so that the documents a batch rebuilds for a table
// (TableChanges.Documents) are those of one change. The measured
// documents per change must be within 2x of the predicted figure.
//
// The figure compared is the mean over the table's rows, not the p50: the
// measurement averages the fan-out of uniformly chosen rows (documents
// rebuilt divided by rows changed), whose expectation is the mean over the
// table's rows; the median of a skewed table (a language that every film
// has, five that none has: p50 0, mean 97) says nothing of that average.
// Small tables are changed whole (their measured mean is the mean itself);
// larger ones by a fixed sample, the rows in the md5 order of their table's
// name and ctid (the same rows in every run: a table's OID differs between
// runs, and ordering by it once drew 12 cities whose mean was 0.42 against
// 1.08): 48 rows, enough that a sample's mean stays near the table's, or 2
// when every row has the same fan-out (the mean is the max).
func TestFanoutPredicted(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	root := testenv.Root(t)
	seed := filepath.Join(root, "testdata", "examples", "seed.sql")
	cases := []struct {
		name    string
		mapping string
		sql     []string
	}{
		// Pagila on its first 150 customers (as the randomized rounds):
		// a change rebuilding a customer's bucket pages costs FerretDB
		// seconds on the whole database (a page is found by a scan).
		{"pagila", "pagila", []string{filepath.Join(root, "testdata", "pagila", "pagila-schema.sql"), filepath.Join(root, "testdata", "pagila", "pagila-data.sql"),
			filepath.Join(root, "testdata", "pagila", "churn-subset.sql")}},
	}
	for _, ex := range []string{"person", "blog", "portfolio", "portfolio-embedded", "publishing", "authors-books", "hybrid", "catalog"} {
		cases = append(cases, struct {
			name    string
			mapping string
			sql     []string
		}{ex, ex, []string{seed}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // their own databases, jobs and targets; Pagila takes most of the time
			db := testenv.LoadedDB(t, c.sql...)
			mapping := filepath.Join(root, "mappings", "examples", c.mapping+".yaml")
			plan, predicted, pass := fanoutSync(t, db, mapping)
			changes := changeSample(t, db, plan, predicted)
			st := pass()
			compared := 0
			for _, p := range predicted {
				got := st.Tables[p.Table]
				want, ok := changes[p.Table]
				if !ok {
					continue
				}
				if got == nil || got.Rows() == 0 {
					t.Logf("%s: %s changed no row the mapping reads (values NULL?); not compared", p.Table, want)
					continue
				}
				measured := got.PerChange()
				t.Logf("%s (%d rows; %s): predicted mean %.2f (p50 %d, p99 %d, max %d); measured %.2f documents per change (%d for %d changes)",
					p.Table, p.Rows, want, p.Mean, p.P50, p.P99, p.Max, measured, got.Documents, got.Rows())
				compared++
				switch {
				case p.Mean == 0 && measured == 0:
				case p.Mean == 0 || measured == 0 || measured > 2*p.Mean || measured < p.Mean/2:
					t.Errorf("%s: measured %.2f documents rebuilt per change, predicted mean %.2f: not within 2x", p.Table, measured, p.Mean)
				}
			}
			if compared == 0 || compared < len(changes)/2 {
				t.Errorf("compared %d tables of %d changed", compared, len(changes))
			}
		})
	}
}

// fanoutSync resolves mapping against db, predicts its fan-out and makes
// the initial copy of a logical job into a fresh target; pass runs one
// --once pass applying each change in a batch of its own.
func fanoutSync(t *testing.T, db, mapping string) (*mappings.Plan, []mappings.TableFanout, func() PassStats) {
	t.Helper()
	ctx := context.Background()
	testenv.Exec(t, db, identityFull)
	jobName := fmt.Sprintf("f%d_%d", os.Getpid(), testJobs.Add(1))
	snap, plan := snapshotPlan(t, db, mapping)
	predicted, err := extract.PredictFanout(ctx, snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	src := snap.Source()
	if err := snap.Close(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		lg, err := src.Logical(jobName)
		if err == nil {
			err = lg.Drop(context.Background())
		}
		if err != nil {
			t.Errorf("drop slot: %v", err)
		}
	})
	uri, _ := testenv.MongoDB(t)
	pass := func() PassStats {
		tg, err := load.Open(ctx, uri, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close(ctx)
		res, err := Sync(ctx, src, plan, tg, Options{Job: jobName, Mapping: mapping, Method: job.SyncLogical, MaxChanges: 1})
		if err != nil {
			t.Fatal(err)
		}
		return res.Total
	}
	if st := pass(); !st.Copy {
		t.Fatal("the first sync made no initial copy")
	}
	return plan, predicted, pass
}

// wholeBelow: tables with at most this many rows are changed whole;
// larger ones by sampleRows rows, or constantRows when every row has the
// same fan-out (mean = max).
const (
	wholeBelow   = 120
	sampleRows   = 48
	constantRows = 2
)

// changeSample changes a sample of every predicted table's rows, one row
// per transaction, and says, by table, what it changed.
func changeSample(t *testing.T, db string, plan *mappings.Plan, predicted []mappings.TableFanout) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	needs := extract.IdentityNeeds(plan)
	tables := map[string]*mappings.Table{}
	for _, tb := range plan.Tables() {
		tables[tb.QualifiedName()] = tb
	}
	out := map[string]string{}
	for _, p := range predicted {
		tb := tables[p.Table]
		if tb == nil || p.Rows == 0 {
			continue
		}
		var cols, exprs []string
		for _, pl := range p.Places {
			for _, c := range pl.Columns {
				if slices.Contains(needs[p.Table], c) || slices.Contains(cols, c) || keyColumn(tb, c) {
					continue
				}
				if e := changedValue(tb.Column(c)); e != "" {
					cols, exprs = append(cols, c), append(exprs, e)
				}
			}
		}
		limit := int64(sampleRows)
		switch {
		case p.Rows <= wholeBelow:
			limit = p.Rows
		case p.Mean >= float64(p.Max):
			limit = constantRows
		}
		rel := pgx.Identifier{tb.Schema, tb.Name}.Sanitize()
		rows, err := conn.Query(ctx, fmt.Sprintf("SELECT tableoid::int8, ctid::text FROM %s ORDER BY md5(tableoid::regclass::text || ctid::text) LIMIT %d", rel, limit))
		if err != nil {
			t.Fatal(err)
		}
		type at struct {
			OID  int64
			CTID string
		}
		sample, err := pgx.CollectRows(rows, pgx.RowToStructByPos[at])
		if err != nil {
			t.Fatal(err)
		}
		if len(cols) == 0 {
			// Every column read places rows: the row leaves and comes
			// back, two changes (the fixture's own foreign keys not
			// checked meanwhile: session_replication_role).
			if _, err := conn.Exec(ctx, "SET session_replication_role = replica"); err != nil {
				t.Fatal(err)
			}
			for _, r := range sample {
				var row []byte
				if err := conn.QueryRow(ctx, fmt.Sprintf("DELETE FROM %s AS x WHERE tableoid = $1::oid AND ctid = $2::tid RETURNING to_jsonb(x)", rel), r.OID, r.CTID).Scan(&row); err != nil {
					t.Fatalf("%s: %v", p.Table, err)
				}
				if _, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO %[1]s SELECT * FROM jsonb_populate_record(NULL::%[1]s, $1)", rel), row); err != nil {
					t.Fatalf("%s: %v", p.Table, err)
				}
			}
			if _, err := conn.Exec(ctx, "RESET session_replication_role"); err != nil {
				t.Fatal(err)
			}
			out[p.Table] = fmt.Sprintf("%d rows deleted and inserted again", len(sample))
			continue
		}
		for i, r := range sample {
			j := i % len(cols)
			c := pgx.Identifier{cols[j]}.Sanitize()
			if _, err := conn.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s = %s WHERE tableoid = $1::oid AND ctid = $2::tid", rel, c, strings.ReplaceAll(exprs[j], "$c", c)), r.OID, r.CTID); err != nil {
				t.Fatalf("%s: %v", p.Table, err)
			}
		}
		out[p.Table] = fmt.Sprintf("%d rows updated, in %s", len(sample), strings.Join(cols, ", "))
	}
	return out
}

// changedValue is an expression of a column $c giving another value of
// its type, "" for a type it does not change.
func changedValue(c *mappings.Column) string {
	if c == nil {
		return ""
	}
	switch c.Category {
	case "S":
		return `CASE WHEN left($c::text, 1) = 'Z' THEN 'Y' ELSE 'Z' END || substr($c::text, 2)`
	case "B":
		return "NOT $c"
	case "D":
		switch c.TypeName {
		case "timestamp", "timestamptz", "date":
			return "$c + interval '1 day'"
		}
	}
	return ""
}

// keyColumn reports whether column c of tb is in its primary key, a
// unique key or a foreign key: a value the test does not change.
func keyColumn(tb *mappings.Table, c string) bool {
	if slices.Contains(tb.PrimaryKey, c) {
		return true
	}
	for _, u := range tb.Unique {
		if slices.Contains(u, c) {
			return true
		}
	}
	for _, fk := range tb.ForeignKeys {
		if slices.Contains(fk.Columns, c) {
			return true
		}
	}
	return false
}
