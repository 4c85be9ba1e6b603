package mappings

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadLimits covers how the mapping file is read: its size limit
// (checked before parsing, so a big file is reported by its size, not by
// what the parser makes of it), unreadable files, and interruption while
// reading a FIFO.
func TestLoadLimits(t *testing.T) {
	dir := t.TempDir()
	valid, err := os.ReadFile(filepath.Join("examples", "person.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mkfifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return p
	}
	problem := func(t *testing.T, err error, want string) {
		t.Helper()
		if !IsProblems(err) {
			t.Fatalf("error %v (%T) is not a Problems list (exit code 2)", err, err)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
		if strings.Contains(err.Error(), "alias") {
			t.Errorf("error %q talks about aliases", err)
		}
	}

	t.Run("over the limit, regular file", func(t *testing.T) {
		// A sparse file: its size is known without reading it.
		p := filepath.Join(dir, "big.yaml")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(MaxFileSize + 1); err != nil {
			t.Fatal(err)
		}
		f.Close()
		_, err = Load(p)
		problem(t, err, "is 4194305 bytes, over the limit of 4194304 bytes (4 MiB)")
	})
	t.Run("at the limit and one byte over", func(t *testing.T) {
		p := filepath.Join(dir, "small")
		if err := os.WriteFile(p, valid[:64], 0o644); err != nil {
			t.Fatal(err)
		}
		if data, err := readLimited(context.Background(), p, 64); err != nil || len(data) != 64 {
			t.Errorf("a file of exactly the limit: %d bytes, %v", len(data), err)
		}
		if _, err := readLimited(context.Background(), p, 63); err == nil || !strings.Contains(err.Error(), "64 bytes, over the limit of 63 bytes") {
			t.Errorf("a file one byte over the limit: %v", err)
		}
	})
	t.Run("endless device", func(t *testing.T) {
		_, err := Load("/dev/zero")
		problem(t, err, "is more than over the limit")
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "nope.yaml"))
		problem(t, err, "cannot read the mapping file")
	})
	t.Run("directory", func(t *testing.T) {
		_, err := Load(dir)
		problem(t, err, "cannot read the mapping file")
	})
	t.Run("fifo with a writer", func(t *testing.T) {
		p := mkfifo("ok.fifo")
		go func() {
			w, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err == nil {
				w.Write(valid)
				w.Close()
			}
		}()
		f, err := LoadContext(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Collections) == 0 {
			t.Error("no collections read from the FIFO")
		}
	})
	for _, c := range []struct {
		name   string
		writer func(p string) func()
	}{
		{"fifo without a writer", func(string) func() { return func() {} }},
		{"fifo whose writer stalls", func(p string) func() {
			w := make(chan *os.File, 1)
			go func() {
				f, err := os.OpenFile(p, os.O_WRONLY, 0)
				if err != nil {
					w <- nil
					return
				}
				f.Write(valid[:10])
				w <- f
			}()
			return func() {
				if f := <-w; f != nil {
					f.Close()
				}
			}
		}},
	} {
		t.Run(c.name+", interrupted", func(t *testing.T) {
			p := mkfifo(strings.ReplaceAll(c.name, " ", "-"))
			cleanup := c.writer(p)
			defer cleanup()
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			_, err := LoadContext(ctx, p)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want the context's", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("returned %s after the interrupt", d)
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the file", err)
			}
			// Unblock a goroutine still waiting in open.
			if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		})
	}
}
