package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/denorm/denorm/internal/churn"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline/syncer"
)

// crashTimeEnv is how long TestSyncCrashPoints draws seeds (a Go
// duration; default crashTimeDefault, `make crash CRASHTIME=30m` for
// longer). Whatever it says, the test runs two seeds at least: one per
// method.
const (
	crashTimeEnv     = "DENORM_CRASH_TIME"
	crashTimeDefault = 60 * time.Second
)

// crashMappings are the mappings the crash test syncs, with the SQL files
// of their source: over seed.sql, the blog, person and hybrid examples in
// one (embeds, buckets, a subset, lookups, a count aggregate, id arrays,
// an embed through a join table) and the catalog example (two document
// types in one collection); Pagila on its first 150 customers
// (churn-subset.sql, as TestChurnRounds: nested one-side embeds, count,
// sum and max aggregates, buckets, a partitioned table).
// Batches (--batch-size, and --max-keys when drawn) are drawn from batch
// to 4*batch: small enough that a pass makes several writes, and a kill
// lands between them; Pagila's are larger (FerretDB's round trips). A
// seed on Pagila takes minutes: it runs only when DENORM_CRASH_TIME is
// at least minBudget (or replayed).
var crashMappings = []struct {
	mapping   string
	sql       []string
	batch     int
	minBudget time.Duration
}{
	{"cmd/denorm/testdata/crash-mixed.yaml", []string{"testdata/examples/seed.sql"}, 2, 0},
	{"mappings/examples/catalog.yaml", []string{"testdata/examples/seed.sql"}, 2, 0},
	{"mappings/examples/pagila.yaml", []string{"testdata/pagila/pagila-schema.sql", "testdata/pagila/pagila-data.sql", "testdata/pagila/churn-subset.sql"}, 50, 10 * time.Minute},
}

// crashCombo is the method and mapping (an index of crashMappings) a
// seed runs: seeds 6k to 6k+5 run logical and diff in turn over the
// mappings in the order 0, 1, 2, 0, 1, 2, so that every two seeds from a
// multiple of 6 cover both methods, and six seeds every method on every
// mapping.
func crashCombo(seed uint64) (method string, mapping int) {
	method = job.SyncLogical
	if seed%2 == 1 {
		method = job.SyncDiff
	}
	return method, int(seed % 6 % 3)
}

// crashTally counts, per method and crash point, the kills that fired and
// the runs aimed at a point that ended before reaching it, and the
// comparisons with a fresh migrate.
type crashTally struct {
	mu          sync.Mutex
	fired       map[string]map[string]int
	missed      map[string]map[string]int
	comparisons int
}

func (c *crashTally) add(m map[string]map[string]int, method, step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m[method] == nil {
		m[method] = map[string]int{}
	}
	m[method][step]++
}

func (c *crashTally) total(method string) int {
	n := 0
	for _, k := range c.fired[method] {
		n += k
	}
	return n
}

// table is the counts, one line per crash point.
func (c *crashTally) table() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "crash point\tlogical fired\tmissed\tdiff fired\tmissed\t")
	cell := func(m map[string]map[string]int, method string, p syncer.CrashPoint) string {
		if p.Only != "" || !slices.Contains(p.Copy, method) && !slices.Contains(p.Pass, method) {
			return "-"
		}
		return fmt.Sprint(m[method][p.Step])
	}
	for _, p := range syncer.Steps {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t\n", p.Step,
			cell(c.fired, job.SyncLogical, p), cell(c.missed, job.SyncLogical, p),
			cell(c.fired, job.SyncDiff, p), cell(c.missed, job.SyncDiff, p))
	}
	fmt.Fprintf(w, "total\t%d\t\t%d\t\t\n", c.total(job.SyncLogical), c.total(job.SyncDiff))
	w.Flush()
	return b.String()
}

// TestSyncCrashPoints kills `denorm sync --once` (a process, SIGKILL) at
// every crash point of a sync pass (syncer.Steps: a write or a delete
// acknowledged, between two collections, a batch written, its position
// saved, confirmed to the slot, a caught-up position saved and confirmed,
// a diff pass written and saved, the slot made, the initial copy's
// progress saved), for both methods, and checks after each round that the
// runs that follow the kill bring the target to exactly a fresh migrate of
// the source, with verify exiting 0.
//
// Per seed (the method and the mapping follow from it, crashCombo): the
// initial copy is killed at each of its points in turn, then rounds of
// random writes (internal/churn's generator) are each followed by two to
// four sync runs, each aimed at a crash point and a count
// (DENORM_TEST_HALT) drawn from the seed, with more random writes now and
// then between a kill and the next run; sync --once then runs to its end
// and the target is compared. The rounds go on until every point of the
// method has fired at least once in the seed (a point that never fires,
// a step renamed or no longer reached, fails the test).
//
// DENORM_CRASH_TIME (default 60s) is how long seeds are drawn, two at
// least; DENORM_TEST_SEED=N replays seed N alone (the same writes and the
// same kills; where a batch of changes ends depends on timing).
func TestSyncCrashPoints(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, targets and jobs
	bin := denormBinary(t)
	budget := crashTimeDefault
	if s := os.Getenv(crashTimeEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			t.Fatalf("%s=%q: not a duration", crashTimeEnv, s)
		}
		budget = d
	}
	replay := os.Getenv("DENORM_TEST_SEED") != ""
	base := churn.Seeds(t, 1)[0]
	if !replay {
		base -= base % 6 // crashCombo: the first two seeds cover both methods
	}
	tally := &crashTally{fired: map[string]map[string]int{}, missed: map[string]map[string]int{}}
	start := time.Now()
	methods := map[string]bool{}
	seeds := 0
	for seed := base; ; seed++ {
		if replay && seeds == 1 || !replay && seeds >= 2 && time.Since(start) >= budget {
			break
		}
		method, m := crashCombo(seed)
		if !replay && budget < crashMappings[m].minBudget {
			continue
		}
		seeds++
		methods[method] = true
		if !t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { crashSeed(t, bin, seed, tally) }) {
			break
		}
	}
	result := "0 mismatches"
	if t.Failed() {
		result = "FAILED"
	}
	t.Logf("%d seeds in %s, %d crashes fired, %d comparisons with a fresh migrate, %s:\n%s",
		seeds, time.Since(start).Round(time.Second), tally.total(job.SyncLogical)+tally.total(job.SyncDiff), tally.comparisons, result, tally.table())
	if t.Failed() {
		return
	}
	for _, p := range syncer.Steps {
		for method := range methods {
			if p.Only == "" && (slices.Contains(p.Copy, method) || slices.Contains(p.Pass, method)) && tally.fired[method][p.Step] == 0 {
				t.Errorf("no kill fired at %q with --method %s: a step renamed or no longer reached", p.Step, method)
			}
		}
	}
}

// crashRun is one seed's job: its source, target and sync command line.
type crashRun struct {
	t       *testing.T
	bin     string
	seed    uint64
	rng     *rand.Rand
	method  string
	mapping string
	db      string
	target  string
	args    []string
	gen     *churn.Generator
	tally   *crashTally
	writes  int
	history []string
}

func crashSeed(t *testing.T, bin string, seed uint64, tally *crashTally) {
	ctx := context.Background()
	method, m := crashCombo(seed)
	mapping := repoPath(t, crashMappings[m].mapping)
	t.Logf("seed %d: --method %s, %s (replay: DENORM_TEST_SEED=%d DENORM_CRASH_TIME=0 go test -run '^TestSyncCrashPoints$' ./cmd/denorm)", seed, method, crashMappings[m].mapping, seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	db := syncDB(t, crashMappings[m].sql...)
	if m == 0 {
		addSyncData(t, db, 30)
	}
	// Writes to a table no mapping reads move the WAL past the last
	// batch: a logical pass then saves and confirms a position with
	// nothing to apply (the idle steps).
	testenv.Exec(t, db, "CREATE TABLE crash_noise (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())")
	file, err := mappings.Load(mapping)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := churn.New(ctx, db, churn.Options{Seed: seed, Tables: file.Tables()})
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close(ctx)
	target, _ := testenv.MongoDB(t)
	jobName := syncJob(t, db)
	r := &crashRun{t: t, bin: bin, seed: seed, rng: rng, method: method, mapping: mapping, db: db, target: target, gen: gen, tally: tally}
	batch := crashMappings[m].batch
	r.args = []string{"sync", "--mapping", mapping, "--source", db, "--target", target, "--job", jobName,
		"--method", method, "--once", "--lease-ttl", "1s", "--batch-size", fmt.Sprint(batch + rng.IntN(3*batch+1))}
	if method == job.SyncLogical {
		if rng.IntN(2) == 0 {
			r.args = append(r.args, "--max-delay", "1ms") // a batch per transaction or so
		}
		if rng.IntN(3) == 0 {
			r.args = append(r.args, "--max-keys", fmt.Sprint(batch+rng.IntN(batch+1))) // collections rebuilt whole by a diff
		}
	}
	t.Logf("sync %s", strings.Join(r.args[9:], " "))

	var copyPoints, passPoints []syncer.CrashPoint
	for _, p := range syncer.Steps {
		if p.Only != "" {
			continue // not reached by random writes (see CrashPoint.Only)
		}
		if slices.Contains(p.Copy, method) {
			copyPoints = append(copyPoints, p)
		}
		if slices.Contains(p.Pass, method) {
			passPoints = append(passPoints, p)
		}
	}
	// The initial copy, killed at each of its points in turn (each run
	// resumes what the last one saved). A logical copy's record says it
	// is done before its pass is: once killed after the pass written, it
	// does not reach the pass saved. The job is then dropped and started
	// again on the full target (a copy by a diff), killed there.
	again := []string{}
	for _, p := range copyPoints {
		n := 1
		switch {
		case p.Step == syncer.StepCopySaved:
			n = 1 + rng.IntN(6)
		case method == job.SyncLogical && p.Step == syncer.StepPassSaved:
			again = append(again, syncer.StepSlotCreated, p.Step)
			continue
		}
		r.attempt(p.Step, n)
	}
	r.check("the initial copy")
	if len(again) > 0 {
		mustCLI(t, "sync", "--mapping", mapping, "--source", db, "--target", target, "--job", jobName, "--drop-slot")
		for _, step := range again {
			r.attempt(step, 1)
		}
		r.check("the job dropped and copied again")
	}

	// Rounds of writes, each followed by runs killed at points of the
	// passes: first every point in an order the seed shuffles (a point
	// that did not fire goes to the back), then any.
	pending := slices.Clone(passPoints)
	rng.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
	const minRounds, maxRounds = 3, 24
	truncate := 2 + rng.IntN(minRounds)
	round := 1
	for ; round <= maxRounds && (len(pending) > 0 || round <= minRounds); round++ {
		r.history = nil
		r.write(round == truncate)
		for i, chain := 0, 2+rng.IntN(3); i < chain; i++ {
			p, n := passPoints[rng.IntN(len(passPoints))], 0
			if len(pending) > 0 {
				p, n = pending[0], 1
			}
			if n == 0 || rng.IntN(2) == 0 {
				n = 1 + rng.IntN(crashReach(p.Step))
			}
			fired := r.attempt(p.Step, n)
			switch {
			case fired && len(pending) > 0 && pending[0].Step == p.Step:
				pending = pending[1:]
			case !fired && len(pending) > 0 && pending[0].Step == p.Step:
				pending = append(pending[1:], p)
			}
			// Writes after a kill, before the next run: or the pass that
			// ran to its end left nothing for the next one to do.
			if !fired || rng.IntN(3) == 0 {
				r.write(false)
			}
		}
		r.check(fmt.Sprintf("round %d", round))
	}
	if len(pending) > 0 {
		var names []string
		for _, p := range pending {
			names = append(names, fmt.Sprintf("%q", p.Step))
		}
		t.Errorf("seed %d: after %d rounds no kill fired at %s with --method %s: a step renamed or no longer reached", seed, round-1, strings.Join(names, ", "), method)
	}
}

// crashReach is about how often one sync --once pass of the crash test
// reaches step: the counts a kill is aimed at are drawn up to it.
func crashReach(step string) int {
	switch step {
	case syncer.StepDocumentsWritten, syncer.StepDocumentsDeleted, syncer.StepCollectionRebuilt:
		return 6
	case syncer.StepPassWritten, syncer.StepPassSaved:
		return 1
	}
	return 2
}

// write makes a round of random writes, then a write to a table no
// mapping reads.
func (r *crashRun) write(truncate bool) {
	r.t.Helper()
	rep, err := r.gen.Round(context.Background(), truncate)
	if err != nil {
		r.t.Fatalf("seed %d: the random writes failed: %v", r.seed, err)
	}
	r.writes++
	testenv.Exec(r.t, r.db, "INSERT INTO crash_noise DEFAULT VALUES")
	r.history = append(r.history, fmt.Sprintf("writes %d (%d statements)", r.writes, rep.Statements))
}

// attempt runs sync aimed to be killed the nth time it reaches step; it
// reports whether it was (false: the pass ended before, exit 0).
func (r *crashRun) attempt(step string, n int) bool {
	t := r.t
	t.Helper()
	for {
		start := time.Now()
		p := startSync(t, []string{fmt.Sprintf("%s=%s:%d", haltEnv, step, n)}, r.bin, r.args...)
		select {
		case <-p.done:
		case <-time.After(4 * time.Minute):
			p.kill()
			t.Fatalf("seed %d: sync aimed at %q #%d still runs after 4 minutes:\n%s", r.seed, step, n, p.out)
		}
		out := p.out.String()
		switch {
		case p.code == 1 && strings.Contains(out, "is being run by another process"):
			time.Sleep(200 * time.Millisecond) // the killed run's lease
			continue
		case p.code == -1 && strings.Contains(out, fmt.Sprintf("halting at %q #%d", step, n)):
			r.tally.add(r.tally.fired, r.method, step)
			r.history = append(r.history, fmt.Sprintf("killed at %q #%d after %s", step, n, time.Since(start).Round(time.Millisecond)))
			return true
		case p.code == 0:
			r.tally.add(r.tally.missed, r.method, step)
			r.history = append(r.history, fmt.Sprintf("aimed at %q #%d: the pass ended first", step, n))
			return false
		}
		t.Fatalf("seed %d: sync aimed at %q #%d: exit %d:\n%s", r.seed, step, n, p.code, out)
	}
}

// check runs sync --once to its end, then the target must equal a fresh
// migrate of the source and verify must exit 0.
func (r *crashRun) check(what string) {
	t := r.t
	t.Helper()
	start := time.Now()
	for {
		out, code := denormCLI(r.args...)
		if code == 1 && strings.Contains(out, "is being run by another process") && time.Since(start) < time.Minute {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if code != 0 {
			t.Fatalf("seed %d, %s: the sync after the kills (%s): exit %d\n%s", r.seed, what, strings.Join(r.history, "; "), code, out)
		}
		break
	}
	t.Logf("%s: %s; then a sync to the end", what, strings.Join(r.history, "; "))
	r.history = nil
	sameAsFreshMigrate(t, r.mapping, r.db, r.target)
	r.tally.mu.Lock()
	r.tally.comparisons++
	r.tally.mu.Unlock()
}
