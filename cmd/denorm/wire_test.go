package main

import (
	"bytes"
	"context"
	"net/url"
	"path/filepath"
	"regexp"
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

// proxy is the fault proxy of one side: "source" or "target".
func (r *wireRun) proxy(side string) *faultProxy {
	if side == "source" {
		return r.srcProxy
	}
	return r.tgtProxy
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
	t.Parallel() // parallelTests: its own databases, target and job
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
	// said checks that the output says want, or one of its alternatives
	// separated by " | ".
	said := func(t *testing.T, r *wireRun, want string) {
		t.Helper()
		for _, w := range strings.Split(want, " | ") {
			if strings.Contains(r.out, w) {
				return
			}
		}
		t.Errorf("the output does not say %q:\n%s", want, r.out)
	}

	// Latency and bandwidth: slower, never different.
	for _, c := range []struct {
		name, side, kind, stream string
		attrs                    map[string]any
	}{
		{"target latency", "target", "latency", "downstream", map[string]any{"latency": 10, "jitter": 5}},
		{"target bandwidth", "target", "bandwidth", "upstream", map[string]any{"rate": 256}},
		{"source latency", "source", "latency", "downstream", map[string]any{"latency": 5, "jitter": 5}},
		{"source bandwidth", "source", "bandwidth", "downstream", map[string]any{"rate": 512}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := migrate(t, "", "", func(r *wireRun) { r.proxy(c.side).add(c.kind, c.kind, c.stream, c.attrs) }, nil)
			exact(t, r)
		})
	}

	// Cuts and stalls at a byte offset. On the target, checkpoints are
	// kept rare so that the bytes at the offset belong to a bulk write:
	// the data connection carries ~200 KB up and ~4 KB down (about 80
	// replies of ~45 bytes after ~2.5 KB of setup: the handshake, ping,
	// buildInfo, the job's lease and checkpoint, the owner records of a
	// fresh run; byte 4,000 is in the replies to people's inserts, and
	// byte 2,000, where the half-open stall begins, in the setup, which is
	// retried like any write), the monitor's a few hundred bytes. On the source, each
	// streamed table has its own connection carrying 40-70 KB here and the
	// connection that read the catalog less than 10 KB: byte 30,000 is in
	// the middle of a stream.
	rare := []string{"--checkpoint-every", "1h"}
	for _, c := range []struct {
		name, side, stream string
		at                 int64
		stall              bool
		srcQuery, tgtQuery string
		says               string
	}{
		// The connection closes in the middle of a bulk write's message
		// while the server still answers: the batch is sent again whole
		// (and written in halves only if the connection closes on it
		// again, which is how a document the server closes the
		// connection on is found; isolate.go).
		{"target cut mid-batch", "target", "upstream", 60_000, false, "", "", "target failed (write 20 documents | target closed the connection during a write of 20 documents"},
		// The write is applied, its acknowledgement never arrives: the
		// batch (or the checkpoint, wherever the cut lands) is written
		// again, idempotently.
		{"target acknowledgement lost", "target", "downstream", 4_000, false, "", "", "target closed the connection during a write of 20 documents | target failed ("},
		// A connection stops answering and is never closed: the URI's
		// timeoutMS ends the write, which is retried on another.
		{"target half-open", "target", "downstream", 2_000, true, "", "timeoutMS=15000", "client timed out waiting for server response"},
		// A stream's connection closes: the run reconnects and reads on
		// from the last acknowledged position.
		{"source cut mid-stream", "source", "downstream", 30_000, false, "", "", "source connection lost"},
		// A stream stops arriving and its connection is never closed: the
		// URL's read_timeout declares it lost.
		{"source half-open", "source", "downstream", 30_000, true, "read_timeout=3", "", "PostgreSQL sent nothing for 3s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f *fault
			var extra []string
			if c.side == "target" {
				extra = rare
			}
			r := migrate(t, c.srcQuery, c.tgtQuery, func(r *wireRun) { f = r.proxy(c.side).cutOnce(c.stream, c.at, c.stall) }, nil, extra...)
			if !f.fired.Load() {
				t.Fatal("the fault never fired: the stream is shorter than its byte offset")
			}
			said(t, r, c.says)
			if c.side == "source" {
				// The snapshot's own connection was not cut: the new
				// connection adopts the run's exported snapshot again
				// rather than taking a new one.
				if strings.Contains(r.out, "snapshot was re-taken") {
					t.Errorf("a lost stream connection made the run take a new snapshot:\n%s", r.out)
				}
				if ck := loadCheckpoint(t, r.target, "w"); ck == nil || ck.Resumes != 0 {
					t.Errorf("checkpoint %+v: want one with no re-taken snapshot (resumes 0)", ck)
				}
			}
			// One stall of a few seconds: far less than the default
			// timeouts (10 minutes). The URL's timeouts are loose enough
			// for every write and read that is not stalled to finish
			// within them on a loaded machine (at a load of 30 on 2
			// cores, FerretDB took over 5 s to replace 20 documents), and
			// so is this bound.
			if r.took > 90*time.Second {
				t.Errorf("the run took %s with faults bounded by the URL's timeouts", r.took)
			}
			exact(t, r)
		})
	}

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
}

// TestSourceOutageWithinRetryFor: the source goes silent after the first
// checkpoint (every connection through the fault proxy, new ones too,
// passes nothing) for longer than eight reconnection attempts take; with
// --retry-for longer than the outage, the run keeps reconnecting, each
// failure told, and finishes once the source answers again, with the
// exact result. The outage ends when the output shows the eleventh
// failed attempt, not after a fixed time.
func TestSourceOutageWithinRetryFor(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	mapping := filepath.Join(testenv.Root(t), "testdata", "resume", "crash.yaml")
	src := crashSource(t, 600, 40, 400)
	target, _ := testenv.MongoDB(t)
	su, _ := url.Parse(src)
	proxy := newFaultProxy(t, su.Host)
	args := []string{"migrate", "--progress", "none", "--mapping", mapping,
		"--source", withQuery(t, proxy.via(src), "read_timeout=1&connect_timeout=1"), "--target", target,
		"--job", "o", "--batch-size", "20", "--retry-for", "3m"}
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), args, out, out) }()
	waitCheckpoint(t, target, "o", done)
	proxy.add("silent", "timeout", "downstream", map[string]any{"timeout": 0})
	attempts := regexp.MustCompile(`source connection lost|reconnect to source failed`)
	deadline := time.Now().Add(3 * time.Minute)
	// Eight reconnection attempts after the loss make nine messages: the
	// eleventh is past what eight attempts alone would allow.
	for len(attempts.FindAllString(out.String(), -1)) < 11 {
		select {
		case code := <-done:
			t.Fatalf("migrate ended (exit %d) during the outage:\n%s", code, out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than eleven reconnection attempts told in 3 minutes:\n%s", out)
		}
	}
	proxy.remove("silent")
	var code int
	select {
	case code = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("migrate did not finish after the outage:\n%s", out)
	}
	t.Logf("exit %d:\n%s", code, out)
	if code != 0 || strings.Contains(out.String(), "without progress") {
		t.Fatalf("exit %d, want 0 after an outage shorter than --retry-for", code)
	}
	if code, o, errs := runCLI(t, "verify", "-q", "--mapping", mapping, "--source", src, "--target", target); code != 0 {
		t.Errorf("verify after the outage: exit %d\n%s%s", code, o, errs)
	}
}
