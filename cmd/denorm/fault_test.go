package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
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
// connections (pg_terminate_backend) in the middle of a run: denorm retries,
// reconnects, says the snapshot was re-taken, and finishes with exactly
// the documents of an undisturbed run.
//
// Both faults hit while the run waits to save a checkpoint in the middle
// of the people collection (the checkpoint gate, gatedProc), so they land
// where the test says whatever the machine's load: the checkpoint is
// saved to a dead server, and the source connections are open when they
// are terminated.
func TestFaultRecovery(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin, mapping, src := crashSetup(t, 20000, 60, 600)
	ferret := startOwnFerret(t)
	base := []string{"migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--batch-size", "10", "--retry-for", "2m"}
	runDenorm(t, bin, append(base, "--target", ferret.uri("reference"))...)

	target := ferret.uri("faulty")
	p := startGated(t, bin, append(base, "--target", target, "--job", "fault")...)
	hold := func(what string, minWritten int64) {
		t.Helper()
		c, _ := p.until(func(c, _ *job.Record) bool {
			return c.Collection == "people" && written(c, "people") >= minWritten
		}, nil)
		if c == nil {
			p.wait()
			t.Fatalf("denorm ended before %s\n%s", what, p.output())
		}
		t.Logf("%s: holding checkpoint at %d people written", what, written(c, "people"))
	}
	// 1. The target server dies while the run waits to save a checkpoint,
	// and comes back 1.5 s later: saving it fails and is retried.
	hold("people in progress", 50)
	ferret.stop()
	t.Log("FerretDB killed")
	p.release()
	time.Sleep(1500 * time.Millisecond)
	ferret.start()
	t.Log("FerretDB restarted")
	// 2. The source connections are terminated while people are still
	// being read: the run waits at a checkpoint with its merge streams
	// open, each on its own connection, beside the snapshot's. The next
	// read on any of them fails (in people, or when the next collection
	// starts), and the snapshot they shared is gone.
	hold("people in progress after the restart", 2000)
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
	if killed < 2 {
		t.Fatalf("terminated %d denorm backends, want the snapshot's and the merge streams'", killed)
	}
	t.Logf("terminated %d source backend(s)", killed)
	p.ungate()
	done := make(chan int, 1)
	go func() { done <- p.wait() }()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("denorm exit %d after the faults\n%s", code, p.output())
		}
	case <-time.After(5 * time.Minute):
		p.signal(syscall.SIGKILL)
		<-done
		t.Fatalf("denorm did not finish\n%s", p.output())
	}
	out := p.output()
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
	faulty := map[string][]string{}
	for _, c := range crashCollections {
		want := testenv.DumpCollection(t, client.Database("reference"), c)
		faulty[c] = testenv.DumpCollection(t, client.Database("faulty"), c)
		if len(want) == 0 {
			t.Fatalf("reference %s is empty", c)
		}
		// A server's unique _id index keeps a document from being stored
		// twice; what a replayed batch could duplicate is an item inside
		// a document or a comment in two pages: checkNoDuplicates.
		testenv.EqualDocs(t, c, want, faulty[c])
	}
	checkNoDuplicates(t, faulty)
}
