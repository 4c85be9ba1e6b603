package main

// The one opening of the tests that open the test servers, build data,
// run the built denorm and measure its memory: the golden, crash, fault,
// workers, verify and memory tests and the benchmarks start from here
// rather than each from its own copy.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/procmem"
	"github.com/denorm/denorm/internal/testenv"
)

// repoPath is a file of the repository: repoPath(t, "testdata", "x.sql").
func repoPath(tb testing.TB, elem ...string) string {
	return filepath.Join(append([]string{testenv.Root(tb)}, elem...)...)
}

// example is the example mapping mappings/examples/<name>.yaml.
func example(tb testing.TB, name string) string {
	return repoPath(tb, "mappings", "examples", name+".yaml")
}

// seedDB is a new database holding testdata/examples/seed.sql: the schema
// and data every example mapping runs on.
func seedDB(tb testing.TB) string {
	tb.Helper()
	return testenv.PostgresDB(tb, repoPath(tb, "testdata", "examples", "seed.sql"))
}

// personsDB is seedDB with n generated persons added (addPersons), so the
// person mapping gives n+2 documents.
func personsDB(tb testing.TB, n int) string {
	tb.Helper()
	db := seedDB(tb)
	addPersons(tb, db, n)
	return db
}

// addPersons adds n generated persons (ids from 1000) with 2 contact
// details each and an address for 3 persons out of 2 to the seed schema.
func addPersons(tb testing.TB, db string, n int) {
	tb.Helper()
	testenv.Exec(tb, db, fmt.Sprintf(`
INSERT INTO person (id, first_name, last_name)
SELECT 1000 + g, 'First' || g, 'Last ' || md5(g::text) FROM generate_series(1, %[1]d) g;
INSERT INTO contact_detail (id, person_id, type_id, detail, extension)
SELECT 1000 + g, 1000 + (g + 1) / 2, 1 + g %% 3, 'detail-' || g, CASE WHEN g %% 4 = 0 THEN g END
FROM generate_series(1, 2 * %[1]d) g;
INSERT INTO address (id, person_id, type_id, line1, city, state, zip)
SELECT 1000 + g, 1000 + (g * 2 + 2) / 3, 1, g || ' Main Street', 'Springfield', 'ZZ', 10000 + g %% 90000
FROM generate_series(1, (3 * %[1]d) / 2) g;
ANALYZE;`, n))
}

// denormBinary builds denorm for the tests that run it as a process (to
// kill it, measure it, or run several at once) and returns its path.
// Those tests need the servers: the short suite skips them.
func denormBinary(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: skipped in the short suite")
	}
	bin := filepath.Join(tb.TempDir(), "denorm")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// denormProc is a running denorm process.
type denormProc struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

func startDenorm(tb testing.TB, bin string, args ...string) *denormProc {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return &denormProc{cmd: cmd, out: &out}
}

// wait returns the exit code (-1 when killed by a signal).
func (p *denormProc) wait() int {
	err := p.cmd.Wait()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -2
}

// runDenorm runs denorm to the end, fails the test unless it exits 0,
// and returns its output.
func runDenorm(tb testing.TB, bin string, args ...string) string {
	tb.Helper()
	p := startDenorm(tb, bin, args...)
	if code := p.wait(); code != 0 {
		tb.Fatalf("denorm %s: exit %d\n%s", strings.Join(args, " "), code, p.out)
	}
	return p.out.String()
}

// peakRSS runs denorm to the end, fails the test unless it exits 0, and
// returns its peak resident set size in KiB and its output.
func peakRSS(tb testing.TB, bin string, args ...string) (int64, string) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	kib, err := procmem.Run(cmd, 5*time.Millisecond)
	if err != nil {
		tb.Fatalf("denorm %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return kib, out.String()
}

// medianPeaks measures the peak RSS of run(i) for every size i, five
// rounds interleaved (so machine load and GC timing hit every size alike),
// logs every figure and returns each size's median in KiB. Peak RSS moves
// by a few MiB from run to run: medians of interleaved runs are what can
// be compared.
func medianPeaks(t *testing.T, sizes int, run func(i int) int64, name func(i int) string) []int64 {
	t.Helper()
	const runs = 5
	rss := make([][]int64, sizes)
	for r := 0; r < runs; r++ {
		for i := range rss {
			rss[i] = append(rss[i], run(i))
		}
	}
	med := make([]int64, sizes)
	for i := range rss {
		s := slices.Clone(rss[i])
		slices.Sort(s)
		med[i] = s[len(s)/2]
		t.Logf("%s: peak RSS of %d runs %v KiB, median %.1f MiB", name(i), runs, rss[i], float64(med[i])/1024)
	}
	return med
}

// migratePeak migrates db with mapping into a fresh directory, has check
// look at the output, and returns the run's peak RSS in KiB.
func migratePeak(t *testing.T, bin, mapping, db string, check func(dir string)) int64 {
	t.Helper()
	dir := t.TempDir()
	kib, _ := peakRSS(t, bin, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", dir)
	check(dir)
	_ = os.RemoveAll(dir)
	return kib
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	return len(testenv.ReadLines(t, path))
}
