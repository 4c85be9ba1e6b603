package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// summaryRow returns the counts of a collection's row in verify's
// summary, space-separated: expected, found, identical, missing,
// unexpected, different, dangling, other.
func summaryRow(out, coll string) string {
next:
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 9 || f[0] != coll {
			continue
		}
		for _, n := range f[1:9] {
			if _, err := strconv.ParseInt(n, 10, 64); err != nil {
				continue next // a difference's line, not the summary's
			}
		}
		return strings.Join(f[1:9], " ")
	}
	return ""
}

// verifyMemory runs bin verify and returns its memory figures and
// stdout; the verdict must be "identical".
func verifyMemory(tb testing.TB, bin string, args ...string) (memStats, string) {
	tb.Helper()
	m, out := memRun(tb, bin, append([]string{"verify"}, args...)...)
	if !strings.Contains(out, "result: identical") {
		tb.Fatalf("denorm verify %s: not identical\n%s", strings.Join(args, " "), out)
	}
	return m, out
}

// TestVerifyBoundedMemory verifies 10x more documents and checks that the
// run's working set (workingSet) grows by at most 25%, and that its peak
// live heap and peak RSS stay under absolute ceilings: the sorts spill to
// disk past --sort-memory, so memory depends on the flags, not on the
// number of documents. Runs of both sizes are interleaved and medians
// compared.
func TestVerifyBoundedMemory(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	mapping := example(t, "person")
	sizes := []int{20000, 200000}
	var dbs, dirs []string
	for _, n := range sizes {
		db := personsDB(t, n)
		dir := t.TempDir()
		if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", dir); code != 0 {
			t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
		}
		dbs, dirs = append(dbs, db), append(dirs, dir)
	}
	med := medianMemory(t, len(sizes), func(i int) memStats {
		m, out := verifyMemory(t, bin, "--mapping", mapping, "--source", dbs[i], "--target", dirs[i], "--sort-memory", "1", "--temp-dir", t.TempDir())
		if got, want := summaryRow(out, "people"), fmt.Sprintf("%d %[1]d %[1]d 0 0 0 0 0", sizes[i]+2); got != want {
			t.Fatalf("%d persons: summary row %q, want %q:\n%s", sizes[i], got, want, out)
		}
		return m
	}, func(i int) string { return fmt.Sprintf("%7d documents (verify)", sizes[i]+2) })
	// The sorts hold --sort-memory each plus a 16 KiB read buffer per run
	// file they merge, and at most 64 run files: 10x the documents make
	// 10x the runs, up to that cap, hence a ratio of 1.25 rather than 1.2.
	// Measured at load 18 on 2 cores: working sets 12.3-13.0 MiB (20,002)
	// and 13.9-14.2 MiB (200,002), a ratio of 1.08-1.13; peak live heap
	// 13.6-18 MiB; peak RSS 37-44 MiB.
	checkMemory(t, "10x the documents (verify)", med[0], med[1], memLimits{ratio: 1.25, heapCeiling: 40 << 20, rssCeiling: 96 << 20})
}

// BenchmarkVerify1M verifies one million documents (a directory target:
// FerretDB reads 2-3k documents/s) and reports verify's peak RSS and rate.
// make bench BENCH=Verify1M
func BenchmarkVerify1M(b *testing.B) {
	const n = 1_000_000
	mapping := example(b, "person")
	db := personsDB(b, n-2)
	dir := b.TempDir()
	bin := denormBinary(b)
	if out, err := exec.Command(bin, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", dir).CombinedOutput(); err != nil {
		b.Fatalf("migrate: %v\n%s", err, out)
	}
	b.ResetTimer()
	var peak, peakSmall int64
	for range b.N {
		start := time.Now()
		m, out := verifyMemory(b, bin, "--mapping", mapping, "--source", db, "--target", dir, "--temp-dir", b.TempDir())
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "docs/s")
		peak = max(peak, m.PeakRSSKiB)
		if got, want := summaryRow(out, "people"), fmt.Sprintf("%d %[1]d %[1]d 0 0 0 0 0", n); got != want {
			b.Fatalf("summary row %q, want %q:\n%s", got, want, out)
		}
		b.StopTimer()
		m, _ = verifyMemory(b, bin, "--mapping", mapping, "--source", db, "--target", dir, "--temp-dir", b.TempDir(), "--sort-memory", "1")
		peakSmall = max(peakSmall, m.PeakRSSKiB)
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(peakSmall)/1024, "peak-RSS-MiB-sort-memory-1")
}
