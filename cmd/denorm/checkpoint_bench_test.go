package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
)

// BenchmarkCheckpointCost measures, in the same session, the throughput of
// a migration without checkpoints and with a checkpoint after every batch
// (--job), to a directory target (denorm's own cost: FerretDB is the
// bottleneck of a server target here) and, smaller, to FerretDB; runs are
// interleaved and medians reported. It also measures the resume time: from
// starting 'migrate --resume' of a job killed half way to its first new
// checkpoint, and the whole resumed remainder.
//
//	scripts/testenv.sh go test -run '^$' -bench CheckpointCost -benchtime 1x ./cmd/denorm
func BenchmarkCheckpointCost(b *testing.B) {
	bin := denormBinary(b)
	mapping := example(b, "person")
	const persons = 100000
	db := personsDB(b, persons)
	const reps = 5
	run := func(target string, extra ...string) time.Duration {
		args := append([]string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", db, "--target", target, "--batch-size", "1000"}, extra...)
		start := time.Now()
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			b.Fatalf("denorm %v: %v\n%s", args, err, out)
		}
		return time.Since(start)
	}
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for i := 0; i < b.N; i++ {
		var without, with, every []time.Duration
		for r := 0; r < reps; r++ {
			without = append(without, run(b.TempDir()))
			with = append(with, run(b.TempDir(), "--job", "bench"))
			every = append(every, run(b.TempDir(), "--job", "bench", "--checkpoint-every", "1s"))
		}
		docs := float64(persons + 2)
		b.Logf("directory target, %d people, batch 1000: without checkpoints %v (median %s, %.0f docs/s); with a checkpoint per batch %v (median %s, %.0f docs/s); cost %.1f%%",
			persons+2, without, med(without), docs/med(without).Seconds(), with, med(with), docs/med(with).Seconds(),
			100*(med(with).Seconds()/med(without).Seconds()-1))
		b.Logf("with --checkpoint-every 1s %v (median %s, %.0f docs/s); cost %.1f%%", every, med(every), docs/med(every).Seconds(),
			100*(med(every).Seconds()/med(without).Seconds()-1))
		b.ReportMetric(docs/med(without).Seconds(), "docs/s-plain")
		b.ReportMetric(docs/med(with).Seconds(), "docs/s-checkpointed")

		// Resume time: kill a checkpointed run half way, then resume.
		dir := b.TempDir()
		full := med(with)
		cmd := exec.Command(bin, "migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", db, "--target", dir, "--batch-size", "1000", "--job", "bench")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(full / 2)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		ck := filepath.Join(dir, "_denorm", "bench.json")
		before, err := os.Stat(ck)
		if err != nil {
			b.Fatalf("no checkpoint after the kill: %v", err)
		}
		start := time.Now()
		rc := exec.Command(bin, "migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", db, "--target", dir, "--batch-size", "1000", "--job", "bench", "--resume")
		if err := rc.Start(); err != nil {
			b.Fatal(err)
		}
		var first time.Duration
		for first == 0 {
			if st, err := os.Stat(ck); err == nil && st.ModTime().After(before.ModTime()) {
				first = time.Since(start)
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err := rc.Wait(); err != nil {
			b.Fatalf("resume: %v", err)
		}
		total := time.Since(start)
		lines := len(testenv.ReadLines(b, filepath.Join(dir, "people.jsonl")))
		if lines != persons+2 {
			b.Fatalf("resumed run wrote %d people, want %d", lines, persons+2)
		}
		b.Logf("resume: first checkpoint write %s after start (process start, connect, snapshot, catalog, checkpoint load, file truncation); the remaining half in %s (a full run: %s)",
			first.Round(time.Millisecond), total.Round(time.Millisecond), full.Round(time.Millisecond))
		b.ReportMetric(float64(first.Milliseconds()), "ms-resume-to-first-checkpoint")
	}
}
