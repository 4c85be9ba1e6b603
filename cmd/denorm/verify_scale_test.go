package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// summaryRow returns the counts of a collection's row in verify's
// summary, space-separated: expected, found, identical, missing,
// unexpected, different, dangling, other.
func summaryRow(out, coll string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 9 && f[0] == coll {
			return strings.Join(f[1:9], " ")
		}
	}
	return ""
}

// verifyRSS runs bin verify and returns its peak RSS in KiB and stdout;
// the verdict must be "identical".
func verifyRSS(tb testing.TB, bin string, args ...string) (int64, string) {
	tb.Helper()
	kib, out := peakRSS(tb, bin, append([]string{"verify"}, args...)...)
	if !strings.Contains(out, "result: identical") {
		tb.Fatalf("denorm verify %s: not identical\n%s", strings.Join(args, " "), out)
	}
	return kib, out
}

// TestVerifyBoundedMemory verifies 10x more documents and checks that
// peak memory does not grow by more than 25%: the sorts spill to disk past
// --sort-memory, so memory depends on the flags, not on the number of
// documents. Runs of both sizes are interleaved and medians compared (GC
// timing moves peaks by a few MiB).
func TestVerifyBoundedMemory(t *testing.T) {
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
	med := medianPeaks(t, len(sizes), func(i int) int64 {
		kib, out := verifyRSS(t, bin, "--mapping", mapping, "--source", dbs[i], "--target", dirs[i], "--sort-memory", "1", "--temp-dir", t.TempDir())
		if got, want := summaryRow(out, "people"), fmt.Sprintf("%d %[1]d %[1]d 0 0 0 0 0", sizes[i]+2); got != want {
			t.Fatalf("%d persons: summary row %q, want %q:\n%s", sizes[i], got, want, out)
		}
		return kib
	}, func(i int) string { return fmt.Sprintf("%7d documents (verify)", sizes[i]+2) })
	small, large := med[0], med[1]
	if ratio := float64(large) / float64(small); ratio > 1.25 {
		t.Errorf("median peak RSS grew %.2fx for 10x the documents (%d KiB -> %d KiB); want at most 1.25x", ratio, small, large)
	}
	underCeiling(t, large)
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
		kib, out := verifyRSS(b, bin, "--mapping", mapping, "--source", db, "--target", dir, "--temp-dir", b.TempDir())
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "docs/s")
		peak = max(peak, kib)
		if got, want := summaryRow(out, "people"), fmt.Sprintf("%d %[1]d %[1]d 0 0 0 0 0", n); got != want {
			b.Fatalf("summary row %q, want %q:\n%s", got, want, out)
		}
		b.StopTimer()
		kib, _ = verifyRSS(b, bin, "--mapping", mapping, "--source", db, "--target", dir, "--temp-dir", b.TempDir(), "--sort-memory", "1")
		peakSmall = max(peakSmall, kib)
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(peakSmall)/1024, "peak-RSS-MiB-sort-memory-1")
}
