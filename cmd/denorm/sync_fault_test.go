package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/churn"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
)

// syncMixed is the mapping the sync fault tests run: blog and person.
func syncMixed(t testing.TB) string {
	return repoPath(t, "cmd", "denorm", "testdata", "sync-mixed.yaml")
}

// lockedBuffer is a process's output, read while the process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// syncProc is a running `denorm sync`, its output readable while it runs.
// done is closed when it has exited, with code set (-1: killed by a
// signal).
type syncProc struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	code int
}

// startSync starts bin with args, env added to the test's environment.
func startSync(t testing.TB, env []string, bin string, args ...string) *syncProc {
	t.Helper()
	p := &syncProc{cmd: exec.Command(bin, args...), out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -2
		}
		p.code = code
		close(p.done)
	}()
	return p
}

// waitOutput waits until the output holds want (after offset bytes) or the
// process ends; it reports whether want appeared.
func (p *syncProc) waitOutput(want string, offset int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if out := p.out.String(); len(out) > offset && strings.Contains(out[offset:], want) {
			return true
		}
		select {
		case <-p.done:
			return strings.Contains(p.out.String()[offset:], want)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}

func (p *syncProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// sameAsFreshMigrate migrates db afresh into an empty database of the
// same server as target and compares the two whole targets document by
// document as raw BSON, field order and types included
// (testenv.CompareTargets), and has denorm verify compare the target with
// the source (exit 0).
func sameAsFreshMigrate(t *testing.T, mapping, db, target string) {
	t.Helper()
	if out, code := denormCLI("verify", "-q", "--mapping", mapping, "--source", db, "--target", target, "--show", "5"); code != 0 {
		t.Fatalf("verify exit %d:\n%s", code, out)
	}
	ref := strings.TrimSuffix(target, "/"+lastPath(target)) + "/ref" + strconv.Itoa(int(jobSeq.Add(1)))
	mustCLI(t, "migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", db, "--target", ref)
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(target))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	defer client.Database(lastPath(ref)).Drop(ctx)
	diff, err := testenv.CompareTargets(ctx, client.Database(lastPath(ref)), client.Database(lastPath(target)),
		testenv.CompareOptions{Ignore: []string{load.RecordCollection}})
	if err != nil {
		t.Fatal(err)
	}
	if !diff.Equal() {
		t.Fatalf("the target differs from a fresh migrate of the same source (want: fresh migrate, found: target):\n%s", diff)
	}
	t.Logf("target equals a fresh migrate, document by document (want/found): %v", diff.Docs)
}

func lastPath(uri string) string { return uri[strings.LastIndex(uri, "/")+1:] }

// TestSyncWritesDuringCopy: a writer keeps changing every mapped table
// while the first sync (--once) copies the slot's snapshot, and stops when
// the checkpoint says the copy is done; once that sync has caught up (and
// a second one finds little or nothing left), the whole target is exactly
// a fresh migrate of the source and verify exits 0: the copy and the
// stream joined with no gap and no overlap.
func TestSyncWritesDuringCopy(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	db := syncDB(t, "testdata/examples/seed.sql")
	addSyncData(t, db, 1500)
	target, _ := testenv.MongoDB(t)
	jobName := syncJob(t, db)
	seed := churn.Seeds(t, 1)[0]
	t.Logf("writer's seed %d (replay: DENORM_TEST_SEED=%d)", seed, seed)
	w := startSeedWriter(t, db, seed, time.Millisecond, 20)
	for w.txs.Load() < 5 {
		time.Sleep(10 * time.Millisecond)
	}
	args := []string{"sync", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", jobName, "--method", "logical", "--once"}
	// The writer stops when the copy is done (the checkpoint says so):
	// what it wrote is what the copy and the stream must join over, and
	// the catch-up stays short.
	var during atomic.Int64
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		before := w.txs.Load()
		for {
			if c := peekCheckpoint(target, jobName); c != nil && c.Sync != nil && c.Phase == job.PhaseDone {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		w.halt()
		during.Store(w.txs.Load() - before)
	}()
	start := time.Now()
	out := mustCLI(t, args...)
	<-copied
	t.Logf("first sync (initial copy and catch-up) took %s; the writer committed %d transactions during the copy:\n%s", time.Since(start).Round(time.Millisecond), during.Load(), out)
	if during.Load() < 20 || !strings.Contains(out, "initial copy") {
		t.Fatalf("the writer committed %d transactions during the copy; want a copy with writes during it", during.Load())
	}
	w.report(t)
	t.Logf("second sync:\n%s", mustCLI(t, args...))
	sameAsFreshMigrate(t, syncMixed(t), db, target)
}

// haltPoint is where a run of TestSyncCrashResume is killed: the Nth time
// sync reaches Step (see haltEnv).
type haltPoint struct {
	Step  string
	N     int
	Where string
}

// TestSyncCrashResume kills `denorm sync --follow` with SIGKILL at 12
// points while a writer changes the source, each aimed by a step and a
// count (DENORM_TEST_HALT), not by a delay: right after the slot is made
// and before its position is saved, twice during the initial copy, a
// batch received and nothing written, in the middle of a batch's writes
// (after its first, a later and a delete), between the writes and the
// checkpoint, between the checkpoint and the slot's confirmation, and
// between batches. Each run resumes from what the last one saved. Once
// the writer stops, one sync --once must bring the target to exactly a
// fresh migrate of the source, and verify must exit 0. The counts come
// from the seed (DENORM_TEST_SEED replays one).
func TestSyncCrashResume(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	db := syncDB(t, "testdata/examples/seed.sql")
	addSyncData(t, db, 300)
	target, _ := testenv.MongoDB(t)
	jobName := syncJob(t, db)
	seed := churn.Seeds(t, 1)[0]
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d (replay: DENORM_TEST_SEED=%d)", seed, seed)
	points := []haltPoint{
		{"slot created", 1, "the slot made, its position not saved"},
		{"copy checkpoint saved", 2 + rng.IntN(5), "during the initial copy"},
		{"copy checkpoint saved", 2 + rng.IntN(5), "during the resumed initial copy"},
		{"applying a batch", 1 + rng.IntN(2), "a batch received, nothing written"},
		{"documents written", 1, "mid-batch: its first write acknowledged"},
		{"documents written", 2 + rng.IntN(8), "mid-batch: a later write acknowledged"},
		{"documents deleted", 1 + rng.IntN(3), "mid-batch: after a delete"},
		{"batch written", 1 + rng.IntN(2), "after a batch's writes, before its checkpoint"},
		{"checkpoint saved", 1 + rng.IntN(2), "after the checkpoint, before the slot's confirmation"},
		{"position confirmed", 1 + rng.IntN(3), "between batches"},
		{"documents written", 1 + rng.IntN(12), "mid-batch"},
		{"checkpoint saved", 1 + rng.IntN(4), "after the checkpoint, before the slot's confirmation"},
	}
	w := startSeedWriter(t, db, seed, 50*time.Millisecond, 5)
	// A killed run's lease blocks the job until it expires: a short TTL,
	// and a run that finds it still held is started again.
	args := []string{"sync", "-v", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", jobName,
		"--method", "logical", "--follow", "--batch-size", "50", "--max-delay", "200ms", "--lease-ttl", "1s"}
	for i := 0; i < len(points); i++ {
		hp := points[i]
		start := time.Now()
		p := startSync(t, []string{fmt.Sprintf("%s=%s:%d", haltEnv, hp.Step, hp.N)}, bin, args...)
		select {
		case <-p.done:
			code, out := p.code, p.out.String()
			if code == 1 && strings.Contains(out, "is being run by another process") {
				time.Sleep(200 * time.Millisecond) // the killed run's lease has not expired yet
				i--
				continue
			}
			if !strings.Contains(out, fmt.Sprintf("halting at %q #%d", hp.Step, hp.N)) {
				t.Fatalf("run %d (to halt at %q #%d) ended by itself (exit %d):\n%s", i, hp.Step, hp.N, code, out)
			}
			if code != -1 {
				t.Fatalf("run %d: exit %d, want killed by SIGKILL", i, code)
			}
		case <-time.After(4 * time.Minute):
			p.kill()
			t.Fatalf("run %d never reached %q #%d:\n%s", i, hp.Step, hp.N, p.out)
		}
		t.Logf("run %d killed at %q #%d (%s) after %s", i, hp.Step, hp.N, hp.Where, time.Since(start).Round(time.Millisecond))
	}
	w.halt()
	w.report(t)
	start := time.Now()
	var out string
	for {
		var code int
		out, code = denormCLI("sync", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", jobName, "--method", "logical", "--once", "--lease-ttl", "1s")
		if code == 1 && strings.Contains(out, "is being run by another process") && time.Since(start) < time.Minute {
			time.Sleep(200 * time.Millisecond) // the last killed run's lease
			continue
		}
		if code != 0 {
			t.Fatalf("final sync: exit %d\n%s", code, out)
		}
		break
	}
	t.Logf("final sync in %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	sameAsFreshMigrate(t, syncMixed(t), db, target)
}

// ownPostgres is a PostgreSQL cluster this test starts (scripts/pg.sh),
// stops and restarts on the same port.
type ownPostgres struct {
	script, dir, port, url string
}

func startOwnPostgres(t *testing.T) *ownPostgres {
	t.Helper()
	dir := t.TempDir()
	// The server runs as an unprivileged user when the test runs as root:
	// it must reach its directory.
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	p := &ownPostgres{script: repoPath(t, "scripts", "pg.sh"), dir: filepath.Join(dir, "pg"), port: port}
	p.start(t)
	t.Cleanup(func() { _ = exec.Command(p.script, "stop", p.dir).Run() })
	return p
}

func (p *ownPostgres) start(t *testing.T) {
	t.Helper()
	out, err := exec.Command(p.script, "start", p.dir, p.port).Output()
	if err != nil {
		t.Fatalf("pg.sh start: %v", err)
	}
	p.url = strings.TrimSpace(string(out))
}

func (p *ownPostgres) stop(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(p.script, "stop", p.dir).CombinedOutput(); err != nil {
		t.Fatalf("pg.sh stop: %v\n%s", err, out)
	}
}

// db creates a database on the cluster and returns its URL.
func (p *ownPostgres) db(t *testing.T, name string) string {
	t.Helper()
	testenv.Exec(t, p.url, "CREATE DATABASE "+name)
	return strings.Replace(p.url, "/postgres?", "/"+name+"?", 1)
}

// TestSyncServerRestarts follows a source that a writer keeps changing,
// restarts FerretDB and then PostgreSQL under `sync --follow`: sync
// retries, reconnects its change stream from the saved position, and goes
// on; once the writer stops and sync has caught up, SIGTERM stops it
// (exit 0) and the target is exactly a fresh migrate of the source.
func TestSyncServerRestarts(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	pg := startOwnPostgres(t)
	db := pg.db(t, "restarts")
	testenv.PsqlFile(t, db, repoPath(t, "testdata", "examples", "seed.sql"))
	testenv.PsqlFile(t, db, repoPath(t, identityFull))
	addSyncData(t, db, 500)
	ferret := startOwnFerret(t)
	target := ferret.uri("synced")
	jobName := syncJob(t, db)
	seed := churn.Seeds(t, 1)[0]
	t.Logf("writer's seed %d (replay: DENORM_TEST_SEED=%d)", seed, seed)
	w := startSeedWriter(t, db, seed, 50*time.Millisecond, 5)
	p := startSync(t, nil, bin, "sync", "-v", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", jobName,
		"--method", "logical", "--follow", "--retry-for", "2m", "--metrics-addr", "127.0.0.1:0")
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.kill()
		}
	})
	batches := func() int { return strings.Count(p.out.String(), "position confirmed") }
	waitBatches := func(what string, n int) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for batches() < n {
			select {
			case <-p.done:
				t.Fatalf("sync ended (exit %d) %s:\n%s", p.code, what, p.out)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no batch applied %s:\n%s", what, p.out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Each server stays down until sync has met the failure and said it
	// retries (not for a delay sized on one machine), then comes back.
	waitFailure := func(what, want string, offset int) {
		t.Helper()
		if !p.waitOutput(want, offset, 3*time.Minute) {
			t.Fatalf("sync never said %q %s:\n%s", want, what, p.out)
		}
	}
	waitBatches("after the initial copy", 3)
	offset := len(p.out.String())
	ferret.stop()
	t.Log("FerretDB killed")
	waitFailure("while FerretDB was down", "target failed", offset)
	ferret.start()
	t.Log("FerretDB restarted")
	waitBatches("after FerretDB's restart", batches()+3)
	offset = len(p.out.String())
	pg.stop(t)
	t.Log("PostgreSQL stopped")
	waitFailure("while PostgreSQL was down", "retrying in", offset)
	pg.start(t)
	t.Log("PostgreSQL restarted")
	waitBatches("after PostgreSQL's restart", batches()+3)
	w.halt()
	w.report(t)
	// Caught up: the saved position passes every commit.
	src, err := extract.ParseSource(db)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := src.Logical(jobName)
	if err != nil {
		t.Fatal(err)
	}
	goal, err := lg.CommittedWAL(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		c := peekCheckpoint(target, jobName)
		if c != nil && c.Sync != nil && c.Sync.Position >= goal {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sync did not catch up with %s:\n%s", goal, p.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if <-p.done; p.code != 0 {
		t.Fatalf("sync exit %d after SIGTERM:\n%s", p.code, p.out)
	}
	out := p.out.String()
	for _, want := range []string{"target failed", "retrying", "stopped: position"} {
		if !strings.Contains(out, want) {
			t.Errorf("sync's output does not mention %q:\n%s", want, out)
		}
	}
	t.Logf("%d batches applied; retries: %d", batches(), strings.Count(out, "retry"))
	sameAsFreshMigrate(t, syncMixed(t), db, target)
}

// TestSyncSlotInvalidated: a stopped logical job whose slot PostgreSQL
// invalidated (its WAL removed past max_slot_wal_keep_size while the job
// did not run) does not need --drop: the next sync catches up with a diff
// from a new slot's snapshot and goes on streaming; the target ends exact
// and the source keeps no more WAL for the job than the budget and a
// segment.
func TestSyncSlotInvalidated(t *testing.T) {
	t.Parallel() // parallelTests: its own server, target and job
	pg := startOwnPostgres(t)
	testenv.Exec(t, pg.url, "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'")
	pg.stop(t)
	pg.start(t)
	db := pg.db(t, "inval")
	testenv.ExecFile(t, db, repoPath(t, "testdata", "examples", "seed.sql"))
	testenv.ExecFile(t, db, repoPath(t, identityFull))
	target, _ := testenv.MongoDB(t)
	name := fmt.Sprintf("inval_%d", os.Getpid())
	mapping := example(t, "blog")
	args := []string{"sync", "--mapping", mapping, "--source", db, "--target", target, "--job", name, "--method", "logical", "--once"}
	mustCLI(t, args...)
	slot := "denorm_" + name
	status := func() string {
		return testenv.QueryString(t, db, fmt.Sprintf("(SELECT wal_status FROM pg_replication_slots WHERE slot_name = '%s')", slot))
	}
	// The job does not run; the source writes past the budget.
	for i := 0; i < 8 && status() != "lost"; i++ {
		testenv.Exec(t, db, fmt.Sprintf(`UPDATE comment SET comment = 'w%d ' || id; SELECT pg_switch_wal(); CHECKPOINT;`, i))
	}
	if s := status(); s != "lost" {
		t.Fatalf("the slot was not invalidated (wal_status %s)", s)
	}
	out := mustCLI(t, args...)
	if !strings.Contains(out, "catching up with a diff against the source, then streaming from a new replication slot") {
		t.Errorf("sync did not say what it did:\n%s", out)
	}
	if vout, code := denormCLI("verify", "-q", "--mapping", mapping, "--source", db, "--target", target, "--show", "5"); code != 0 {
		t.Fatalf("verify exit %d after the catch-up:\n%s", code, vout)
	}
	testenv.Exec(t, db, `UPDATE comment SET comment = 'streamed' WHERE id = (SELECT max(id) FROM comment)`)
	mustCLI(t, args...)
	if vout, code := denormCLI("verify", "-q", "--mapping", mapping, "--source", db, "--target", target, "--show", "5"); code != 0 {
		t.Fatalf("verify exit %d after streaming from the new slot:\n%s", code, vout)
	}
	if s := status(); s != "reserved" && s != "extended" {
		t.Errorf("the new slot's wal_status is %q", s)
	}
	retained, err := strconv.ParseInt(testenv.QueryString(t, db, fmt.Sprintf("(SELECT pg_current_wal_lsn() - restart_lsn FROM pg_replication_slots WHERE slot_name = '%s')::bigint", slot)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if limit := int64(1<<20 + 16<<20); retained > limit {
		t.Errorf("the slot keeps %d bytes of WAL, over the budget and a segment (%d)", retained, limit)
	}
	_ = dropSlot(context.Background(), db, name)
}
