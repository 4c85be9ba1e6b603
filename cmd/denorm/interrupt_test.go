package main

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
)

// syncBuffer is a process's output that the test reads while the
// process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// watched is a denorm process whose output the test follows.
type watched struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan int
}

func startWatched(t *testing.T, bin string, args ...string) *watched {
	t.Helper()
	w := &watched{cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan int, 1)}
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := w.cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		w.done <- code
	}()
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Kill()
		}
	})
	return w
}

// waitOutput waits until the output matches re, or fails after d.
func (w *watched) waitOutput(t *testing.T, re *regexp.Regexp, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < d {
		if re.MatchString(w.out.String()) {
			return time.Since(start)
		}
		select {
		case code := <-w.done:
			w.done <- code
			if re.MatchString(w.out.String()) {
				return time.Since(start)
			}
			t.Fatalf("denorm exited (%d) before printing %q:\n%s", code, re, w.out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("denorm did not print %q within %s:\n%s", re, d, w.out)
	return 0
}

// exit waits for the process's exit code, at most d.
func (w *watched) exit(t *testing.T, d time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case code := <-w.done:
		return code, time.Since(start)
	case <-time.After(d):
		t.Fatalf("denorm still runs %s after the interrupt:\n%s", d, w.out)
	}
	return 0, 0
}

// TestInterruptStuckTarget stops the target server (SIGSTOP on the
// FerretDB process this test started) in the middle of a migration: the
// progress says the write is waiting within seconds; the first SIGINT is
// acknowledged at once and the run ends within the grace period plus the
// bounded checkpoint save, though the write hangs; the checkpoint saved
// before is intact and a resume, once the server answers again, finishes
// with every document. Then a second run is stopped the same way and a
// second SIGINT quits at once.
func TestInterruptStuckTarget(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	ferret := startOwnFerret(t)
	src := personsDB(t, 4000)
	mapping := example(t, "person")
	// Batches under 100 documents: FerretDB stalls on a bulk write of 100
	// or more replaces (README: migrate, Targets), which the resume's replay would be.
	base := []string{"migrate", "--progress", "lines", "--mapping", mapping, "--source", src, "--batch-size", "50", "--retry-for", "2m", "--job", "stuck"}
	stop := func() {
		if err := ferret.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	cont := func() { _ = ferret.cmd.Process.Signal(syscall.SIGCONT) }
	t.Cleanup(cont)
	written := func(c *job.Record) int64 {
		var n int64
		for _, s := range c.Streams {
			n += s.Written
		}
		return n
	}
	waitWritten := func(target string, n int64, w *watched) *job.Record {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if c := peekCheckpoint(target, "stuck"); c != nil && written(c) >= n {
				return c
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no checkpoint with %d documents written:\n%s", n, w.out)
		return nil
	}

	// One SIGINT: stops within seconds, the checkpoint intact.
	target := ferret.uri("once")
	w := startWatched(t, bin, append(base, "--target", target)...)
	waitWritten(target, 600, w)
	stop()
	stalled := w.waitOutput(t, regexp.MustCompile(`people: waiting for target: \d+s, attempt 1`), 15*time.Second)
	t.Logf("the stall was reported %s after the server stopped", stalled.Round(time.Millisecond))
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	ack := w.waitOutput(t, regexp.MustCompile(`interrupt received: stopping; the write in flight has 5s to finish`), 5*time.Second)
	code, took := w.exit(t, 40*time.Second)
	t.Logf("SIGINT acknowledged after %s, exit %d after %s:\n%s", ack.Round(time.Millisecond), code, took.Round(time.Millisecond), w.out)
	out := w.out.String()
	if code != 1 || !strings.Contains(out, "interrupted: the checkpoint could not be saved") || !regexp.MustCompile(`denorm migrate .*--job stuck.* --resume`).MatchString(out) {
		t.Errorf("exit %d; want 1, saying the checkpoint saved before stands and how to resume", code)
	}
	if took > 25*time.Second {
		// 15 s by the clock; the rest is room for a loaded machine.
		t.Errorf("the run took %s to stop after SIGINT, want at most the 5 s grace, the 5 s bounded save and the 5 s lease release", took)
	}
	cont()
	cp := loadCheckpoint(t, target, "stuck")
	if cp == nil || cp.Phase != job.PhaseRunning || written(cp) < 600 {
		t.Fatalf("checkpoint after the interrupt: %+v", cp)
	}
	t.Logf("checkpoint intact: %d documents acknowledged", written(cp))
	// The stopped server kept the run from releasing its job's lease:
	// the resume is refused until the lease expires (--lease-ttl).
	for deadline := time.Now().Add(2 * time.Minute); ; {
		w = startWatched(t, bin, append(base, "--target", target, "--resume")...)
		code, _ := w.exit(t, 3*time.Minute)
		if code == 0 {
			break
		}
		if !strings.Contains(w.out.String(), "is being run by another process") || time.Now().After(deadline) {
			t.Fatalf("resume: exit %d\n%s", code, w.out)
		}
		time.Sleep(time.Second)
	}
	if !strings.Contains(strings.ReplaceAll(w.out.String(), "\n  ", " "), "job stuck in all, with the runs before this one: 4002 rows read, 4002 documents written") {
		t.Errorf("the resumed run's summary does not give the job's totals apart:\n%s", w.out)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(ferret.uri("")))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	if n, err := client.Database("once").Collection("people").CountDocuments(context.Background(), bson.D{}); err != nil || n != 4002 {
		t.Errorf("people after the resume: %d (%v), want 4002", n, err)
	}

	// Two SIGINTs: the second quits at once.
	target = ferret.uri("twice")
	w = startWatched(t, bin, append(base, "--target", target)...)
	waitWritten(target, 600, w)
	stop()
	w.waitOutput(t, regexp.MustCompile(`people: waiting for target`), 15*time.Second)
	_ = w.cmd.Process.Signal(syscall.SIGINT)
	w.waitOutput(t, regexp.MustCompile(`interrupt received`), 5*time.Second)
	_ = w.cmd.Process.Signal(syscall.SIGINT)
	code, took = w.exit(t, 5*time.Second)
	if code != 1 || took > 4*time.Second || !strings.Contains(w.out.String(), "interrupt received again: quitting now") {
		t.Errorf("second SIGINT: exit %d after %s, want 1 at once:\n%s", code, took, w.out)
	}
	cont()
	if cp := loadCheckpoint(t, target, "stuck"); cp == nil || written(cp) < 600 {
		t.Errorf("checkpoint after the second SIGINT: %+v", cp)
	}
}

// TestUnreachableTarget: a target nobody answers at fails the run at
// once (issue 28: it used to be retried for the whole --retry-for, while
// an unreachable source failed at once): one attempt of 5 s, not retried
// however long --retry-for is, and the error names the target and the
// cause, not the driver's topology dump, and says it was not retried.
func TestUnreachableTarget(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	src := seedDB(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	code, out, errs := runCLI(t, "migrate", "--mapping", example(t, "person"), "--source", src, "--target", "mongodb://"+addr+"/x", "--retry-for", "2m")
	took := time.Since(start)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	if strings.Contains(errs, "waiting for target") || strings.Contains(errs, "gave up after") {
		t.Errorf("a target that never answered was retried:\n%s", errs)
	}
	if !strings.Contains(errs, "denorm: cannot reach the target mongodb://"+addr+"/x: no server answered within 5s (serverSelectionTimeoutMS; each connection attempt 10s, connectTimeoutMS): dial tcp "+addr+": connect: connection refused; it never answered, so it is not tried again") || strings.Contains(errs, "topology") {
		t.Errorf("the error does not name the cause plainly:\n%s", errs)
	}
	if took > 30*time.Second {
		t.Errorf("gave up after %s, want about one 5 s attempt (--retry-for 2m is for faults once the target answered)", took)
	}
	_ = testenv.Root(t)
}

// TestInterruptStuckSource: the source stops answering in the middle of a
// stream (a fault proxy passes nothing more on the stream's connection
// after byte 30,000, and never closes it: a half-open connection, which
// only read_timeout's 10 minutes would end). Progress names the
// collection waiting for the source within seconds; an interrupt aimed at
// that report stops the run within seconds with the checkpoint saved; the
// resume, on a healthy path, ends with the exact result.
func TestInterruptStuckSource(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	mapping := filepath.Join(testenv.Root(t), "testdata", "resume", "crash.yaml")
	src := crashSource(t, 600, 40, 400)
	target, _ := testenv.MongoDB(t)
	su, err := url.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFaultProxy(t, su.Host)
	stalled := proxy.cutOnce("downstream", 30000, true)
	args := []string{"migrate", "--progress", "lines", "--mapping", mapping, "--source", proxy.via(src), "--target", target,
		"--job", "src", "--batch-size", "20", "--retry-for", "2m"}
	out := &syncBuffer{}
	sigs := make(chan os.Signal, 2)
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		done <- runSignals(context.Background(), args, out, out, sigs, func(int) { t.Error("one interrupt made denorm quit at once") })
	}()
	waitFor := func(re *regexp.Regexp, d time.Duration) time.Duration {
		t.Helper()
		begin := time.Now()
		for time.Since(begin) < d {
			if re.MatchString(out.String()) {
				return time.Since(begin)
			}
			select {
			case code := <-done:
				done <- code
				if re.MatchString(out.String()) {
					return time.Since(begin)
				}
				t.Fatalf("migrate ended (exit %d) before printing %q:\n%s", code, re, out)
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Fatalf("migrate did not print %q within %s:\n%s", re, d, out)
		return 0
	}
	waitFor(regexp.MustCompile(`\w+: waiting for source: \d+s, attempt 1`), 2*time.Minute)
	if !stalled.fired.Load() {
		t.Fatalf("progress reports a wait for the source, but the stall never fired:\n%s", out)
	}
	t.Logf("the stall was reported %s after the start", time.Since(start).Round(time.Millisecond))
	sigs <- syscall.SIGINT
	waitFor(regexp.MustCompile(`interrupt received: stopping`), 5*time.Second)
	var code int
	select {
	case code = <-done:
	case <-time.After(40 * time.Second):
		t.Fatalf("migrate still runs 40s after the interrupt:\n%s", out)
	}
	took := time.Since(start)
	t.Logf("exit %d:\n%s", code, out)
	if code != exitRuntime || !strings.Contains(out.String(), "interrupted: the checkpoint is saved") {
		t.Errorf("exit %d; want 1, the checkpoint saved", code)
	}
	cp := loadCheckpoint(t, target, "src")
	if cp == nil || cp.Phase != job.PhaseRunning {
		t.Fatalf("checkpoint after the interrupt: %+v", cp)
	}
	t.Logf("run ended %s after its start; checkpoint at collection %q", took.Round(time.Millisecond), cp.Collection)
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", target, "--job", "src", "--batch-size", "20", "--resume"); code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "verify", "-q", "--mapping", mapping, "--source", src, "--target", target); code != 0 {
		t.Errorf("verify after the resume: exit %d\n%s%s", code, out, errs)
	}
}
