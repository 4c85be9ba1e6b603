package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
)

// TestWorkersAndPartitions checks that --workers 2 and three processes
// running --partition 0/3, 1/3 and 2/3 at once write exactly what one
// worker writes, and that SIGTERM stops a run with a checkpoint and the
// command that resumes it.
func TestWorkersAndPartitions(t *testing.T) {
	bin, mapping, src := crashSetup(t, 150, 40, 400)
	base := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--batch-size", "10"}

	refURI, refDB := testenv.MongoDB(t)
	runDenorm(t, bin, append(base, "--target", refURI)...)
	ref := dumpTarget(t, refURI, refDB)

	t.Run("workers_2", func(t *testing.T) {
		uri, db := testenv.MongoDB(t)
		runDenorm(t, bin, append(base, "--target", uri, "--workers", "2", "--job", "w")...)
		got := dumpTarget(t, uri, db)
		compareTargets(t, "--workers 2", ref, got, false)
		checkNoDuplicates(t, got)
		c := loadCheckpoint(t, uri, "w")
		for _, s := range c.Streams {
			if !s.Done || s.Rows == 0 {
				t.Errorf("stream %s worker %d: done %v after %d rows; every worker should have read rows", s.Collection, s.Worker, s.Done, s.Rows)
			}
		}
	})

	t.Run("partitions_3_processes", func(t *testing.T) {
		uri, db := testenv.MongoDB(t)
		var procs []*denormProc
		for i := 0; i < 3; i++ {
			procs = append(procs, startDenorm(t, bin, append(base, "--target", uri, "--job", "p", "--partition", strings.Join([]string{string(rune('0' + i)), "3"}, "/"))...))
		}
		for i, p := range procs {
			if code := p.wait(); code != 0 {
				t.Fatalf("partition %d/3: exit %d\n%s", i, code, p.out)
			}
		}
		got := dumpTarget(t, uri, db)
		compareTargets(t, "--partition i/3", ref, got, false)
		checkNoDuplicates(t, got)
		for i := 0; i < 3; i++ {
			c := loadCheckpoint(t, uri, job.RecordID("p", i, 3))
			if c == nil || c.Phase != job.PhaseDone {
				t.Fatalf("partition %d: checkpoint %+v, want done", i, c)
			}
			var rows int64
			for _, s := range c.Streams {
				rows += s.Rows
			}
			t.Logf("partition %d/3 read %d rows", i, rows)
			if rows == 0 {
				t.Errorf("partition %d/3 read no rows", i)
			}
		}
		// What the Kubernetes manifest tells to run (deploy/kubernetes):
		// status --job shows every partition of the job, each done.
		code, out, errs := runCLI(t, "status", "--target", uri, "--job", "p")
		if code != 0 {
			t.Fatalf("status --job p: exit %d\n%s%s", code, out, errs)
		}
		for i := 0; i < 3; i++ {
			if want := fmt.Sprintf("job p partition %d/3: done,", i); !strings.Contains(out, want) {
				t.Errorf("status --job p does not say %q:\n%s", want, out)
			}
		}
		if n := strings.Count(out, "next: nothing"); n != 3 {
			t.Errorf("status --job p: %d partitions with nothing to run next, want 3:\n%s", n, out)
		}
	})

	t.Run("sigterm_then_resume", func(t *testing.T) {
		uri, db := testenv.MongoDB(t)
		args := append(base, "--target", uri, "--job", "sig")
		// The signal arrives while the run waits to save a checkpoint in
		// people (the checkpoint gate): the gate opens only once the
		// signal is handled, so the run cannot end before it lands.
		p := startGated(t, bin, args...)
		held, _ := p.until(func(c, _ *job.Record) bool { return written(c, "people") > 0 }, nil)
		if held == nil {
			p.wait()
			t.Fatalf("the run ended before writing people\n%s", p.output())
		}
		p.signal(syscall.SIGTERM)
		code := p.wait()
		out := p.output()
		if code != 1 {
			t.Fatalf("exit %d after SIGTERM, want 1\n%s", code, out)
		}
		if !strings.Contains(out, "interrupted: the checkpoint is saved") || !strings.Contains(out, "--job sig") || !strings.Contains(out, " --resume") {
			t.Fatalf("SIGTERM output does not say how to resume:\n%s", out)
		}
		c := loadCheckpoint(t, uri, "sig")
		if c == nil || c.Phase != job.PhaseRunning || c.Collection != "people" || written(c, "people") != written(held, "people") {
			t.Fatalf("checkpoint after SIGTERM: %+v; want the one held, at %d people", c, written(held, "people"))
		}
		t.Logf("SIGTERM output:\n%s", out)
		// A rerun without --resume reports the unfinished job.
		p2 := startDenorm(t, bin, args...)
		if code := p2.wait(); code != 2 || !strings.Contains(p2.out.String(), "--resume") || !strings.Contains(p2.out.String(), "--restart") {
			t.Fatalf("rerun without --resume: exit %d\n%s", code, p2.out)
		}
		start := time.Now()
		runDenorm(t, bin, append(args, "--resume")...)
		t.Logf("resume finished in %s", time.Since(start).Round(time.Millisecond))
		got := dumpTarget(t, uri, db)
		compareTargets(t, "SIGTERM + resume", ref, got, false)
		checkNoDuplicates(t, got)
	})
}
