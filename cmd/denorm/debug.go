package main

// Debug hooks, each off unless its environment variable is set (docs/development.md,
// "Development"). They change nothing a run does: the tests use them to
// stop a run at an exact point (instead of guessing one from the clock)
// and to read what memory the run held (instead of only what the kernel
// saw).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/denorm/denorm/load"
)

// checkpointGateEnv names the checkpoint gate: when set to 1, migrate
// writes every checkpoint it is about to save to stderr, as one line
// "denorm-debug checkpoint {JSON}", and saves it only once a line arrives
// on stdin, stdin is closed, or the run is interrupted (SIGINT, SIGTERM).
// A test reading stderr can so kill or disturb the run at a chosen
// checkpoint: the target then holds the batch that checkpoint covers, the
// stored checkpoint is the one before.
const checkpointGateEnv = "DENORM_DEBUG_CHECKPOINT_GATE"

// checkpointGatePrefix starts the gate's lines on stderr.
const checkpointGatePrefix = "denorm-debug checkpoint "

// gateCheckpoints returns store wrapped in the checkpoint gate when
// DENORM_DEBUG_CHECKPOINT_GATE=1, store itself otherwise. ctx is the run's
// (signal) context.
func gateCheckpoints(ctx context.Context, g *globals, store load.RecordStore) load.RecordStore {
	if store == nil || os.Getenv(checkpointGateEnv) != "1" {
		return store
	}
	return &gatedCheckpoints{RecordStore: store, ctx: ctx, w: g.stderr, lines: stdinLines(os.Stdin)}
}

// gatedCheckpoints is a checkpoint store behind the gate.
type gatedCheckpoints struct {
	load.RecordStore
	ctx   context.Context
	w     io.Writer
	lines <-chan struct{}
}

func (s *gatedCheckpoints) Save(ctx context.Context, r *load.Record) error {
	var b bytes.Buffer
	if err := json.Compact(&b, r.Body); err != nil {
		return err
	}
	fmt.Fprintf(s.w, "%s%s\n", checkpointGatePrefix, b.Bytes())
	select {
	case <-s.lines:
	case <-s.ctx.Done():
	}
	return s.RecordStore.Save(ctx, r)
}

// stdinLines gives a value for each line read from r, and is closed at
// the end of r.
func stdinLines(r io.Reader) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- struct{}{}
		}
	}()
	return ch
}

// memStatsEnv names the file to which, when set, denorm writes at exit
// what memory the run used, as one JSON object (memStats).
const memStatsEnv = "DENORM_DEBUG_MEMSTATS"

// memStats is what DENORM_DEBUG_MEMSTATS writes.
type memStats struct {
	// PeakLiveHeap is the largest live heap (bytes) found by a garbage
	// collection of the run: memory the run held, without the garbage a
	// collection frees and without the pages the runtime keeps after
	// freeing them, which the resident size counts.
	PeakLiveHeap uint64 `json:"peakLiveHeapBytes"`
	// LiveHeap is the live heap (bytes) after each collection seen, in
	// order (at most the first maxLiveSamples).
	LiveHeap []uint64 `json:"liveHeapBytes"`
	// GCCycles is the number of collections the run went through (a
	// finalizer may miss one when two come close together).
	GCCycles uint64 `json:"gcCycles"`
	// PeakRSSKiB is the peak resident set size (VmHWM), in KiB.
	PeakRSSKiB int64 `json:"peakRSSKiB"`
	// GOGC and GOMEMLIMIT are the settings the run had.
	GOGC       string `json:"GOGC"`
	GOMEMLIMIT string `json:"GOMEMLIMIT"`
}

// startMemStats records the live heap after every collection when
// DENORM_DEBUG_MEMSTATS is set; the returned function writes the file.
func startMemStats() func() {
	path := os.Getenv(memStatsEnv)
	if path == "" {
		return func() {}
	}
	w := &gcWatch{}
	w.arm()
	return func() {
		w.stop.Store(true)
		cycles := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(cycles)
		w.mu.Lock()
		st := memStats{PeakLiveHeap: w.peak, LiveHeap: w.live, GCCycles: w.cycles, PeakRSSKiB: vmHWM(),
			GOGC: os.Getenv("GOGC"), GOMEMLIMIT: os.Getenv("GOMEMLIMIT")}
		w.mu.Unlock()
		if cycles[0].Value.Kind() == metrics.KindUint64 {
			st.GCCycles = cycles[0].Value.Uint64()
		}
		b, _ := json.Marshal(st)
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "denorm: %s: %v\n", memStatsEnv, err)
		}
	}
}

// gcWatch samples the live heap after each collection: a finalizer on an
// object nothing references runs after the collection that found it dead,
// and re-arms itself with a new object.
type gcWatch struct {
	stop   atomic.Bool
	mu     sync.Mutex
	peak   uint64
	live   []uint64
	cycles uint64
}

// maxLiveSamples bounds gcWatch's record of every collection.
const maxLiveSamples = 100000

// gcSentinel holds a pointer so that it is never a tiny allocation
// (whose finalizer may never run).
type gcSentinel struct {
	w *gcWatch
	_ [16]byte
}

func (w *gcWatch) arm() {
	s := &gcSentinel{w: w}
	runtime.SetFinalizer(s, func(s *gcSentinel) {
		s.w.sample()
		if !s.w.stop.Load() {
			s.w.arm()
		}
	})
}

func (w *gcWatch) sample() {
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(m)
	w.mu.Lock()
	defer w.mu.Unlock()
	if m[0].Value.Kind() != metrics.KindUint64 || m[1].Value.Kind() != metrics.KindUint64 {
		return
	}
	if c := m[1].Value.Uint64(); c > w.cycles {
		w.cycles = c
		live := m[0].Value.Uint64()
		w.peak = max(w.peak, live)
		if len(w.live) < maxLiveSamples {
			w.live = append(w.live, live)
		}
	}
}

// vmHWM is this process's peak resident set size in KiB (Linux), 0 when
// unknown.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
