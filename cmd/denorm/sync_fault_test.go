package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
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
type syncProc struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan int
}

func startSync(t testing.TB, bin string, args ...string) *syncProc {
	t.Helper()
	p := &syncProc{cmd: exec.Command(bin, args...), out: &lockedBuffer{}, done: make(chan int, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
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
		p.done <- code
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
		case code := <-p.done:
			p.done <- code
			return strings.Contains(p.out.String(), want)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}

func (p *syncProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// killPoint names where a killed sync was, from its -v output: the last
// step it logged.
func killPoint(out string) string {
	last := ""
	for _, line := range strings.Split(out, "\n") {
		for _, step := range []string{"replication slot", "initial copy", "applying a batch", "batch written", "checkpoint saved", "position confirmed"} {
			if strings.Contains(line, step) {
				last = step
			}
		}
	}
	switch last {
	case "":
		return "before the slot"
	case "replication slot", "initial copy":
		return "during the initial copy"
	case "applying a batch":
		return "mid-batch (writing)"
	case "batch written":
		return "after the writes, before the checkpoint"
	case "checkpoint saved":
		return "after the checkpoint, before confirming"
	}
	return "between batches"
}

// sameAsFreshMigrate migrates db afresh into an empty database of the
// same server as target and compares every collection of mapping,
// document by document (relaxed Extended JSON sorted by _id), and has
// denorm verify compare the target with the source as BSON (exit 0).
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
	for _, coll := range []string{"posts", "comments", "people"} {
		want := testenv.DumpCollection(t, client.Database(lastPath(ref)), coll)
		got := testenv.DumpCollection(t, client.Database(lastPath(target)), coll)
		if len(want) == 0 {
			t.Fatalf("fresh migrate wrote no %s", coll)
		}
		testenv.EqualDocs(t, coll, want, got)
	}
}

func lastPath(uri string) string { return uri[strings.LastIndex(uri, "/")+1:] }

// TestSyncWritesDuringCopy: a writer keeps changing every mapped table
// while the first sync copies the slot's snapshot; after the writer stops
// and a second sync catches up, the target is exactly a fresh migrate of
// the source: the copy and the stream joined with no gap and no overlap.
func TestSyncWritesDuringCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	db := syncDB(t, "testdata/examples/seed.sql")
	addSyncData(t, db, 3000)
	target, _ := testenv.MongoDB(t)
	job := syncJob(t, db)
	w := startSeedWriter(t, db, rand.Uint64(), time.Millisecond)
	for w.txs.Load() < 5 {
		time.Sleep(10 * time.Millisecond)
	}
	args := []string{"sync", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", job, "--method", "logical", "--once"}
	before := w.txs.Load()
	start := time.Now()
	out := mustCLI(t, args...)
	during := w.txs.Load() - before
	t.Logf("first sync (initial copy and catch-up) took %s while the writer committed %d transactions:\n%s", time.Since(start).Round(time.Millisecond), during, out)
	if during < 20 || !strings.Contains(out, "initial copy") {
		t.Fatalf("the writer committed %d transactions during the first sync; want a copy with writes during it", during)
	}
	w.halt()
	w.report(t)
	t.Logf("second sync:\n%s", mustCLI(t, args...))
	sameAsFreshMigrate(t, syncMixed(t), db, target)
}

// TestSyncCrashResume kills `denorm sync --follow` with SIGKILL at 12
// points while a writer changes the source: during the slot's creation and
// the initial copy, in the middle of writing a batch, between the writes
// and the checkpoint, between the checkpoint and the slot's confirmation,
// between batches. Each restart resumes from the saved position; after
// the writer stops, one sync --once brings the target to exactly a fresh
// migrate of the source.
func TestSyncCrashResume(t *testing.T) {
	bin := denormBinary(t)
	db := syncDB(t, "testdata/examples/seed.sql")
	addSyncData(t, db, 2000)
	target, _ := testenv.MongoDB(t)
	job := syncJob(t, db)
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	w := startSeedWriter(t, db, seed, 3*time.Millisecond)
	args := []string{"sync", "-v", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", job,
		"--method", "logical", "--follow", "--batch-size", "50", "--max-delay", "200ms"}
	points := map[string]int{}
	for i := 0; i < 12; i++ {
		p := startSync(t, bin, args...)
		switch {
		case i < 3:
			// The first runs: killed while the slot is made or the copy runs.
			p.waitOutput("level=", 0, time.Minute)
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		case i < 9:
			// In the middle of a batch: its writes have begun.
			if !p.waitOutput("applying a batch", 0, time.Minute) {
				t.Fatalf("run %d applied no batch:\n%s", i, p.out)
			}
			time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		default:
			time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
		}
		select {
		case code := <-p.done:
			t.Fatalf("run %d ended by itself (exit %d):\n%s", i, code, p.out)
		default:
		}
		p.kill()
		point := killPoint(p.out.String())
		points[point]++
		t.Logf("run %d killed %s", i, point)
	}
	t.Logf("kill points: %v", points)
	if points["during the initial copy"]+points["before the slot"] == 0 || points["mid-batch (writing)"] == 0 {
		t.Errorf("no kill during the initial copy or in the middle of a batch: %v", points)
	}
	w.halt()
	w.report(t)
	out := mustCLI(t, "sync", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", job, "--method", "logical", "--once")
	t.Logf("final sync:\n%s", out)
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
	bin := denormBinary(t)
	pg := startOwnPostgres(t)
	db := pg.db(t, "restarts")
	testenv.PsqlFile(t, db, repoPath(t, "testdata", "examples", "seed.sql"))
	testenv.Exec(t, db, identityFull)
	addSyncData(t, db, 500)
	ferret := startOwnFerret(t)
	target := ferret.uri("synced")
	job := syncJob(t, db)
	w := startSeedWriter(t, db, rand.Uint64(), 5*time.Millisecond)
	p := startSync(t, bin, "sync", "-v", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", job,
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
			case code := <-p.done:
				t.Fatalf("sync ended (exit %d) %s:\n%s", code, what, p.out)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no batch applied %s:\n%s", what, p.out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitBatches("after the initial copy", 3)
	ferret.stop()
	t.Log("FerretDB killed")
	time.Sleep(1500 * time.Millisecond)
	ferret.start()
	t.Log("FerretDB restarted")
	waitBatches("after FerretDB's restart", batches()+3)
	pg.stop(t)
	t.Log("PostgreSQL stopped")
	time.Sleep(1500 * time.Millisecond)
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
	lg, err := src.Logical(job)
	if err != nil {
		t.Fatal(err)
	}
	goal, err := lg.CommittedWAL(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c := peekCheckpoint(target, job)
		if c != nil && c.Sync != nil {
			if pos, err := extract.ParseLSN(c.Sync.Position); err == nil && pos >= goal {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sync did not catch up with %s:\n%s", goal, p.out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := <-p.done; code != 0 {
		t.Fatalf("sync exit %d after SIGTERM:\n%s", code, p.out)
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
