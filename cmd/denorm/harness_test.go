package main

// The one opening of the tests that open the test servers, build data,
// run the built denorm and measure its memory: the golden, crash, fault,
// workers, verify and memory tests and the benchmarks start from here
// rather than each from its own copy.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
)

// repoPath is a file of the repository: repoPath(t, "testdata", "x.sql").
func repoPath(tb testing.TB, elem ...string) string {
	return filepath.Join(append([]string{testenv.Root(tb)}, elem...)...)
}

// example is the example mapping mappings/examples/<name>.yaml.
func example(tb testing.TB, name string) string {
	return repoPath(tb, "mappings", "examples", name+".yaml")
}

// writeMapping writes a mapping file into a temporary directory and
// returns its path.
func writeMapping(tb testing.TB, yaml string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "m.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
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

// builtBinary is the denorm binary the process tests share: built once
// per test process (go build of this package), removed by TestMain.
var builtBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// parallelTests: the slow tests that need no process-wide state (no
// t.Setenv, no working directory, no server-wide name of their own: each
// has its own databases, target directories, job names and, where it
// stops or kills a server, its own server) call t.Parallel(). Go runs them
// after every sequential test of the package, -parallel (GOMAXPROCS by
// default) at a time: most of their time is spent waiting on the servers,
// on a child denorm process or on a timeout, and so overlaps. A test that
// sets the environment (t.Setenv panics in a parallel test) stays
// sequential.
//
// TestMain removes the shared denorm binary (denormBinary) after the tests.
// testChildren are checks a test runs in a new process of this test
// binary (DENORM_TEST_CHILD=name): a process of its own from its first
// allocation on, which the test process, its heap grown by the tests
// before, is not. Each returns the process's exit status.
var testChildren = map[string]func() int{}

func TestMain(m *testing.M) {
	if name := os.Getenv("DENORM_TEST_CHILD"); name != "" {
		child := testChildren[name]
		if child == nil {
			fmt.Fprintf(os.Stderr, "DENORM_TEST_CHILD=%s: no such check\n", name)
			os.Exit(2)
		}
		os.Exit(child())
	}
	code := m.Run()
	if builtBinary.dir != "" {
		_ = os.RemoveAll(builtBinary.dir)
	}
	os.Exit(code)
}

// denormBinary builds denorm for the tests that run it as a process (to
// kill it, measure it, or run several at once) and returns its path: one
// build per test process, shared by every such test (none of them writes
// to it). Those tests need the servers: the short suite skips them.
func denormBinary(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test: skipped in the short suite")
	}
	b := &builtBinary
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "denorm-test-bin-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "denorm")
		if out, err := exec.Command("go", "build", "-o", b.path, ".").CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
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

// memGOGC is the GOGC the memory tests run denorm with: collections four
// times as often as by default, so that even the smaller run of a test
// goes through dozens of them and its working set (workingSet) is
// measured in its steady state, not in the first few collections. The
// peak RSS ceilings hold at this setting; GOGC=100 (the default) adds
// about a third (make bench measures that).
const memGOGC = "25"

// memRun runs denorm to the end with DENORM_DEBUG_MEMSTATS (debug.go),
// fails the test unless it exits 0, and returns the memory the run used
// and its output. The child runs with GOGC=memGOGC and no GOMEMLIMIT,
// whatever the test's environment says, so that runs compare.
func memRun(tb testing.TB, bin string, args ...string) (memStats, string) {
	tb.Helper()
	statsFile := filepath.Join(tb.TempDir(), "memstats.json")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), memStatsEnv+"="+statsFile, "GOGC="+memGOGC, "GOMEMLIMIT=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("denorm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	b, err := os.ReadFile(statsFile)
	if err != nil {
		tb.Fatalf("denorm %s wrote no memory figures: %v", strings.Join(args, " "), err)
	}
	var m memStats
	if err := json.Unmarshal(b, &m); err != nil || len(m.LiveHeap) == 0 || m.PeakRSSKiB == 0 || m.GOGC != memGOGC {
		tb.Fatalf("memory figures %.300s: %v", b, err)
	}
	return m, string(out)
}

// workingSet is the 90th percentile of a run's live heap after each
// collection: what the run holds in its steady state. The peak of the
// live heap is a maximum over the collections, and so grows with their
// number (a run ten times as long meets its rare high points ten times as
// often) even when memory is bounded; a percentile does not. A leak still
// shows at once: a heap growing with the rows read is above its
// 90th percentile for the last tenth of the run.
func workingSet(m memStats) uint64 {
	s := slices.Clone(m.LiveHeap)
	slices.Sort(s)
	return s[len(s)*9/10]
}

// MiB formats a number of bytes in MiB.
func MiB(bytes uint64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

// memFigures are the medians of one size's runs.
type memFigures struct {
	workingSet, peakHeap, peakRSS uint64 // bytes
}

// medianMemory measures run(i) for every size i, five rounds interleaved
// (so machine load hits every size alike; three in `make test`, five in
// `make test-long`: testenv.Count), logs every figure and returns
// each size's medians of the working set, peak live heap and peak RSS
// (each the median of its own five figures).
//
// The working set is what the memory tests compare between sizes: it is
// what the run held, and a leak shows in it at once. Peak RSS also counts
// garbage not yet collected and pages the runtime has not returned, and
// the peak live heap is a maximum over every collection: both move with
// GC timing and with a run's length, so they are held to absolute
// ceilings only.
func medianMemory(t *testing.T, sizes int, run func(i int) memStats, name func(i int) string) []memFigures {
	t.Helper()
	runs := testenv.Count(t, "runs per size", 3, 5)
	all := make([][]memStats, sizes)
	for r := 0; r < runs; r++ {
		for i := range all {
			all[i] = append(all[i], run(i))
		}
	}
	med := make([]memFigures, sizes)
	median := func(v []uint64) uint64 { slices.Sort(v); return v[len(v)/2] }
	for i, ms := range all {
		var ws, heaps, rss, gcs []uint64
		for _, m := range ms {
			ws, heaps, rss, gcs = append(ws, workingSet(m)), append(heaps, m.PeakLiveHeap), append(rss, uint64(m.PeakRSSKiB)<<10), append(gcs, m.GCCycles)
		}
		t.Logf("%s: working set %v, peak live heap %v, peak RSS %v bytes; GC cycles %v", name(i), ws, heaps, rss, gcs)
		med[i] = memFigures{workingSet: median(ws), peakHeap: median(heaps), peakRSS: median(rss)}
		t.Logf("%s: medians: working set %s, peak live heap %s, peak RSS %s", name(i), MiB(med[i].workingSet), MiB(med[i].peakHeap), MiB(med[i].peakRSS))
	}
	return med
}

// memLimits are what a memory test allows: the ratio of the working sets
// of the larger and the smaller size, and ceilings (bytes) for every
// size's peak live heap and peak RSS.
type memLimits struct {
	ratio       float64
	heapCeiling uint64
	rssCeiling  uint64
}

// memSlack is growth of the working set that checkMemory lets pass
// whatever the ratio: on a working set of 5 MiB, half a MiB more (a
// buffer, a slab, GC timing) is already 10%. A table held in memory grows
// it by tens or hundreds of MiB (see checkMemory).
const memSlack = 2 << 20

// checkMemory fails the test when the larger size's working set is more
// than lim.ratio times the smaller's and more than memSlack above it, or
// a median is over its ceiling. Shown to fail, at 7.3-7.6x and over every
// ceiling, when pipeline.produce kept every batch it read (a deliberate
// leak, 2026-11-23).
func checkMemory(t *testing.T, what string, small, large memFigures, lim memLimits) {
	t.Helper()
	ratio := float64(large.workingSet) / float64(small.workingSet)
	t.Logf("%s: working set ratio of medians %.2fx (limit %.2fx, or %s more)", what, ratio, lim.ratio, MiB(memSlack))
	if ratio > lim.ratio && large.workingSet > small.workingSet+memSlack {
		t.Errorf("%s: the median working set grew %.2fx (%s -> %s); want at most %.2fx", what, ratio, MiB(small.workingSet), MiB(large.workingSet), lim.ratio)
	}
	for _, m := range []memFigures{small, large} {
		if m.peakHeap > lim.heapCeiling {
			t.Errorf("%s: median peak live heap %s, over the ceiling of %s", what, MiB(m.peakHeap), MiB(lim.heapCeiling))
		}
		if m.peakRSS > lim.rssCeiling {
			t.Errorf("%s: median peak RSS %s, over the ceiling of %s", what, MiB(m.peakRSS), MiB(lim.rssCeiling))
		}
	}
}

// migrateMemory migrates db with mapping into a fresh directory, has
// check look at the output, and returns the run's memory figures.
func migrateMemory(t *testing.T, bin, mapping, db string, check func(dir string)) memStats {
	t.Helper()
	dir := t.TempDir()
	m, _ := memRun(t, bin, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", dir)
	check(dir)
	_ = os.RemoveAll(dir)
	return m
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	return len(testenv.ReadLines(t, path))
}

// testSeed is the seed of a test's random choices: DENORM_TEST_SEED when
// set (to replay a run), else the clock. It is logged, and named again
// when the test fails.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DENORM_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DENORM_TEST_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("random seed %d (replay with DENORM_TEST_SEED=%[1]d)", seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay this run: DENORM_TEST_SEED=%d scripts/testenv.sh go test -run '^%s$' ./cmd/denorm", seed, t.Name())
		}
	})
	return seed
}

// gatedProc is a denorm migrate process run with the checkpoint gate
// (DENORM_DEBUG_CHECKPOINT_GATE=1, debug.go): before saving each
// checkpoint it says which on stderr and waits for the test to let it go
// on. A test so kills or disturbs a run at the checkpoint it chooses,
// however loaded the machine is: the process cannot run past it.
type gatedProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// pending receives each checkpoint the process waits to save; it is
	// closed when the process's output ends.
	pending chan *job.Record
	// watching is closed when the test stops looking at checkpoints:
	// from then on they are dropped.
	watching  chan struct{}
	stopWatch sync.Once
	ungated   sync.Once
	readDone  chan struct{}
	out       bytes.Buffer // stdout and stderr but the gate's lines; read after wait
	code      int
	waited    bool
}

func startGated(tb testing.TB, bin string, args ...string) *gatedProc {
	tb.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	g := &gatedProc{cmd: exec.Command(bin, args...), pending: make(chan *job.Record), watching: make(chan struct{}), readDone: make(chan struct{})}
	g.cmd.Env = append(os.Environ(), checkpointGateEnv+"=1")
	g.cmd.Stdout, g.cmd.Stderr = w, w
	if g.stdin, err = g.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	w.Close()
	go func() {
		defer close(g.readDone)
		defer close(g.pending)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			js, ok := strings.CutPrefix(line, checkpointGatePrefix)
			if !ok {
				g.out.WriteString(line + "\n")
				continue
			}
			c := &job.Record{}
			if err := json.Unmarshal([]byte(js), c); err != nil {
				g.out.WriteString("test: unreadable gate line: " + line + "\n")
				continue
			}
			select {
			case g.pending <- c:
			case <-g.watching:
			}
		}
	}()
	tb.Cleanup(func() {
		if !g.waited {
			_ = g.cmd.Process.Kill()
			g.wait()
		}
	})
	return g
}

// next returns the checkpoint the process now waits to save, nil once the
// process has ended.
func (g *gatedProc) next() *job.Record { return <-g.pending }

// release lets the process save the checkpoint it waits on and go on to
// the next.
func (g *gatedProc) release() { _, _ = io.WriteString(g.stdin, "\n") }

// until releases every checkpoint before the first for which stop is
// true, and returns that one, still held (nil when the process ended
// first). prev is the checkpoint released last: the one the target holds.
func (g *gatedProc) until(stop func(c, prev *job.Record) bool, prev *job.Record) (held, last *job.Record) {
	for c := g.next(); c != nil; c = g.next() {
		if stop(c, prev) {
			return c, prev
		}
		g.release()
		prev = c
	}
	return nil, prev
}

// ungate lets the process run freely: every checkpoint from now on,
// including the one it may wait on, is saved at once.
func (g *gatedProc) ungate() {
	g.stopWatch.Do(func() { close(g.watching) })
	g.ungated.Do(func() { _ = g.stdin.Close() })
}

func (g *gatedProc) signal(sig os.Signal) { _ = g.cmd.Process.Signal(sig) }

// wait waits for the process to end, without releasing a checkpoint it
// waits on (a signal releases it), and returns the exit code (-1 when
// killed by a signal).
func (g *gatedProc) wait() int {
	if g.waited {
		return g.code
	}
	g.stopWatch.Do(func() { close(g.watching) })
	err := g.cmd.Wait()
	<-g.readDone
	g.waited = true
	var ee *exec.ExitError
	switch {
	case err == nil:
		g.code = 0
	case errors.As(err, &ee):
		g.code = ee.ExitCode()
	default:
		g.code = -2
	}
	return g.code
}

// output is what the process wrote, but the gate's lines; after wait.
func (g *gatedProc) output() string { return g.out.String() }
