package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
)

// ownFerret is a FerretDB server this test starts, kills and restarts on
// the same port with the same data directory.
type ownFerret struct {
	t    *testing.T
	bin  string
	dir  string
	addr string
	cmd  *exec.Cmd
}

func startOwnFerret(t *testing.T) *ownFerret {
	t.Helper()
	bin := filepath.Join(testenv.Root(t), "bin", "testserver")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin/testserver is missing: run 'make tools' (%v)", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f := &ownFerret{t: t, bin: bin, dir: t.TempDir(), addr: addr}
	f.start()
	t.Cleanup(f.stop)
	return f
}

func (f *ownFerret) uri(db string) string { return "mongodb://" + f.addr + "/" + db }

func (f *ownFerret) start() {
	f.t.Helper()
	f.cmd = exec.Command(f.bin, "serve", "--dir", f.dir, "--addr", f.addr)
	f.cmd.Stdout, f.cmd.Stderr = os.Stderr, os.Stderr
	if err := f.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if c, err := net.Dial("tcp", f.addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.t.Fatalf("FerretDB did not answer at %s", f.addr)
}

func (f *ownFerret) stop() {
	if f.cmd != nil && f.cmd.Process != nil {
		_ = f.cmd.Process.Signal(syscall.SIGKILL)
		_ = f.cmd.Wait()
		f.cmd = nil
	}
}

// TestFaultRecovery restarts the target server and terminates the source
// connection (pg_terminate_backend) in the middle of a run: denorm retries,
// reconnects, says the snapshot was re-taken, and finishes with exactly
// the documents of an undisturbed run.
func TestFaultRecovery(t *testing.T) {
	// Enough persons that the people collection is still streaming from
	// PostgreSQL (held back by the target's pace) when both faults hit.
	bin, mapping, src := crashSetup(t, 20000, 60, 600)
	ferret := startOwnFerret(t)
	base := []string{"migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--batch-size", "10", "--retry-for", "2m"}
	runDenorm(t, bin, append(base, "--target", ferret.uri("reference"))...)

	target := ferret.uri("faulty")
	p := startDenorm(t, bin, append(base, "--target", target, "--job", "fault")...)
	done := make(chan int, 1)
	go func() { done <- p.wait() }()
	waitFor := func(what string, ok func(c *load.Checkpoint) bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			select {
			case code := <-done:
				t.Fatalf("denorm ended (exit %d) before %s\n%s", code, what, p.out)
			default:
			}
			if c := peekCheckpoint(target, "fault"); c != nil && ok(c) {
				t.Logf("%s: checkpoint at collection %s", what, c.Collection)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s\n%s", what, p.out)
	}
	written := func(c *load.Checkpoint, coll string) int64 {
		var n int64
		for _, s := range c.Streams {
			if s.Collection == coll {
				n += s.Written
			}
		}
		return n
	}
	// 1. The target server dies mid-run and comes back 1.5 s later.
	waitFor("people in progress", func(c *load.Checkpoint) bool { return written(c, "people") >= 50 })
	ferret.stop()
	t.Log("FerretDB killed")
	time.Sleep(1500 * time.Millisecond)
	ferret.start()
	t.Log("FerretDB restarted")
	// 2. The source connections are terminated while people are still
	// being read: the merge streams are held back by the target's pace,
	// so their queries are mid-result.
	waitFor("people in progress after the restart", func(c *load.Checkpoint) bool { return written(c, "people") >= 2000 })
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'denorm' AND datname = current_database() AND pid <> pg_backend_pid()) x`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no denorm backend to terminate")
	}
	t.Logf("terminated %d source backend(s)", killed)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("denorm exit %d after the faults\n%s", code, p.out)
		}
	case <-time.After(5 * time.Minute):
		_ = p.cmd.Process.Kill()
		t.Fatalf("denorm did not finish\n%s", p.out)
	}
	out := p.out.String()
	t.Logf("denorm output:\n%s", out)
	for _, want := range []string{"target failed", "source connection lost", "snapshot was re-taken"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not mention %q", want)
		}
	}
	client, err := mongo.Connect(options.Client().ApplyURI(ferret.uri("")))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	for _, c := range crashCollections {
		want := testenv.DumpCollection(t, client.Database("reference"), c)
		got := testenv.DumpCollection(t, client.Database("faulty"), c)
		if len(want) == 0 {
			t.Fatalf("reference %s is empty", c)
		}
		testenv.EqualDocs(t, c, want, got)
		if len(got) != len(slices.Compact(slices.Clone(got))) {
			t.Errorf("%s holds a document twice", c)
		}
	}
	checkNoDuplicates(t, map[string][]string{
		"people":   testenv.DumpCollection(t, client.Database("faulty"), "people"),
		"comments": testenv.DumpCollection(t, client.Database("faulty"), "comments"),
	})
}

// peekCheckpoint reads a checkpoint, nil when none or unreachable.
func peekCheckpoint(target, id string) *load.Checkpoint {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tg, err := load.Open(ctx, target, load.Options{})
	if err != nil {
		return nil
	}
	defer tg.Close(ctx)
	c, _ := tg.Checkpoints().Load(ctx, id)
	return c
}
