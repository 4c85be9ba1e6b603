package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
)

// crashCollections are the collections of testdata/resume/crash.yaml.
var crashCollections = []string{"people", "posts", "comments"}

// crashSetup is the opening of the crash, fault and workers tests: the
// built binary, the mapping testdata/resume/crash.yaml and a crashSource.
func crashSetup(t *testing.T, persons, posts, comments int) (bin, mapping, src string) {
	t.Helper()
	bin = denormBinary(t)
	return bin, repoPath(t, "testdata", "resume", "crash.yaml"), crashSource(t, persons, posts, comments)
}

// crashSource is the seed schema plus generated persons, posts and
// comments: enough batches for a few seconds against FerretDB.
func crashSource(t *testing.T, persons, posts, comments int) string {
	t.Helper()
	db := personsDB(t, persons)
	testenv.Exec(t, db, fmt.Sprintf(`
INSERT INTO post (id, name, summary)
SELECT 1000 + g, 'Post ' || g, CASE WHEN g %% 5 <> 0 THEN 'summary ' || md5(g::text) END FROM generate_series(1, %[1]d) g;
INSERT INTO comment (id, post_id, author, comment, created_at)
SELECT 1000 + g, 1000 + 1 + (g * g) %% %[1]d, 'author' || g %% 17, 'comment ' || md5(g::text),
       timestamptz '2024-01-01' + (g %% 97) * interval '1 hour'
FROM generate_series(1, %[2]d) g;
ANALYZE;`, posts, comments))
	return db
}

func loadCheckpoint(t *testing.T, target, id string) *job.Record {
	t.Helper()
	ctx := context.Background()
	tg, err := load.Open(ctx, target, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(ctx)
	c, err := job.Load(ctx, tg.Records(), id)
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return c
}

// peekCheckpoint reads a checkpoint, nil when none or unreachable.
func peekCheckpoint(target, id string) *job.Record {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tg, err := load.Open(ctx, target, load.Options{})
	if err != nil {
		return nil
	}
	defer tg.Close(ctx)
	c, _ := job.Load(ctx, tg.Records(), id)
	return c
}

// dumpTarget returns every collection of a target as canonical documents
// sorted by _id (server) or the files' lines in order (directory).
func dumpTarget(t *testing.T, target string, db *mongo.Database) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, c := range crashCollections {
		if db != nil {
			out[c] = testenv.DumpCollection(t, db, c)
		} else {
			out[c] = testenv.ReadLines(t, filepath.Join(target, c+".jsonl"))
		}
	}
	return out
}

// checkNoDuplicates checks what a replayed batch could duplicate and a
// target's _id index cannot catch: a comment in two bucket pages or twice
// in one, and an item twice in a person's embedded arrays (every item of
// the crash data differs: ids, details and address lines are unique).
// Documents it cannot decode fail the test.
func checkNoDuplicates(t *testing.T, docs map[string][]string) {
	t.Helper()
	seen := map[float64]string{}
	for _, line := range docs["comments"] {
		var d struct {
			ID       string `json:"_id"`
			Comments []struct {
				ID *float64 `json:"id"`
			} `json:"comments"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil || d.ID == "" || len(d.Comments) == 0 {
			t.Fatalf("comments page without _id or comments (%v): %s", err, line)
		}
		for _, c := range d.Comments {
			if c.ID == nil {
				t.Fatalf("comment without id in page %s: %s", d.ID, line)
			}
			if p, dup := seen[*c.ID]; dup {
				t.Errorf("comment %v is in page %s and page %s", *c.ID, p, d.ID)
			}
			seen[*c.ID] = d.ID
		}
	}
	for _, line := range docs["people"] {
		var d struct {
			ID             json.RawMessage   `json:"_id"`
			Addresses      []json.RawMessage `json:"addresses"`
			ContactDetails []json.RawMessage `json:"contactDetails"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil || len(d.ID) == 0 {
			t.Fatalf("person without _id (%v): %s", err, line)
		}
		for name, arr := range map[string][]json.RawMessage{"addresses": d.Addresses, "contactDetails": d.ContactDetails} {
			items := map[string]bool{}
			for _, it := range arr {
				if items[string(it)] {
					t.Errorf("person %s holds %s item %s twice", d.ID, name, it)
				}
				items[string(it)] = true
			}
		}
	}
}

func compareTargets(t *testing.T, what string, want, got map[string][]string, exactBytes bool) {
	t.Helper()
	for _, c := range crashCollections {
		if exactBytes {
			if !slices.Equal(want[c], got[c]) {
				t.Errorf("%s: %s.jsonl differs from the uninterrupted run's (%d lines, want %d)", what, c, len(got[c]), len(want[c]))
				testenv.EqualDocs(t, what+" "+c, want[c], got[c])
			}
			continue
		}
		testenv.EqualDocs(t, what+" "+c, want[c], got[c])
	}
}

// TestCrashResume kills denorm with SIGKILL at 20 points or more while it
// migrates to a server target and to a directory target, resumes it each
// time, and checks that the target equals an uninterrupted run's,
// document by document (directory files byte by byte), with no duplicated
// array items or bucket pages. Where each kill landed is logged from the
// checkpoint it left.
//
// The kills are aimed with the checkpoint gate (gatedProc), so what the
// test requires holds by construction, whatever the machine's load: on the
// server target, kills in each collection in turn, one with the target
// ahead of the checkpoint (mid-batch) and one mid-bucket; everywhere,
// every attempt is killed only after it saved a checkpoint beyond the one
// it resumed from, so every round ends, without a cap on attempts. Half
// the kills (drawn at random) land at a checkpoint the run waits to save;
// the others after a random delay past one, wherever the run then is.
// The draws come from a seed that is logged, each attempt's from the
// seed, its round and its number (so that one attempt's draws do not
// depend on how many attempts came before): DENORM_TEST_SEED replays
// them. A replay kills at exactly the same checkpoints up to a round's
// first delayed kill; a delayed kill lands wherever the run then is, and
// the attempts after it resume from there.
func TestCrashResume(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	// Small data and tiny batches: many checkpoints, a second or two a run.
	bin, mapping, src := crashSetup(t, 1500, 1500, 6000)
	// A killed run's server lease blocks the job until it expires: a
	// short TTL, and resumes retried while it lives.
	base := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--batch-size", "10", "--lease-ttl", "1s"}

	refURI, refDB := testenv.MongoDB(t)
	refDir := t.TempDir()
	start := time.Now()
	runDenorm(t, bin, append(base, "--target", refURI)...)
	serverTime := time.Since(start)
	// The directory reference also counts the checkpoints of a whole run
	// (the gate only pauses it).
	start = time.Now()
	p := startGated(t, bin, append(base, "--target", refDir, "--job", "reference")...)
	if held, _ := p.until(func(c, _ *job.Record) bool { return false }, nil); held != nil {
		t.Fatalf("the gate held checkpoint %+v", held)
	}
	if code := p.wait(); code != 0 {
		t.Fatalf("reference run: exit %d\n%s", code, p.output())
	}
	dirTime := time.Since(start)
	ref := map[bool]map[string][]string{true: dumpTarget(t, refURI, refDB), false: dumpTarget(t, refDir, nil)}
	for _, c := range crashCollections {
		if len(ref[true][c]) == 0 {
			t.Fatalf("reference run wrote no %s", c)
		}
	}
	checkNoDuplicates(t, ref[true])
	checkNoDuplicates(t, ref[false])
	total := loadCheckpoint(t, refDir, "reference")
	t.Logf("uninterrupted: server %s, directory %s (gated); %d people, %d posts, %d comment pages; progress %d",
		serverTime.Round(time.Millisecond), dirTime.Round(time.Millisecond), len(ref[true]["people"]), len(ref[true]["posts"]), len(ref[true]["comments"]), progressOf(total))

	seed := testSeed(t)
	const minKills = 20
	kills, rounds := 0, 0
	landed := map[string]int{}
	landedServer := map[string]int{}
	midBucket, ahead := 0, 0
	for round := 0; kills < minKills || round < 2; round++ {
		// One round on a server target, then directory rounds (fast).
		server := round == 0
		var (
			target string
			db     *mongo.Database
		)
		if server {
			target, db = testenv.MongoDB(t)
		} else {
			target = t.TempDir()
		}
		rounds++
		for attempt := 0; ; attempt++ {
			args := append(slices.Clone(base), "--target", target, "--job", "crash")
			prior := loadCheckpoint(t, target, "crash")
			if prior != nil {
				args = append(args, "--resume")
			}
			rng := rand.New(rand.NewPCG(seed, uint64(round)<<32|uint64(attempt)))
			k := crashKill(rng, server, attempt, progressOf(total))
			p := startGated(t, bin, args...)
			held, stored := p.until(k.stop(prior), prior)
			if held == nil { // the job finished first, or could not start
				code := p.wait()
				if code == 1 && server && strings.Contains(p.output(), "is being run by another process") {
					time.Sleep(200 * time.Millisecond) // the killed run's lease has not expired yet
					attempt--                          // not an attempt: try it again
					continue
				}
				if code != 0 {
					t.Fatalf("round %d: denorm exit %d\n%s", round, code, p.output())
				}
				break
			}
			if k.delay > 0 {
				p.ungate()
				time.Sleep(k.delay)
			}
			p.signal(syscall.SIGKILL)
			if code := p.wait(); code == 0 {
				break // it finished before the delayed kill
			} else if code != -1 {
				t.Fatalf("round %d: denorm exit %d before the kill\n%s", round, code, p.output())
			}
			kills++
			c := loadCheckpoint(t, target, "crash")
			if progressOf(c) <= progressOf(prior) {
				t.Fatalf("round %d attempt %d made no progress: checkpoint %+v, resumed from %+v", round, attempt, c, prior)
			}
			if k.delay == 0 && progressOf(c) != progressOf(stored) {
				t.Fatalf("round %d attempt %d: killed waiting to save a checkpoint, but the target holds another one than the last saved: %+v, want %+v", round, attempt, c, stored)
			}
			where := "collection " + c.Collection
			for _, s := range c.Streams {
				if s.Collection == c.Collection && !s.Done {
					where += fmt.Sprintf(" after key %v", fmtKey(s.After))
					if s.Pager != nil {
						where += fmt.Sprintf(", bucket page %d of post %s", s.Pager.Page, s.Pager.ParentKey)
						midBucket++
					}
				}
			}
			if c.Phase == job.PhaseDone {
				where = "after the job was done"
			}
			landed[c.Collection]++
			if server {
				landedServer[c.Collection]++
			}
			// Mid-batch: the target holds more than the checkpoint
			// acknowledged (documents written after it).
			if n := aheadOf(t, target, db, c); n > 0 {
				ahead++
				where += fmt.Sprintf("; target %d ahead of the checkpoint (mid-batch)", n)
			}
			t.Logf("kill %2d (round %d, %s target, %s): %s", kills, round, map[bool]string{true: "server", false: "directory"}[server], k, where)
		}
		got := dumpTarget(t, target, db)
		compareTargets(t, fmt.Sprintf("round %d", round), ref[server], got, !server)
		checkNoDuplicates(t, got)
		if c := loadCheckpoint(t, target, "crash"); c == nil || c.Phase != job.PhaseDone {
			t.Errorf("round %d: the finished job's checkpoint is %+v, want phase done", round, c)
		}
	}
	t.Logf("%d kills in %d rounds; checkpoints at kill time per collection: %v (server target: %v); %d mid-bucket, %d with the target ahead of the checkpoint", kills, rounds, landed, landedServer, midBucket, ahead)
	if len(landed) < 3 || len(landedServer) < 3 {
		t.Errorf("kills landed in collections %v (server target: %v); want all three", landed, landedServer)
	}
	if midBucket == 0 {
		t.Error("no kill landed mid-bucket")
	}
	if ahead == 0 {
		t.Error("no kill landed between a write and its checkpoint")
	}
}

// progressOf measures how far a checkpoint is: root rows read, plus one
// per finished stream and one for a finished job (-1 for none). A run
// that resumes from checkpoint a and leaves checkpoint b made progress
// when progressOf(b) > progressOf(a).
func progressOf(c *job.Record) int64 {
	if c == nil {
		return -1
	}
	var n int64
	for _, s := range c.Streams {
		n += s.Rows
		if s.Done {
			n++
		}
	}
	if c.Phase == job.PhaseDone {
		n++
	}
	return n
}

// crashAim is where one attempt of TestCrashResume is killed: at the
// checkpoint the run waits to save after it saved at least saves
// checkpoints beyond the one it resumed from (and, if set, in collection
// coll, with the target ahead of the last saved checkpoint, and that one
// mid-bucket), or, with a delay, that long after letting that checkpoint
// be saved.
type crashAim struct {
	saves     int64
	coll      string
	ahead     bool
	midBucket bool
	delay     time.Duration
}

func (k crashAim) String() string {
	s := fmt.Sprintf("at checkpoint %d", k.saves)
	if k.coll != "" {
		s += " in " + k.coll
	}
	if k.midBucket {
		s += " mid-bucket"
	}
	if k.delay > 0 {
		s += fmt.Sprintf(" + %s", k.delay.Round(time.Millisecond))
	}
	return s
}

// crashKill draws attempt's aim. On the server target, attempts 0-2 aim at
// people, posts and comments in turn (mid-batch; the comments one also
// mid-bucket), 3-5 anywhere, and attempt 6 runs to the end. On a
// directory, each attempt aims anywhere within a quarter of the whole run
// (progress is the whole run's), so a round has about eight kills.
func crashKill(rng *rand.Rand, server bool, attempt int, progress int64) crashAim {
	k := crashAim{saves: 1 + rng.Int64N(10)}
	if server && attempt < len(crashCollections) {
		k.coll, k.ahead, k.midBucket = crashCollections[attempt], true, crashCollections[attempt] == "comments"
		return k
	}
	if server && attempt >= 6 {
		k.saves = 1 << 62
		return k
	}
	// A checkpoint comes every 10 rows read: progress/40 is a quarter run.
	k.saves = 1 + rng.Int64N(max(1, progress/40))
	if rng.IntN(2) == 0 {
		k.delay = time.Duration(rng.Int64N(int64(200 * time.Millisecond)))
	}
	return k
}

// stop is the gate's test for aim k of an attempt resumed from prior.
func (k crashAim) stop(prior *job.Record) func(c, last *job.Record) bool {
	saved := int64(0) // checkpoints saved beyond prior, in k.coll if set
	return func(c, last *job.Record) bool {
		if last != nil && progressOf(last) > progressOf(prior) && (k.coll == "" || last.Collection == k.coll) {
			saved++
		}
		if saved < k.saves || k.coll != "" && c.Collection != k.coll {
			return false
		}
		if k.ahead && written(c, c.Collection) <= written(last, c.Collection) {
			return false
		}
		if k.midBucket && !pagerOpen(last, k.coll) {
			return false
		}
		return true
	}
}

// written is the number of documents of coll a checkpoint acknowledges.
func written(c *job.Record, coll string) int64 {
	var n int64
	if c == nil {
		return 0
	}
	for _, s := range c.Streams {
		if s.Collection == coll {
			n += s.Written
		}
	}
	return n
}

// pagerOpen reports whether a checkpoint is in the middle of a parent's
// bucket pages of coll.
func pagerOpen(c *job.Record, coll string) bool {
	if c == nil {
		return false
	}
	for _, s := range c.Streams {
		if s.Collection == coll && !s.Done && s.Pager != nil {
			return true
		}
	}
	return false
}

// aheadOf is how many documents (server) or bytes (directory) the target
// holds beyond what checkpoint c acknowledged, summed over collections.
func aheadOf(t *testing.T, target string, db *mongo.Database, c *job.Record) int64 {
	t.Helper()
	var n int64
	if db == nil {
		for _, coll := range crashCollections {
			st, err := os.Stat(filepath.Join(target, coll+".jsonl"))
			if err == nil {
				n += max(0, st.Size()-c.Files[coll+".jsonl"])
			}
		}
		return n
	}
	written := map[string]int64{}
	for _, s := range c.Streams {
		written[s.Collection] += s.Written
	}
	for _, coll := range crashCollections {
		cnt, err := db.Collection(coll).EstimatedDocumentCount(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += max(0, cnt-written[coll])
	}
	return n
}

func fmtKey(k []*string) string {
	parts := make([]string, len(k))
	for i, v := range k {
		if v == nil {
			parts[i] = "NULL"
		} else {
			parts[i] = *v
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
