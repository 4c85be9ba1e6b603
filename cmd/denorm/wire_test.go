package main

import (
	"bytes"
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
)

// wireRun is one migration through fault proxies.
type wireRun struct {
	code     int
	out      string
	took     time.Duration
	target   string // the target database, reached directly
	srcProxy *faultProxy
	tgtProxy *faultProxy
}

// withQuery adds query parameters to a URL.
func withQuery(t *testing.T, u, query string) string {
	t.Helper()
	if query == "" {
		return u
	}
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if p.RawQuery != "" {
		p.RawQuery += "&"
	}
	p.RawQuery += query
	return p.String()
}

// TestWireFaults puts a fault proxy (toxiproxy's Go packages, in this
// process, on loopback) between denorm and each server and disturbs the
// connections: latency, a bandwidth limit, connections cut mid-batch (the
// target) and mid-stream (the source), and half-open connections that stop
// passing data without closing. Cuts and stalls are aimed at a byte of the
// stream (a toxic that fires once at byte N), so where they land does not
// depend on timing. Every case ends with the exact result - verify, which
// rebuilds every document from the source, exits 0 - or with a clear
// error within the timeouts the URLs set.
func TestWireFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	root := testenv.Root(t)
	mapping := filepath.Join(root, "testdata", "resume", "crash.yaml")
	src := crashSource(t, 600, 40, 400)

	// migrate runs one migration through fresh proxies to both servers;
	// before sets the toxics, during (optional) acts while it runs (it
	// gets the run's done channel, to notice an early end).
	migrate := func(t *testing.T, srcQuery, tgtQuery string, before func(r *wireRun), during func(r *wireRun, done <-chan int), extra ...string) *wireRun {
		t.Helper()
		direct, _ := testenv.MongoDB(t)
		su, _ := url.Parse(src)
		tu, _ := url.Parse(direct)
		r := &wireRun{target: direct, srcProxy: newFaultProxy(t, su.Host), tgtProxy: newFaultProxy(t, tu.Host)}
		if before != nil {
			before(r)
		}
		args := append([]string{"migrate", "--progress", "none", "--mapping", mapping,
			"--source", withQuery(t, r.srcProxy.via(src), srcQuery),
			"--target", withQuery(t, r.tgtProxy.via(direct), tgtQuery),
			"--job", "w", "--batch-size", "20", "--retry-for", "30s"}, extra...)
		var out bytes.Buffer
		done := make(chan int, 1)
		start := time.Now()
		go func() { done <- run(context.Background(), args, &out, &out) }()
		if during != nil {
			during(r, done)
		}
		r.code = <-done
		r.took = time.Since(start)
		r.out = out.String()
		t.Logf("migrate: exit %d in %s", r.code, r.took.Round(time.Millisecond))
		return r
	}
	exact := func(t *testing.T, r *wireRun) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("migrate: exit %d\n%s", r.code, r.out)
		}
		code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", r.target)
		if code != 0 {
			t.Fatalf("verify after the faults: exit %d\n%s%s\nmigrate said:\n%s", code, out, errs, r.out)
		}
	}
	fired := func(t *testing.T, f *fault) {
		t.Helper()
		if !f.fired.Load() {
			t.Fatal("the fault never fired: the stream is shorter than its byte offset")
		}
	}
	// within: a run with one stall of a second or two ends in far less
	// than the default timeouts (minutes), whatever the machine's load.
	within := func(t *testing.T, r *wireRun, limit time.Duration) {
		t.Helper()
		if r.took > limit {
			t.Errorf("the run took %s with a stall bounded by the URL's timeouts", r.took)
		}
	}
	said := func(t *testing.T, r *wireRun, want string) {
		t.Helper()
		if !strings.Contains(r.out, want) {
			t.Errorf("the output does not say %q:\n%s", want, r.out)
		}
	}

	t.Run("target latency", func(t *testing.T) {
		r := migrate(t, "", "", func(r *wireRun) {
			r.tgtProxy.add("lat", "latency", "downstream", map[string]any{"latency": 10, "jitter": 5})
		}, nil)
		exact(t, r)
	})
	t.Run("target bandwidth", func(t *testing.T) {
		r := migrate(t, "", "", func(r *wireRun) {
			r.tgtProxy.add("bw", "bandwidth", "upstream", map[string]any{"rate": 256})
		}, nil)
		exact(t, r)
	})
	// Checkpoints are kept rare in the cut cases, so that the bytes at the
	// fault's offset belong to a bulk write: the data connection carries
	// ~200 KB up and ~4 KB down (about 80 replies of ~50 bytes; byte 1,000
	// is in the replies to people's inserts, byte 2,000 already near the
	// checkpoint saved when people is done), the monitor's a few hundred
	// bytes.
	rare := []string{"--checkpoint-every", "1h"}
	t.Run("target cut mid-batch", func(t *testing.T) {
		// The connection closes in the middle of a bulk write's message.
		var f *fault
		r := migrate(t, "", "", func(r *wireRun) { f = r.tgtProxy.cutOnce("upstream", 60_000, false) }, nil, rare...)
		fired(t, f)
		said(t, r, "target failed (write 20 documents")
		exact(t, r)
	})
	t.Run("target acknowledgement lost", func(t *testing.T) {
		// The write is applied, its acknowledgement never arrives: the
		// batch is written again, idempotently.
		var f *fault
		r := migrate(t, "", "", func(r *wireRun) { f = r.tgtProxy.cutOnce("downstream", 1_000, false) }, nil, rare...)
		fired(t, f)
		said(t, r, "target failed (write 20 documents")
		exact(t, r)
	})
	t.Run("target half-open", func(t *testing.T) {
		// One connection stops answering and is never closed: the URI's
		// timeoutMS ends the operation, which is retried elsewhere.
		var f *fault
		r := migrate(t, "", "timeoutMS=1500", func(r *wireRun) { f = r.tgtProxy.cutOnce("downstream", 1_000, true) }, nil, rare...)
		fired(t, f)
		said(t, r, "client timed out waiting for server response")
		within(t, r, 20*time.Second)
		exact(t, r)
	})
	t.Run("target silent until retries run out, then resumed", func(t *testing.T) {
		// Every connection goes silent after the first checkpoint: each
		// attempt fails within the URI's timeouts, the run gives up after
		// --retry-for, and a resume once the network is back finishes it.
		const query = "timeoutMS=1000&connectTimeoutMS=1000&serverSelectionTimeoutMS=1000"
		var silentAt time.Time
		r := migrate(t, "", query, nil, func(r *wireRun, done <-chan int) {
			waitCheckpoint(t, r.target, "w", done)
			silentAt = time.Now()
			r.tgtProxy.add("silent", "timeout", "downstream", map[string]any{"timeout": 0})
		}, "--retry-for", "4s")
		gaveUp := time.Since(silentAt)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s", r.code, r.out)
		}
		said(t, r, "gave up after")
		// --retry-for 4s, plus the last attempt's own timeouts (1 s each),
		// plus slack for a loaded machine.
		if gaveUp > 20*time.Second {
			t.Errorf("gave up %s after the target went silent; --retry-for 4s and 1 s timeouts", gaveUp)
		}
		r.tgtProxy.remove("silent")
		code, out, errs := runCLI(t, "migrate", "--progress", "none", "--mapping", mapping, "--source", src,
			"--target", withQuery(t, r.tgtProxy.via(r.target), query), "--job", "w", "--batch-size", "20", "--resume")
		r.code, r.out = code, out+errs
		exact(t, r)
	})
	t.Run("source latency", func(t *testing.T) {
		r := migrate(t, "", "", func(r *wireRun) {
			r.srcProxy.add("lat", "latency", "downstream", map[string]any{"latency": 5, "jitter": 5})
		}, nil)
		exact(t, r)
	})
	t.Run("source bandwidth", func(t *testing.T) {
		r := migrate(t, "", "", func(r *wireRun) {
			r.srcProxy.add("bw", "bandwidth", "downstream", map[string]any{"rate": 512})
		}, nil)
		exact(t, r)
	})
	// Each streamed table has its own connection carrying 40-70 KB here;
	// the connection that read the catalog carries less than 10 KB. A
	// fault at byte 30,000 lands in the middle of a stream.
	t.Run("source cut mid-stream", func(t *testing.T) {
		var f *fault
		r := migrate(t, "", "", func(r *wireRun) { f = r.srcProxy.cutOnce("downstream", 30_000, false) }, nil)
		fired(t, f)
		said(t, r, "source connection lost")
		exact(t, r)
	})
	t.Run("source half-open", func(t *testing.T) {
		// A stream stops arriving and its connection is never closed: the
		// URL's read_timeout declares it lost, the run reconnects.
		var f *fault
		r := migrate(t, "read_timeout=1", "", func(r *wireRun) { f = r.srcProxy.cutOnce("downstream", 30_000, true) }, nil)
		fired(t, f)
		said(t, r, "PostgreSQL sent nothing for 1s")
		within(t, r, 20*time.Second)
		exact(t, r)
	})
}
