package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/churn"
	"github.com/denorm/denorm/internal/testenv"
)

// remapMappings writes two changes of the sync fault tests' mapping: a
// field added to posts (b), and a field added to people (c).
func remapMappings(t *testing.T) (b, c string) {
	t.Helper()
	raw, err := os.ReadFile(syncMixed(t))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	edit := func(old, new string) string {
		if strings.Count(text, old) != 1 {
			t.Fatalf("%q is not once in the mapping", old)
		}
		return strings.Replace(text, old, new, 1)
	}
	dir := t.TempDir()
	b, c = filepath.Join(dir, "b.yaml"), filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(b, []byte(edit("      - summary\n", "      - summary\n      - {name: headline, column: name}\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	text = edit("      - summary\n", "      - summary\n      - {name: headline, column: name}\n")
	if err := os.WriteFile(c, []byte(edit("      - last_name\n", "      - last_name\n      - {name: surname, column: last_name}\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return b, c
}

// rebuildWrites reads the JSON log of a sync run (-v --log-format json)
// and returns, per collection, the documents written and deleted between
// the rebuild's start ("rebuild recorded") and end ("mapping recorded"),
// and whether it ended.
func rebuildWrites(t *testing.T, out string) (map[string]int, bool) {
	t.Helper()
	in, ended := false, false
	got := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		var e struct {
			Msg        string `json:"msg"`
			Collection string `json:"collection"`
			Documents  int    `json:"documents"`
		}
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch e.Msg {
		case "rebuild recorded":
			in = true
		case "mapping recorded":
			in, ended = false, true
		case "documents written", "documents deleted":
			if in {
				got[e.Collection] += e.Documents
			}
		}
	}
	return got, ended
}

// TestSyncMappingChange: a logical job over a target of a few thousand
// documents in three collections, while a writer changes every mapped
// table: a field added to posts rebuilds posts alone (every post written
// once by the rebuild, nothing of comments or people) and the job streams
// on. A field added to people is then killed in the middle of its
// rebuild (DENORM_TEST_HALT): the record names people as being rebuilt,
// and the next run - with the mapping changed back - rebuilds people
// again. Once the writer stops and a pass catches up, the target is
// exactly a fresh migrate of the last mapping and verify exits 0. A diff
// job given the same change writes posts and nothing else.
func TestSyncMappingChange(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	db := syncDB(t, "testdata/examples/seed.sql")
	addSyncData(t, db, 1500)
	target, _ := testenv.MongoDB(t)
	jobName := syncJob(t, db)
	mappingB, mappingC := remapMappings(t)
	base := []string{"sync", "--source", db, "--target", target, "--job", jobName, "--method", "logical", "--once", "--lease-ttl", "1s"}
	run := func(mapping string, extra ...string) string {
		t.Helper()
		start := time.Now()
		for {
			out, code := denormCLI(append(append(slices.Clone(base), "--mapping", mapping), extra...)...)
			if code == 1 && strings.Contains(out, "is being run by another process") && time.Since(start) < time.Minute {
				time.Sleep(200 * time.Millisecond) // a killed run's lease
				continue
			}
			if code != 0 {
				t.Fatalf("sync --mapping %s: exit %d\n%s", mapping, code, out)
			}
			return out
		}
	}
	run(syncMixed(t)) // the initial copy
	seed := churn.Seeds(t, 1)[0]
	t.Logf("writer's seed %d (replay: DENORM_TEST_SEED=%d)", seed, seed)
	w := startSeedWriter(t, db, seed, 50*time.Millisecond, 5)
	for w.txs.Load() < 10 {
		time.Sleep(10 * time.Millisecond)
	}

	// A field added to posts, the writer running.
	before := w.txs.Load()
	start := time.Now()
	out := run(mappingB, "-v", "--log-format", "json")
	got, ended := rebuildWrites(t, out)
	t.Logf("sync with a field added to posts: %s, %d transactions written meanwhile; the rebuild wrote %v", time.Since(start).Round(time.Millisecond), w.txs.Load()-before, got)
	if !ended || got["posts"] < 1500 || len(got) != 1 {
		t.Fatalf("the rebuild wrote %v (ended: %v); want posts alone, every one of its 1,500+ documents:\n%s", got, ended, out)
	}
	if !strings.Contains(out, "rebuilding posts (its documents changed)") {
		t.Errorf("the run does not say what it rebuilds:\n%s", out)
	}

	// A field added to people, killed after the rebuild's second write.
	start = time.Now()
	var killed string
	for {
		p := startSync(t, []string{haltEnv + "=documents written:2"}, bin, append(slices.Clone(base), "--mapping", mappingC, "-v", "--batch-size", "100")...)
		<-p.done
		killed = p.out.String()
		if p.code == 1 && strings.Contains(killed, "is being run by another process") {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if p.code != -1 || !strings.Contains(killed, "rebuild recorded") {
			t.Fatalf("the run to kill mid-rebuild: exit %d\n%s", p.code, killed)
		}
		break
	}
	t.Logf("killed mid-rebuild after %s", time.Since(start).Round(time.Millisecond))
	rec := peekCheckpoint(target, jobName)
	if rec == nil || !slices.Equal(rec.Rebuilding, []string{"people"}) {
		t.Fatalf("after a kill mid-rebuild the record says rebuilding %v, want people", rec)
	}
	// status says so.
	st := mustCLI(t, "status", "--target", target, "--job", jobName, "--format", "json")
	var status struct {
		Jobs []struct {
			Sync struct {
				Rebuilding []string `json:"rebuilding"`
			} `json:"sync"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(st), &status); err != nil || len(status.Jobs) != 1 || !slices.Equal(status.Jobs[0].Sync.Rebuilding, []string{"people"}) {
		t.Errorf("status --format json does not say people is being rebuilt (%v):\n%s", err, st)
	}
	if st := mustCLI(t, "status", "--target", target, "--job", jobName); !strings.Contains(st, "rebuilding after a change of the mapping, interrupted: people") {
		t.Errorf("status does not say people is being rebuilt:\n%s", st)
	}
	// Changed back: people, part of it written under mapping C, is
	// rebuilt again, by a diff: every document the killed run wrote
	// under C differs from B and is written back (and those the writer
	// changed since); the others are found unchanged.
	underC := 0
	for _, m := range regexp.MustCompile(`documents written collection=people documents=(\d+)`).FindAllStringSubmatch(killed, -1) {
		n, _ := strconv.Atoi(m[1])
		underC += n
	}
	start = time.Now()
	out = run(mappingB, "-v", "--log-format", "json")
	got, ended = rebuildWrites(t, out)
	if !ended || underC == 0 || got["people"] < underC || len(got) != 1 || !strings.Contains(out, "a rebuild under a changed mapping was interrupted") {
		t.Fatalf("the run after the kill rebuilt %v (ended: %v), want people again, at least the %d documents written under the changed mapping:\n%s", got, ended, underC, out)
	}
	t.Logf("the run after the kill: %s; it rebuilt %v", time.Since(start).Round(time.Millisecond), got)
	if rec := peekCheckpoint(target, jobName); rec == nil || len(rec.Rebuilding) > 0 {
		t.Errorf("the record still says rebuilding: %+v", rec)
	}

	w.halt()
	w.report(t)
	start = time.Now()
	run(mappingB)
	t.Logf("catch-up: %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	sameAsFreshMigrate(t, mappingB, db, target)
	t.Logf("verify and a fresh migrate to compare with: %s", time.Since(start).Round(time.Millisecond))

	// A diff job of the same source, on a target of its own: the field
	// added to posts writes posts and nothing else.
	diffTarget, _ := testenv.MongoDB(t)
	diffJob := syncJob(t, db)
	diff := []string{"sync", "--source", db, "--target", diffTarget, "--job", diffJob, "--method", "diff", "--once"}
	mustCLI(t, append(slices.Clone(diff), "--mapping", syncMixed(t))...)
	out = mustCLI(t, append(slices.Clone(diff), "--mapping", mappingB)...)
	written := summaryWritten(t, out)
	if written["posts"] < 1500 || written["comments"] != 0 || written["people"] != 0 {
		t.Errorf("the diff pass after the change wrote %v, want posts only:\n%s", written, out)
	}
	sameAsFreshMigrate(t, mappingB, db, diffTarget)
}

// summaryWritten reads the WRITTEN column of a --once summary's
// collection table.
func summaryWritten(t *testing.T, out string) map[string]int {
	t.Helper()
	got := map[string]int{}
	row := regexp.MustCompile(`(?m)^(\S+)\s+(\d+)\s+(\d+)\s+(\d+)$`)
	for _, m := range row.FindAllStringSubmatch(out, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatal(err)
		}
		got[m[1]] = n
	}
	if len(got) == 0 {
		t.Fatalf("no collection table in:\n%s", out)
	}
	return got
}
