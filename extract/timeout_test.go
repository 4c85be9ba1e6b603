package extract

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
)

// TestSourceConnectTimeout: a source that never answers fails the
// connection within connect_timeout, with a message that names neither
// the password nor anything but the failure; a refused one fails at once.
func TestSourceConnectTimeout(t *testing.T) {
	for _, c := range testenv.DeadServers(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			src, err := ParseSource("postgres://u:secret@" + c.Addr + "/db?connect_timeout=1&sslmode=disable")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = src.Snapshot(context.Background())
			took := time.Since(start)
			if err == nil {
				t.Fatal("connected to a server that does not answer")
			}
			if took > 5*time.Second {
				t.Errorf("failed after %s; connect_timeout=1", took)
			}
			want := "no answer within 1s (connect_timeout"
			if c.Name == "refuses" {
				want = "connection refused"
			}
			if !strings.Contains(err.Error(), "connect to source") || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q", err)
			}
			t.Logf("%s: %v", took.Round(time.Millisecond), err)
		})
	}
}

// TestSourceTimeoutSettings: the defaults apply unless the connection
// string (or PGCONNECT_TIMEOUT) sets its own; read_timeout is denorm's and
// is not sent to the server.
func TestSourceTimeoutSettings(t *testing.T) {
	t.Setenv("PGCONNECT_TIMEOUT", "")
	cases := []struct {
		conn    string
		connect time.Duration
		read    time.Duration
		err     string
	}{
		{"postgres://h/db", DefaultConnectTimeout, DefaultReadTimeout, ""},
		{"postgres://h/db?connect_timeout=3", 3 * time.Second, DefaultReadTimeout, ""},
		{"postgres://h/db?connect_timeout=0", 0, DefaultReadTimeout, ""},
		{"host=h dbname=db connect_timeout=7 read_timeout=0", 7 * time.Second, 0, ""},
		{"postgres://h/db?read_timeout=5", DefaultConnectTimeout, 5 * time.Second, ""},
		{"postgres://h/db?read_timeout=soon", 0, 0, `read_timeout="soon"`},
		{"POSTGRES://h/db", DefaultConnectTimeout, DefaultReadTimeout, ""},
		{"mongodb://h/db", 0, 0, "is not a PostgreSQL URL"},
		{"postgres://u:p%zz@h/db", 0, 0, "does not start a %XX escape"},
	}
	for _, c := range cases {
		t.Run(c.conn, func(t *testing.T) {
			s, err := ParseSource(c.conn)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.cfg.ConnectTimeout != c.connect {
				t.Errorf("connect timeout %v, want %v", s.cfg.ConnectTimeout, c.connect)
			}
			if _, sent := s.cfg.RuntimeParams[readTimeoutParam]; sent {
				t.Error("read_timeout would be sent to the server")
			}
			if s.timeout != c.read {
				t.Errorf("read timeout %v, want %v", s.timeout, c.read)
			}
		})
	}
	// The guard wraps dialled connections only with a read timeout.
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	dial := func(context.Context, string, string) (net.Conn, error) { return a, nil }
	if c, _ := guardDial(dial, time.Second)(context.Background(), "tcp", "x"); c == a {
		t.Error("read_timeout > 0: the connection is not guarded")
	}
	if c, _ := guardDial(dial, 0)(context.Background(), "tcp", "x"); c != a {
		t.Error("read_timeout=0: the connection is guarded")
	}
	t.Setenv("PGCONNECT_TIMEOUT", "4")
	s, err := ParseSource("postgres://h/db")
	if err != nil || s.cfg.ConnectTimeout != 4*time.Second {
		t.Errorf("PGCONNECT_TIMEOUT=4: %v, %v", s.cfg.ConnectTimeout, err)
	}
}

// TestStallConn: a read with nothing to read fails after the idle time
// with a StallError; a deadline the driver sets (a cancelled context)
// still interrupts a read at once and is reported as its own timeout.
func TestStallConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &stallConn{Conn: a, idle: 150 * time.Millisecond}
	go b.Write([]byte("hi"))
	buf := make([]byte, 8)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	start := time.Now()
	_, err := c.Read(buf)
	var se *StallError
	if !errors.As(err, &se) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("idle read: %v, want a StallError", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Error("a StallError is not a net.Error timeout")
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second {
		t.Errorf("stalled read failed after %s, idle 150ms", d)
	}

	c.idle = time.Hour
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = c.SetDeadline(time.Now())
	}()
	start = time.Now()
	_, err = c.Read(buf)
	if err == nil || errors.As(err, &se) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read interrupted by the driver's deadline: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the driver's deadline took %s to interrupt the read", d)
	}
	_ = c.SetDeadline(time.Time{})
	go b.Write([]byte("ok"))
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "ok" {
		t.Errorf("read after clearing the deadline: %q, %v", buf[:n], err)
	}
}
