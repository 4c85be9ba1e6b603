package extract

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/denorm/denorm/internal/connstr"
)

// DefaultConnectTimeout bounds connecting to the source (TCP, TLS,
// authentication) when the connection string sets no connect_timeout
// (libpq's parameter, in seconds; 0 waits forever) and PGCONNECT_TIMEOUT
// is unset: a host that does not answer fails the command instead of
// hanging it.
const DefaultConnectTimeout = 10 * time.Second

// DefaultReadTimeout is how long denorm waits for PostgreSQL to send
// anything while it waits for an answer, when the connection string sets
// no read_timeout (seconds; 0 waits forever). A connection that stays
// silent longer (a half-open connection: the server or the network gone
// without closing it) is treated as lost: the run reconnects and continues
// from its last acknowledged position, as after any lost connection. It is
// generous because a query may legitimately compute for a while before its
// first row (a lock wait, a large aggregate); denorm's own reads are
// ordered index scans and batches that answer in seconds.
const DefaultReadTimeout = 10 * time.Minute

// readTimeoutParam is denorm's connection-string parameter for the read
// timeout. pgx would send an unknown parameter to the server as a setting,
// so it is taken out of the runtime parameters here.
const readTimeoutParam = "read_timeout"

// setTimeouts applies the connect and read timeouts to cfg and returns
// the read timeout.
func setTimeouts(cfg *pgx.ConnConfig, cs connstr.String) (time.Duration, error) {
	if _, set := cs.Param("connect_timeout"); !set && os.Getenv("PGCONNECT_TIMEOUT") == "" {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	read := DefaultReadTimeout
	if v, set := cfg.RuntimeParams[readTimeoutParam]; set {
		delete(cfg.RuntimeParams, readTimeoutParam)
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil {
			return 0, fmt.Errorf("source %s=%q: want a number of seconds (0: wait forever)", readTimeoutParam, v)
		}
		read = time.Duration(n) * time.Second
	}
	cfg.DialFunc = guardDial(cfg.DialFunc, read)
	return read, nil
}

// guardDial wraps dial's connections in a stallConn (read > 0).
func guardDial(dial pgconn.DialFunc, read time.Duration) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil || read <= 0 {
			return c, err
		}
		return &stallConn{Conn: c, idle: read}, nil
	}
}

// StallError is a source connection that sent nothing for the read
// timeout while denorm waited for an answer. It is a net.Error whose
// Timeout is true.
type StallError struct {
	Idle time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("PostgreSQL sent nothing for %s while an answer was due (read_timeout): the connection is taken as lost", e.Idle)
}

// Timeout is true: it is a network timeout.
func (e *StallError) Timeout() bool { return true }

// Temporary is false (net.Error's deprecated method).
func (e *StallError) Temporary() bool { return false }

// Is matches os.ErrDeadlineExceeded, as other read timeouts do.
func (e *StallError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

// stallConn is a connection whose reads fail after idle without data. The
// driver sets its own deadlines (to interrupt a read when a context ends):
// those are kept, and the earlier of the two applies. mu orders a read's
// deadline after any deadline the driver set, so a cancellation is never
// overwritten by the idle deadline.
type stallConn struct {
	net.Conn
	idle time.Duration

	mu       sync.Mutex
	deadline time.Time // the driver's read deadline; zero: none
}

func (c *stallConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	own := time.Now().Add(c.idle)
	d := own
	if !c.deadline.IsZero() && c.deadline.Before(own) {
		d = c.deadline
	}
	err := c.Conn.SetReadDeadline(d)
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && d.Equal(own) {
		c.mu.Lock()
		driver := c.deadline
		c.mu.Unlock()
		if driver.IsZero() || driver.After(own) {
			return n, &StallError{Idle: c.idle}
		}
	}
	return n, err
}

func (c *stallConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return c.Conn.SetDeadline(t)
}

func (c *stallConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return c.Conn.SetReadDeadline(t)
}
