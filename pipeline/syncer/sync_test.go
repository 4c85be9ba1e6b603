package syncer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/transform"
)

// countingTarget counts, at the target boundary, every document written
// (by collection and _id) and every delete.
type countingTarget struct {
	load.Target
	mu      sync.Mutex
	writes  map[string]map[string]int
	deletes map[string]int
}

func (c *countingTarget) Write(ctx context.Context, coll string, docs []transform.Document) ([]transform.Reject, error) {
	c.mu.Lock()
	for _, d := range docs {
		if c.writes[coll] == nil {
			c.writes[coll] = map[string]int{}
		}
		c.writes[coll][fmt.Sprint(d.ID)]++
	}
	c.mu.Unlock()
	return c.Target.Write(ctx, coll, docs)
}

func (c *countingTarget) Delete(ctx context.Context, coll string, sel load.Selection) (int64, error) {
	c.mu.Lock()
	c.deletes[coll]++
	c.mu.Unlock()
	return c.Target.Delete(ctx, coll, sel)
}

func (c *countingTarget) reset() {
	c.writes, c.deletes = map[string]map[string]int{}, map[string]int{}
}

var testJobs atomic.Int64

// logicalSync prepares a sync job on db for mapping (an example) into a
// fresh target: its first sync made the copy. It returns a function that
// runs one --once pass through a counting target; opts change the
// options of every sync.
func logicalSync(t *testing.T, db, mapping string, opts ...func(*Options)) (pass func() (*countingTarget, PassStats)) {
	t.Helper()
	ctx := context.Background()
	testenv.Exec(t, db, identityFull)
	jobName := fmt.Sprintf("p%d_%d", os.Getpid(), testJobs.Add(1))
	src, err := extract.ParseSource(db)
	if err != nil {
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
	snap, plan := snapshotPlan(t, db, mapping)
	uri, _ := testenv.MongoDB(t)
	run := func() (*countingTarget, PassStats) {
		tg, err := load.Open(ctx, uri, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close(ctx)
		ct := &countingTarget{Target: tg}
		ct.reset()
		opt := Options{Job: jobName, Mapping: mapping, Method: job.SyncLogical}
		for _, o := range opts {
			o(&opt)
		}
		res, err := Sync(ctx, snap.Source(), plan, ct, opt)
		if err != nil {
			t.Fatal(err)
		}
		return ct, res.Total
	}
	if _, st := run(); !st.Copy {
		t.Fatal("the first sync made no initial copy")
	}
	return run
}

// identityFull: every table of the fixture logs whole old rows.
const identityFull = `DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = 'public'
  LOOP EXECUTE format('ALTER TABLE public.%I REPLICA IDENTITY FULL', r.tablename); END LOOP;
END $$;`

// TestSyncFanoutCounts counts the documents sync writes at the target
// boundary: renaming an author who wrote 5,000 books replaces exactly
// those books and the author, each once; 10,000 new comments on one post,
// in one transaction, rebuild that post and each of its pages once.
func TestSyncFanoutCounts(t *testing.T) {
	root := testenv.Root(t)
	example := func(name string) string { return filepath.Join(root, "mappings", "examples", name+".yaml") }

	t.Run("author-rename", func(t *testing.T) {
		db := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
		testenv.Exec(t, db, `INSERT INTO author VALUES ('a3', 'Prolific', 'Writer');
			INSERT INTO book SELECT 'p' || n, 'Book ' || n, 'mspress' FROM generate_series(1, 5000) n;
			INSERT INTO book_author SELECT 'p' || n, 'a3' FROM generate_series(1, 5000) n;
			INSERT INTO book_author VALUES ('b5', 'a1');`)
		pass := logicalSync(t, db, example("hybrid"))
		testenv.Exec(t, db, `UPDATE author SET last_name = 'Renamed' WHERE id = 'a3'`)
		ct, st := pass()
		want := map[string]int{}
		for n := 1; n <= 5000; n++ {
			want[fmt.Sprintf("p%d", n)] = 1
		}
		checkWrites(t, ct, "books", want)
		checkWrites(t, ct, "authors", map[string]int{"a3": 1})
		if len(ct.writes) != 2 || len(ct.deletes) != 0 {
			t.Errorf("writes to %d collections, deletes %v; want books and authors, no deletes", len(ct.writes), ct.deletes)
		}
		if st.Transactions != 1 || st.Tables["public.author"].Updates != 1 {
			t.Errorf("pass applied %d transactions, tables %v", st.Transactions, st.Tables)
		}
	})

	t.Run("comments-one-post", func(t *testing.T) {
		db := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
		pass := logicalSync(t, db, example("blog"))
		// One transaction: 10,000 comments on post 3, which had none.
		testenv.Exec(t, db, `INSERT INTO comment SELECT 10000 + n, 3, 'anon', 'c' || n, '2025-01-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 10000) n`)
		ct, st := pass()
		pages := map[string]int{}
		for p := 0; p < 100; p++ {
			pages[fmt.Sprintf("3-%d", p)] = 1
		}
		checkWrites(t, ct, "comments", pages)
		checkWrites(t, ct, "posts", map[string]int{"3": 1})
		if st.Transactions != 1 || st.Tables["public.comment"].Inserts != 10000 {
			t.Errorf("pass applied %d transactions, tables %v; want one of 10,000 inserts", st.Transactions, st.Tables)
		}
		// The pages past the post's new count: one delete, for its one parent.
		if ct.deletes["comments"] != 1 || len(ct.deletes) != 1 {
			t.Errorf("deletes %v; want one (the pages past the new count)", ct.deletes)
		}
	})
}

// checkWrites fails unless coll's writes are exactly want (_id -> count).
func checkWrites(t *testing.T, ct *countingTarget, coll string, want map[string]int) {
	t.Helper()
	got := ct.writes[coll]
	var bad []string
	for id, n := range got {
		if want[id] != n {
			bad = append(bad, fmt.Sprintf("%s written %d times (want %d)", id, n, want[id]))
		}
	}
	for id, n := range want {
		if got[id] == 0 {
			bad = append(bad, fmt.Sprintf("%s never written (want %d)", id, n))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		if len(bad) > 10 {
			bad = append(bad[:10], fmt.Sprintf("... %d more", len(bad)-10))
		}
		t.Errorf("%s: %d documents written, want %d: %v", coll, len(got), len(want), bad)
		return
	}
	t.Logf("%s: %d documents written, each once", coll, len(got))
}
