package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/churn"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/pipeline/compare"
)

// TestDriftOnline: 1,000 corruptions injected into a target that a
// `sync --follow` job keeps writing while a writer changes the source
// (documents changed, deleted and added behind the job's back, on
// documents the writer does not touch). With --job, a full verify reports
// exactly the injected documents - none of those the job is writing as
// verify reads them, though their first comparison differs - a 10%
// sample exactly the injected ones whose _id hashes into it (about 100),
// and verify --repair rewrites exactly the 800 missing or different ones
// and deletes the 200 strays, pausing the job meanwhile; a verify is then
// clean while the writer still writes, and once it stops and sync caught
// up, the target is a fresh migrate's.
func TestDriftOnline(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	db := syncDB(t, "testdata/examples/seed.sql")
	// Persons 1001-2500 and posts 101-1600 (10 comments each): the writer
	// changes persons 1001-1750 and posts 101-850, the corruptions are in
	// the others.
	addSyncData(t, db, 1500)
	target, tdb := testenv.MongoDB(t)
	jobName := syncJob(t, db)
	seed := churn.Seeds(t, 1)[0]
	t.Logf("seed %d (replay: DENORM_TEST_SEED=%d)", seed, seed)
	mapping := syncMixed(t)
	base := []string{"--mapping", mapping, "--source", db, "--target", target}
	mustCLI(t, append([]string{"sync", "-q", "--job", jobName, "--method", "logical", "--once"}, base...)...)
	p := startSync(t, nil, bin, append([]string{"sync", "-v", "--job", jobName, "--method", "logical", "--follow", "--max-delay", "100ms"}, base...)...)
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.kill()
		}
	})
	w := startDriftWriter(t, db, seed)
	for w.txs.Load() < 20 {
		time.Sleep(10 * time.Millisecond)
	}

	injected := injectDrift(t, tdb, rand.New(rand.NewPCG(seed, 2)))
	if len(injected) != 1000 {
		t.Fatalf("%d corruptions injected, want 1000", len(injected))
	}
	dir := t.TempDir()
	verify := append([]string{"verify", "--show", "3", "--job", jobName}, base...)

	// Without --job, documents in flight are differences too.
	start := time.Now()
	out, code := denormCLI(append([]string{"verify", "-q", "--show", "0"}, base...)...)
	t.Logf("verify without --job (exit %d) in %s: %s", code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(tail(out, 1)))

	// The full pass: exactly the injected documents.
	start = time.Now()
	out, code = denormCLI(append(verify, "--report", filepath.Join(dir, "full.json"))...)
	full := reportedDrift(t, filepath.Join(dir, "full.json"))
	t.Logf("full verify (exit %d) in %s:\n%s", code, time.Since(start).Round(time.Millisecond), tail(out, 12))
	if code != 1 || !strings.Contains(out, "1000 documents differ") {
		t.Fatalf("full verify: exit %d, want 1 with 1000 documents differing:\n%s", code, out)
	}
	sameDrift(t, "full verify", full, injected)
	if !strings.Contains(out, "rechecked: ") || !strings.Contains(out, "1000 confirmed") {
		t.Errorf("full verify does not say what it rechecked:\n%s", out)
	}

	// A 10% sample: the injected documents whose _id hashes into it.
	start = time.Now()
	out, code = denormCLI(append(verify, "--sample", "10", "--report", filepath.Join(dir, "sample.json"))...)
	sample := reportedDrift(t, filepath.Join(dir, "sample.json"))
	t.Logf("10%% sample (exit %d) in %s: %d differences", code, time.Since(start).Round(time.Millisecond), len(sample))
	want := map[string]string{}
	for k, kind := range injected {
		if sampledKey(t, k, 10) {
			want[k] = kind
		}
	}
	sameDrift(t, "10% sample", sample, want)
	// Binomial(1000, 0.1): mean 100, standard deviation 9.5.
	if n := len(sample); n < 60 || n > 140 || code != 1 {
		t.Errorf("10%% sample: exit %d, %d differences, want about 100", code, n)
	}

	// The repair: exactly the injected documents, through a pause of the job.
	start = time.Now()
	out = mustCLI(t, append(verify, "--repair")...)
	t.Logf("verify --repair in %s:\n%s", time.Since(start).Round(time.Millisecond), tail(out, 6))
	if !strings.Contains(out, "repaired: 800 documents written as the source gives them, 200 documents deleted") {
		t.Errorf("verify --repair did not repair exactly the injected documents:\n%s", out)
	}
	if !p.waitOutput("paused, as verify --repair", 0, 10*time.Second) || !p.waitOutput("going on after a pause", 0, 10*time.Second) {
		t.Errorf("the job did not say it paused for the repair:\n%s", tail(p.out.String(), 20))
	}
	for _, line := range strings.Split(p.out.String(), "\n") {
		if strings.Contains(line, "going on after a pause") {
			t.Logf("the follower: %s", strings.TrimSpace(line))
		}
	}
	out = mustCLI(t, append(verify, "-q")...)
	t.Logf("verify after the repair, the writer still writing:\n%s", tail(out, 4))
	txs := w.txs.Load()
	w.halt()
	w.report(t)
	if w.txs.Load() < txs || txs < 100 {
		t.Errorf("the writer committed %d transactions: want a source that changed throughout", txs)
	}

	// Once the writer stopped: the job catches up, and the target is a
	// fresh migrate's.
	p.kill()
	<-p.done
	mustCLI(t, append([]string{"sync", "-q", "--job", jobName, "--method", "logical", "--once"}, base...)...)
	sameAsFreshMigrate(t, mapping, db, target)
}

// driftWriter writes to the source in transactions of a few statements,
// until halted: persons 1001-1750 renamed and their addresses changed,
// comments of posts 101-850 added, edited and deleted.
type driftWriter struct {
	db  string
	rng *rand.Rand
	background
	txs atomic.Int64
	mu  sync.Mutex
	err error
}

func startDriftWriter(t *testing.T, db string, seed uint64) *driftWriter {
	w := &driftWriter{db: db, rng: rand.New(rand.NewPCG(seed, 1)), background: newBackground()}
	go w.run()
	t.Cleanup(w.halt)
	return w
}

func (w *driftWriter) run() {
	defer close(w.done)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, w.db)
	if err != nil {
		w.setErr(err)
		return
	}
	defer conn.Close(ctx)
	next := 5_000_000
	for {
		select {
		case <-w.stop:
			return
		case <-time.After(50 * time.Millisecond):
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for range 1 + w.rng.IntN(3) {
				next++
				person, post := 1001+w.rng.IntN(750), 101+w.rng.IntN(750)
				var sql string
				switch w.rng.IntN(5) {
				case 0:
					sql = fmt.Sprintf(`UPDATE person SET first_name = 'w%d' WHERE id = %d`, next, person)
				case 1:
					sql = fmt.Sprintf(`UPDATE address SET city = 'c%d' WHERE person_id = %d`, next, person)
				case 2:
					sql = fmt.Sprintf(`INSERT INTO comment VALUES (%d, %d, 'w', 'written %d', '2024-01-01'::timestamptz + %d * interval '1 minute')`, next, post, next, w.rng.IntN(100000))
				case 3:
					sql = fmt.Sprintf(`UPDATE comment SET comment = 'edited %d' WHERE id = (SELECT max(id) FROM comment WHERE post_id = %d)`, next, post)
				default:
					sql = fmt.Sprintf(`DELETE FROM comment WHERE id = (SELECT min(id) FROM comment WHERE post_id = %d)`, post)
				}
				if _, err := tx.Exec(ctx, sql); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			w.setErr(err)
			return
		}
		w.txs.Add(1)
	}
}

func (w *driftWriter) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

func (w *driftWriter) report(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("writer: %v", w.err)
	}
	t.Logf("writer: %d transactions committed", w.txs.Load())
}

// injectDrift corrupts 1,000 documents the writer does not touch, behind
// the job's back: 300 people and 250 posts changed, 100 people and 150
// posts deleted, 200 stray posts added. It returns them as
// "collection _id" -> the kind verify reports.
func injectDrift(t *testing.T, tdb *mongo.Database, rng *rand.Rand) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	pick := func(from, n, k int) []int32 {
		ids := rng.Perm(n)[:k]
		sorted := make([]int32, k)
		for i, id := range ids {
			sorted[i] = int32(from + id)
		}
		return sorted
	}
	people, posts := pick(1751, 750, 400), pick(851, 750, 400)
	change := func(coll, field string, ids []int32) {
		for _, id := range ids {
			r, err := tdb.Collection(coll).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: field, Value: "drifted"}}}})
			if err != nil || r.ModifiedCount != 1 {
				t.Fatalf("corrupt %s %d: %v (%d modified)", coll, id, err, r.ModifiedCount)
			}
			out[fmt.Sprintf("%s %d", coll, id)] = "different"
		}
	}
	remove := func(coll string, ids []int32) {
		r, err := tdb.Collection(coll).DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
		if err != nil || r.DeletedCount != int64(len(ids)) {
			t.Fatalf("delete %d %s: %v (%d deleted)", len(ids), coll, err, r.DeletedCount)
		}
		for _, id := range ids {
			out[fmt.Sprintf("%s %d", coll, id)] = "missing"
		}
	}
	change("people", "last_name", people[:300])
	remove("people", people[300:])
	change("posts", "summary", posts[:250])
	remove("posts", posts[250:])
	var stray []any
	for i := range int32(200) {
		id := 9_000_000 + i
		stray = append(stray, bson.D{{Key: "_id", Value: id}, {Key: "name", Value: "stray"}})
		out[fmt.Sprintf("posts %d", id)] = "unexpected"
	}
	if _, err := tdb.Collection("posts").InsertMany(ctx, stray); err != nil {
		t.Fatal(err)
	}
	return out
}

// reportedDrift reads a verify report's differences as "collection _id"
// -> kind.
func reportedDrift(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Differences []struct {
			Collection string          `json:"collection"`
			ID         json.RawMessage `json:"_id"`
			Kind       string          `json:"kind"`
		} `json:"differences"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report %s: %v", path, err)
	}
	out := map[string]string{}
	for _, d := range r.Differences {
		out[fmt.Sprintf("%s %s", d.Collection, d.ID)] = d.Kind
	}
	return out
}

// sameDrift fails unless got and want name the same documents with the
// same kinds.
func sameDrift(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var extra, lost []string
	for k, kind := range got {
		if want[k] != kind {
			extra = append(extra, k+" "+kind)
		}
	}
	for k, kind := range want {
		if got[k] != kind {
			lost = append(lost, k+" "+kind)
		}
	}
	sort.Strings(extra)
	sort.Strings(lost)
	if len(extra) > 0 || len(lost) > 0 {
		t.Errorf("%s: %d reported that are not injected (false positives): %v; %d injected not reported: %v",
			what, len(extra), head(extra, 10), len(lost), head(lost, 10))
	}
}

func head(s []string, n int) []string { return s[:min(n, len(s))] }

// sampledKey says whether verify --sample percent compares the document
// "collection _id" (an int32 _id): the hash of its sort key, as
// pipeline's verifier.sampled.
func sampledKey(t *testing.T, k string, percent float64) bool {
	t.Helper()
	var coll string
	var id int32
	if _, err := fmt.Sscanf(k, "%s %d", &coll, &id); err != nil {
		t.Fatal(err)
	}
	doc, err := bson.Marshal(bson.D{{Key: "_id", Value: id}})
	if err != nil {
		t.Fatal(err)
	}
	idv, err := load.DocumentID(doc)
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	h.Write(compare.IDKey(coll, idv))
	return float64(h.Sum64()%1_000_000) < percent*10_000
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestVerifyPercent: --percent is --sample's other name: the report
// says which percentage was compared. And --job of a job the target does
// not know is a usage error.
func TestVerifyPercent(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	t.Parallel()
	db := testenv.PostgresDB(t, repoPath(t, "testdata", "examples", "seed.sql"))
	dir := t.TempDir()
	base := []string{"--mapping", example(t, "blog"), "--source", db, "--target", filepath.Join(dir, "out")}
	mustCLI(t, append([]string{"migrate", "-q"}, base...)...)
	if out, code := denormCLI(append([]string{"verify", "-q", "--job", "nope"}, base...)...); code != 2 || !strings.Contains(out, "--job nope: the target has no such job") {
		t.Errorf("verify --job of a job the target does not know: exit %d:\n%s", code, out)
	}
	for _, flags := range [][]string{{"--percent", "10"}, {"--sample", "10"}, {"--percent", "10", "--sample", "10"}} {
		report := filepath.Join(dir, "r.json")
		mustCLI(t, append(append([]string{"verify", "-q", "--report", report}, base...), flags...)...)
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			SamplePercent float64 `json:"samplePercent"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.SamplePercent != 10 {
			t.Errorf("%v: samplePercent %v (%v), want 10", flags, r.SamplePercent, err)
		}
	}
}
