package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
)

// TestDefaultTimeouts: with no timeout in the URLs, a source or a target
// that accepts connections and never answers fails the command within the
// documented defaults (10 s each), saying which timeout ran out.
func TestDefaultTimeouts(t *testing.T) {
	mapping := filepath.Join(testenv.Root(t), "mappings", "examples", "person.yaml")
	for _, c := range []struct {
		name  string
		args  []string
		limit time.Duration
		want  string
	}{
		{"source", []string{"validate", "--mapping", mapping, "--source", "postgres://u:pw@" + testenv.SilentServer(t, true) + "/db?sslmode=disable"},
			extract.DefaultConnectTimeout, "no answer within 10s (connect_timeout"},
		{"target", []string{"status", "--target", "mongodb://u:pw@" + testenv.SilentServer(t, true) + "/db?authMechanism=PLAIN"},
			load.DefaultServerSelectionTimeout, "no server answered within 10s (serverSelectionTimeoutMS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			code, out, errs := runCLI(t, c.args...)
			took := time.Since(start)
			if code != exitRuntime || !strings.Contains(errs, c.want) || strings.Contains(out+errs, "pw@") {
				t.Fatalf("exit %d after %s\n%s%s", code, took, out, errs)
			}
			if took < c.limit-time.Second || took > c.limit+10*time.Second {
				t.Errorf("failed after %s; the documented default is %s", took, c.limit)
			}
			t.Logf("%s: %s", took.Round(time.Millisecond), strings.TrimSpace(errs))
		})
	}
}

// TestMappingReadInterrupted: Ctrl-C while denorm waits for a mapping file
// that never comes (a FIFO without a writer) ends the command at once.
func TestMappingReadInterrupted(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "mapping.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	var out bytes.Buffer
	start := time.Now()
	code := run(ctx, []string{"validate", "--mapping", fifo}, &out, &out)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("returned %s after the interrupt", took)
	}
	if code != exitRuntime || !strings.Contains(out.String(), "context canceled") {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
	// Release the reader still waiting in open.
	if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}
