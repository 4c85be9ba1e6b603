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

func loadCheckpoint(t *testing.T, target, id string) *load.Checkpoint {
	t.Helper()
	ctx := context.Background()
	tg, err := load.Open(ctx, target, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(ctx)
	c, err := tg.Checkpoints().Load(ctx, id)
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
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

// checkNoDuplicates checks that no comment is in two bucket pages or twice
// in one array, and that no embedded array holds an item twice.
func checkNoDuplicates(t *testing.T, docs map[string][]string) {
	t.Helper()
	seen := map[float64]string{}
	for _, line := range docs["comments"] {
		var d struct {
			ID       string `json:"_id"`
			Comments []struct {
				ID float64 `json:"id"`
			} `json:"comments"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("comments page: %v: %s", err, line)
		}
		for _, c := range d.Comments {
			if p, dup := seen[c.ID]; dup {
				t.Errorf("comment %v is in page %s and page %s", c.ID, p, d.ID)
			}
			seen[c.ID] = d.ID
		}
	}
	for _, line := range docs["people"] {
		var d struct {
			ID       any `json:"_id"`
			Contacts []map[string]any
		}
		_ = json.Unmarshal([]byte(line), &d)
		var items []string
		var raw map[string]json.RawMessage
		_ = json.Unmarshal([]byte(line), &raw)
		var contacts []json.RawMessage
		_ = json.Unmarshal(raw["contactDetails"], &contacts)
		for _, c := range contacts {
			items = append(items, string(c))
		}
		slices.Sort(items)
		if len(slices.Compact(slices.Clone(items))) != len(items) {
			t.Errorf("person %v has a contact detail twice: %s", d.ID, line)
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

// TestCrashResume kills denorm with SIGKILL at random points (at least 20)
// while it migrates to a server target and to a directory target, resumes
// it each time, and checks that the target equals an uninterrupted run's,
// document by document (directory files byte by byte), with no duplicated
// array items or bucket pages. Where each kill landed is logged from the
// checkpoint it left.
func TestCrashResume(t *testing.T) {
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
	start = time.Now()
	runDenorm(t, bin, append(base, "--target", refDir)...)
	dirTime := time.Since(start)
	ref := map[bool]map[string][]string{true: dumpTarget(t, refURI, refDB), false: dumpTarget(t, refDir, nil)}
	for _, c := range crashCollections {
		if len(ref[true][c]) == 0 {
			t.Fatalf("reference run wrote no %s", c)
		}
	}
	checkNoDuplicates(t, ref[true])
	t.Logf("uninterrupted: server %s, directory %s; %d people, %d posts, %d comment pages",
		serverTime.Round(time.Millisecond), dirTime.Round(time.Millisecond), len(ref[true]["people"]), len(ref[true]["posts"]), len(ref[true]["comments"]))

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("random seed %d", seed)
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
			full   time.Duration
		)
		if server {
			target, db = testenv.MongoDB(t)
			full = serverTime
		} else {
			target = t.TempDir()
			full = dirTime
		}
		rounds++
		for attempt := 0; ; attempt++ {
			if attempt > 200 {
				t.Fatal("the job never finished")
			}
			args := append(slices.Clone(base), "--target", target, "--job", "crash")
			prior := loadCheckpoint(t, target, "crash")
			if prior != nil {
				args = append(args, "--resume")
			}
			p := startDenorm(t, bin, args...)
			// Kill within a fraction of a full run's time: several kills
			// per round, spread over every table and phase. On the server
			// target (slow), attempt k first waits until the run reaches
			// collection k mod 3, so kills land in every collection there
			// too, including mid-bucket.
			// A process needs ~50 ms to connect and read the catalog.
			delay := time.Duration(rng.Int64N(int64(full/2))) + 50*time.Millisecond
			if server {
				// Attempts 0-5 kill soon after reaching collection attempt
				// mod 3 (within a tenth of a whole run, so mostly inside
				// that collection); attempt 6 runs to the end.
				delay = time.Duration(rng.Int64N(int64(full/10) + 1))
			}
			const serverKills = 6
			done := make(chan int, 1)
			go func() { done <- p.wait() }()
			fire := make(chan struct{})
			exited := make(chan struct{})
			go func() {
				if server && attempt >= serverKills {
					return
				}
				if server {
					want := attempt % len(crashCollections)
					for {
						select {
						case <-exited:
							return
						default:
						}
						if c := peekCheckpoint(target, "crash"); c != nil && slices.Index(crashCollections, c.Collection) >= want {
							break
						}
						time.Sleep(20 * time.Millisecond)
					}
				}
				select {
				case <-time.After(delay):
					close(fire)
				case <-exited:
				}
			}()
			select {
			case code := <-done:
				close(exited)
				if code == 1 && server && strings.Contains(p.out.String(), "is being run by another process") {
					time.Sleep(200 * time.Millisecond) // the killed run's lease has not expired yet
					attempt--                          // not an attempt: try it again
					continue
				}
				if code != 0 {
					t.Fatalf("round %d: denorm exit %d\n%s", round, code, p.out)
				}
			case <-fire:
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
				code := <-done
				close(exited)
				if code == 0 {
					break // it finished just before the kill
				}
				kills++
				c := loadCheckpoint(t, target, "crash")
				where := "before the first checkpoint"
				if c != nil {
					where = "collection " + c.Collection
					for _, s := range c.Streams {
						if s.Collection == c.Collection && !s.Done {
							where += fmt.Sprintf(" after key %v", fmtKey(s.After))
							if s.Pager != nil {
								where += fmt.Sprintf(", bucket page %d of post %s", s.Pager.Page, s.Pager.ParentKey)
								midBucket++
							}
						}
					}
					if c.Phase == load.PhaseDone {
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
				}
				t.Logf("kill %2d (round %d, %s target, delay %s): %s", kills, round, map[bool]string{true: "server", false: "directory"}[server], delay.Round(time.Millisecond), where)
				continue
			}
			break
		}
		got := dumpTarget(t, target, db)
		compareTargets(t, fmt.Sprintf("round %d", round), ref[server], got, !server)
		checkNoDuplicates(t, got)
		if c := loadCheckpoint(t, target, "crash"); c == nil || c.Phase != load.PhaseDone {
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

// aheadOf is how many documents (server) or bytes (directory) the target
// holds beyond what checkpoint c acknowledged, summed over collections.
func aheadOf(t *testing.T, target string, db *mongo.Database, c *load.Checkpoint) int64 {
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
