package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
)

// lockTable holds an ACCESS EXCLUSIVE lock on table in the source until
// the returned function (or the test's end) releases it: a run reaching
// the table waits there, holding its lease, for as long as a test needs.
func lockTable(t *testing.T, src, table string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN ACCESS EXCLUSIVE MODE")
	}
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = tx.Commit(ctx)
			_ = conn.Close(ctx)
		})
	}
	t.Cleanup(release)
	return release
}

// statusOf runs `denorm status --format json` on target and returns job
// id's entry (nil when the target has none).
func statusOf(t *testing.T, target, id string) *jobJSON {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"status", "--target", target, "--format", "json"}, &out, &errb); code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out.String(), errb.String())
	}
	var st statusJSON
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, out.String())
	}
	if st.SchemaVersion != 1 || st.Store == "" || st.Generated.IsZero() {
		t.Fatalf("status header %+v", st)
	}
	for i := range st.Jobs {
		if st.Jobs[i].ID == id {
			return &st.Jobs[i]
		}
	}
	return nil
}

// waitState polls status until job id is in state (and, when pid is not
// 0, held or last held by that process; when collection is not "", at
// that collection), failing after 30 s (with p's output, when given).
func waitState(t *testing.T, target, id, state, collection string, pid int, p *denormProc) *jobJSON {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		js := statusOf(t, target, id)
		if js != nil && js.State == state {
			h := js.Holder
			if h == nil {
				h = js.LastHolder
			}
			if (pid == 0 || (h != nil && h.PID == pid)) && (collection == "" || js.Collection == collection) {
				return js
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	out := ""
	if p != nil {
		out = p.out.String()
	}
	t.Fatalf("job %s never became %s (pid %d): %+v\n%s", id, state, pid, statusOf(t, target, id), out)
	return nil
}

// expectExit runs denorm to the end and checks its exit code and that its
// output holds every string of want.
func expectExit(t *testing.T, bin string, code int, want []string, args ...string) string {
	t.Helper()
	p := startDenorm(t, bin, args...)
	if got := p.wait(); got != code {
		t.Fatalf("denorm %s: exit %d, want %d\n%s", strings.Join(args, " "), got, code, p.out)
	}
	out := p.out.String()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	return out
}

// TestJobLease proves one writer per job on both kinds of target: while a
// run of job j waits (on a table locked in the source), a second run of
// j, a --restart and a --resume are refused naming the running process,
// and the first run's result is exactly an uninterrupted run's; status
// shows the live job running (holder, percentage), then done. After a
// kill -9, status says stopped (at once on a directory, whose lock the
// kernel releases; once the lease expired on a server, which refuses a
// resume until then), and the resumed job is again exact. Then a run
// that loses its lease (testLeaseLost).
func TestJobLease(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin, mapping, src := crashSetup(t, 300, 300, 1500)
	base := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--batch-size", "50", "--lease-ttl", "2s"}
	for _, server := range []bool{false, true} {
		name := map[bool]string{false: "directory", true: "ferretdb"}[server]
		t.Run(name, func(t *testing.T) {
			fresh := func() (string, *mongo.Database) {
				if server {
					return testenv.MongoDB(t)
				}
				return t.TempDir(), nil
			}
			refTarget, refDB := fresh()
			runDenorm(t, bin, append(slices.Clone(base), "--target", refTarget)...)
			ref := dumpTarget(t, refTarget, refDB)

			target, db := fresh()
			args := append(slices.Clone(base), "--target", target, "--job", "j")

			// Two runs of one job at once.
			unlock := lockTable(t, src, "post")
			a := startDenorm(t, bin, args...)
			pid := a.cmd.Process.Pid
			live := waitState(t, target, "j", "running", "posts", pid, a)
			if live.Holder == nil || live.Holder.Command != "migrate" || live.Holder.Host == "" || live.Collection != "posts" ||
				live.RowsRead == 0 || live.Percent == nil || *live.Percent <= 0 || *live.Percent >= 100 || live.RowsEstimated == nil || live.Next != "" {
				t.Errorf("status of the live job: %+v", live)
			}
			if server && (live.Holder.Expires.IsZero() || !live.Holder.Expires.After(live.Holder.Heartbeat)) {
				t.Errorf("a server lease without an expiry: %+v", live.Holder)
			}
			held := []string{`job "j" is being run by another process`, fmt.Sprintf("pid %d", pid), "migrate on host", "denorm status --target"}
			expectExit(t, bin, 1, held, args...)
			expectExit(t, bin, 1, append(held, "--restart cannot start the job over while it runs"), append(slices.Clone(args), "--restart")...)
			expectExit(t, bin, 1, held, append(slices.Clone(args), "--resume")...)
			if !server {
				// Without --job, a second run into the directory is stopped
				// by the lock on the files it would write.
				unjobbed := append(slices.Clone(base), "--target", target)
				expectExit(t, bin, 1, []string{"people.jsonl is being written by another process"}, unjobbed...)
			}
			unlock()
			if code := a.wait(); code != 0 {
				t.Fatalf("the first run: exit %d\n%s", code, a.out)
			}
			compareTargets(t, "the run that kept the job", ref, dumpTarget(t, target, db), !server)
			done := statusOf(t, target, "j")
			if done == nil || done.State != "done" || done.Holder != nil || done.Percent == nil || *done.Percent != 100 || done.Next != "" {
				t.Errorf("status of the finished job: %+v", done)
			}

			// A crash: kill -9 while the run holds the lease.
			unlock = lockTable(t, src, "post")
			c := startDenorm(t, bin, append(slices.Clone(args), "--restart")...)
			pid = c.cmd.Process.Pid
			waitState(t, target, "j", "running", "posts", pid, c)
			_ = c.cmd.Process.Signal(syscall.SIGKILL)
			c.wait()
			// (A server lease whose holder is gone from this machine is
			// taken over at once by the next run, not held until it
			// expires: TestJobLeaseOfKilledRun.)
			stopped := waitState(t, target, "j", "stopped", "", pid, nil)
			if stopped.Holder != nil || stopped.LastHolder == nil || stopped.LastHolder.PID != pid || !strings.Contains(stopped.Next, "--resume") {
				t.Errorf("status of the killed job: %+v", stopped)
			}
			var text bytes.Buffer
			run(context.Background(), []string{"status", "--target", target}, &text, &text)
			for _, w := range []string{"job j: stopped at collection posts", fmt.Sprintf("no process runs it: last run by migrate, pid %d", pid), "next: denorm migrate"} {
				if !strings.Contains(text.String(), w) {
					t.Errorf("status text lacks %q:\n%s", w, text.String())
				}
			}
			unlock()
			runDenorm(t, bin, append(slices.Clone(args), "--resume")...)
			compareTargets(t, "the resumed job", ref, dumpTarget(t, target, db), !server)
		})
	}
	t.Run("lost lease", func(t *testing.T) { testLeaseLost(t, bin, mapping, src) })
}

// testLeaseLost: a run that loses its job's lease stops writing and fails
// loudly. Run A is frozen (SIGSTOP) past its lease's time to live; run B
// takes the job over and finishes it; A, thawed, finds its lease gone,
// writes nothing more, keeps B's checkpoint, and exits 1 naming B.
func testLeaseLost(t *testing.T, bin, mapping, src string) {
	base := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--batch-size", "50", "--lease-ttl", "1s"}
	refTarget, refDB := testenv.MongoDB(t)
	runDenorm(t, bin, append(slices.Clone(base), "--target", refTarget)...)
	ref := dumpTarget(t, refTarget, refDB)

	target, db := testenv.MongoDB(t)
	args := append(slices.Clone(base), "--target", target, "--job", "j")
	unlock := lockTable(t, src, "post")
	a := startDenorm(t, bin, args...)
	waitState(t, target, "j", "running", "posts", a.cmd.Process.Pid, a)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer a.cmd.Process.Signal(syscall.SIGCONT)
	waitState(t, target, "j", "stopped", "", a.cmd.Process.Pid, nil)
	unlock()
	b := startDenorm(t, bin, append(slices.Clone(args), "--resume")...)
	bPID := b.cmd.Process.Pid
	if code := b.wait(); code != 0 {
		t.Fatalf("the run taking the job over: exit %d\n%s", code, b.out)
	}
	finished := statusOf(t, target, "j")
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(); code != 1 {
		t.Fatalf("the run that lost its lease: exit %d, want 1\n%s", code, a.out)
	}
	for _, w := range []string{`job "j" lost its lease`, fmt.Sprintf("pid %d", bPID), "stopped writing"} {
		if !strings.Contains(a.out.String(), w) {
			t.Errorf("output of the run that lost its lease lacks %q:\n%s", w, a.out)
		}
	}
	compareTargets(t, "after the run that lost its lease", ref, dumpTarget(t, target, db), false)
	after := statusOf(t, target, "j")
	if finished == nil || after == nil || after.State != "done" || !after.Updated.Equal(*finished.Updated) {
		t.Errorf("the checkpoint changed after the takeover: %+v, then %+v", finished, after)
	}
}

// TestJobLeaseOfKilledRun: a run killed with kill -9 while it holds a
// server lease that would live an hour does not hold its job: on the same
// machine, with its process gone, the next run takes the lease over at
// once and resumes the job (without it, the resume would be refused until
// the lease expired).
func TestJobLeaseOfKilledRun(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin, mapping, src := crashSetup(t, 300, 300, 1500)
	target, _ := testenv.MongoDB(t)
	args := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--batch-size", "50",
		"--lease-ttl", "1h", "--target", target, "--job", "j"}
	unlock := lockTable(t, src, "post")
	c := startDenorm(t, bin, args...)
	pid := c.cmd.Process.Pid
	live := waitState(t, target, "j", "running", "posts", pid, c)
	if live.Holder == nil || live.Holder.Expires.Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("the run's lease: %+v, want one that lives an hour", live.Holder)
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	c.wait()
	unlock()
	out := runDenorm(t, bin, append(slices.Clone(args), "--resume")...)
	if done := statusOf(t, target, "j"); done == nil || done.State != "done" {
		t.Fatalf("after the resume: %+v\n%s", done, out)
	}
}
