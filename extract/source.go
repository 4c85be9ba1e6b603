package extract

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/denorm/denorm/internal/connstr"
)

// Source is the PostgreSQL database a job reads: how to connect to it. It
// holds no connection and may be used from any goroutine; each snapshot it
// opens has a connection of its own, closed with the snapshot.
type Source struct {
	cfg *pgx.ConnConfig
	// conn is the connection string, to keep its secrets out of errors.
	conn connstr.String
	// timeout is the read timeout (0: none); see timeout.go.
	timeout time.Duration
	// unguarded dials without the read timeout: for replication
	// connections, silent for as long as no change comes.
	unguarded pgconn.DialFunc
	// taken holds when each snapshot exported through the Source was
	// taken, by id (Snapshot.Taken of the snapshots adopting it).
	taken sync.Map
	// read counts the bytes read from the Source's connections (BytesRead).
	read atomic.Int64
	// spares are connections dialed ahead of need (DialAhead), which
	// connect takes before it dials; stopSpares cancel their dialing.
	spareMu    sync.Mutex
	spares     []chan dialed
	stopSpares []context.CancelFunc
}

// dialed is the outcome of a connection dialed ahead.
type dialed struct {
	conn *pgx.Conn
	err  error
}

// BytesRead is the number of bytes read so far from the connections the
// Source opened (snapshots and the ones adopting them; not replication
// connections): what the wire carried, protocol and TLS included.
func (s *Source) BytesRead() int64 { return s.read.Load() }

// countingConn counts the bytes read from a connection into n.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// ParseSource reads a source URL (postgres://...) or key=value connection
// string. It does not connect. The connection timeouts are set (see
// timeout.go): connect_timeout defaults to DefaultConnectTimeout, and
// read_timeout, denorm's own parameter, to DefaultReadTimeout. Its errors
// never hold the password.
func ParseSource(url string) (*Source, error) {
	cs := connstr.Parse(url)
	if err := cs.Problem(); err != nil {
		return nil, err
	}
	if cs.Form() == connstr.URL && cs.Scheme() != "postgres" && cs.Scheme() != "postgresql" {
		return nil, fmt.Errorf("%s is not a PostgreSQL URL: give postgres://user@host:port/db or a key=value string (host=... dbname=...)", cs.Redacted())
	}
	cfg, err := pgx.ParseConfig(cs.WithLowerScheme())
	if err != nil {
		return nil, cs.ParseError(err)
	}
	unguarded := cfg.DialFunc
	read, err := setTimeouts(cfg, cs)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = "denorm"
	// Row-level security makes PostgreSQL raise an error rather than
	// silently hide rows (as pg_dump does): see KeepRowSecurity.
	cfg.RuntimeParams["row_security"] = "off"
	cfg.BuildFrontend = bufferedFrontend
	src := &Source{cfg: cfg, conn: cs, timeout: read, unguarded: unguarded}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, n: &src.read}, nil
	}
	return src, nil
}

// KeepRowSecurity makes the source's sessions keep row_security on: a
// table whose row-level security policies apply to the role then shows
// it only the rows they allow, where by default (row_security = off) a
// query on it fails (see RowSecurityBlocked). Call it before connecting.
func (s *Source) KeepRowSecurity() { s.cfg.RuntimeParams["row_security"] = "on" }

// RowSecurityBlocked reports whether err is PostgreSQL refusing a query
// that row-level security would filter while row_security is off, and
// names the table it gives.
func RowSecurityBlocked(err error) (table string, ok bool) {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		return "", false
	}
	const prefix = "query would be affected by row-level security policy for table "
	rest, found := strings.CutPrefix(pe.Message, prefix)
	if !found {
		return "", false
	}
	return strings.Trim(rest, `"`), true
}

// readBuffer is how much one read from a source connection may take.
// The driver reads the socket in pieces of 8 KiB, each a system call and,
// with the read timeout, a deadline set: streaming the wide benchmark's
// 6 million rows, those reads were a tenth of denorm's CPU. Behind this
// buffer one read takes whatever the socket holds, up to its size.
const readBuffer = 256 << 10

// bufferedFrontend is the driver's protocol reader (pgconn's default
// BuildFrontend) reading through a readBuffer.
func bufferedFrontend(r io.Reader, w io.Writer) *pgproto3.Frontend {
	return pgproto3.NewFrontend(bufio.NewReaderSize(r, readBuffer), w)
}

// ErrNotAdopted marks Adopt's failures past connecting: the connection was
// made but the exported snapshot could not be adopted (typically because
// the transaction that exported it has ended).
var ErrNotAdopted = errors.New("snapshot not adopted")

// Snapshot connects and opens a new snapshot on that connection (see
// Snapshot): the snapshot's Close closes the connection too.
func (s *Source) Snapshot(ctx context.Context) (*Snapshot, error) {
	snap, err := s.openOn(ctx, "")
	if err != nil {
		return nil, s.redact(err)
	}
	return snap, nil
}

// openOn connects (connect) and opens a snapshot on the connection (see
// open). When that fails on a connection dialed ahead, it tries once more
// on a new one: the spare may have been idle long enough for the server
// (idle_session_timeout) or the network to drop it, which says nothing of
// the snapshot. Errors opening it are errOpen.
func (s *Source) openOn(ctx context.Context, id string) (*Snapshot, error) {
	conn, spare, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := s.open(ctx, conn, id)
	if err != nil && spare && ctx.Err() == nil {
		conn.Close(context.WithoutCancel(ctx))
		if conn, err = s.dial(ctx); err != nil {
			return nil, err
		}
		snap, err = s.open(ctx, conn, id)
	}
	if err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, errOpen{err}
	}
	return snap, nil
}

// errOpen is a failure to open a snapshot on a connection made (as
// opposed to a failure to connect).
type errOpen struct{ error }

func (e errOpen) Unwrap() error { return e.error }

// Adopt connects and opens a snapshot that sees exactly what the exported
// snapshot id sees (SET TRANSACTION SNAPSHOT, as pg_dump's parallel
// workers do), so parallel readers read one consistent state. Its Close
// closes the connection too. Failures after connecting wrap ErrNotAdopted.
func (s *Source) Adopt(ctx context.Context, id string) (*Snapshot, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: no snapshot id", ErrNotAdopted)
	}
	snap, err := s.openOn(ctx, id)
	var open errOpen
	if errors.As(err, &open) {
		return nil, fmt.Errorf("%w: %w", ErrNotAdopted, s.redact(open.error))
	}
	return snap, err
}

// DialAhead starts dialing n connections in the background, for the next
// n snapshots (Snapshot, Adopt) to take instead of dialing then: a
// connection costs a few milliseconds (the server starts a backend and
// authenticates), which a migration's streams then no longer wait for
// once the catalog is read. CloseSpares closes those not taken.
func (s *Source) DialAhead(ctx context.Context, n int) {
	if n <= 0 {
		return
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	s.stopSpares = append(s.stopSpares, stop)
	for range n {
		ch := make(chan dialed, 1)
		s.spares = append(s.spares, ch)
		go func() {
			c, err := pgx.ConnectConfig(ctx, s.cfg)
			ch <- dialed{c, err}
		}()
	}
}

// CloseSpares stops dialing ahead and closes the connections dialed ahead
// that no snapshot took, waiting for them.
func (s *Source) CloseSpares(ctx context.Context) {
	s.spareMu.Lock()
	spares, stops := s.spares, s.stopSpares
	s.spares, s.stopSpares = nil, nil
	s.spareMu.Unlock()
	for _, stop := range stops {
		stop()
	}
	for _, ch := range spares {
		closeSpare(ctx, ch)
	}
}

// closeSpare waits for the dialing of a spare to end and closes what it
// connected.
func closeSpare(ctx context.Context, ch <-chan dialed) {
	if d := <-ch; d.conn != nil {
		_ = d.conn.Close(ctx)
	}
}

// spare returns a connection dialed ahead, waiting for its dialing to
// end, or nil when none is left or its dialing failed (the caller dials
// anew, and reports that dial's error).
func (s *Source) spare(ctx context.Context) *pgx.Conn {
	s.spareMu.Lock()
	if len(s.spares) == 0 {
		s.spareMu.Unlock()
		return nil
	}
	ch := s.spares[0]
	s.spares = s.spares[1:]
	s.spareMu.Unlock()
	select {
	case d := <-ch:
		return d.conn
	case <-ctx.Done():
		go closeSpare(context.Background(), ch)
		return nil
	}
}

// connect returns a new connection: one dialed ahead when there is one,
// else dialed now. spare says which: a spare may have been dropped by the
// server while it waited, so a failure to use it calls for a new one.
func (s *Source) connect(ctx context.Context) (conn *pgx.Conn, spare bool, err error) {
	if c := s.spare(ctx); c != nil {
		return c, true, nil
	}
	conn, err = s.dial(ctx)
	return conn, false, err
}

func (s *Source) dial(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		if pgconn.Timeout(err) && ctx.Err() == nil && s.cfg.ConnectTimeout > 0 {
			return nil, fmt.Errorf("connect to source: no answer within %s (connect_timeout; set it in the URL, 0 waits forever): %w", s.cfg.ConnectTimeout, s.redact(err))
		}
		return nil, fmt.Errorf("connect to source: %w", s.redact(tidyConnectError(err)))
	}
	return conn, nil
}

// redact keeps the password out of an error's text (the driver does not
// print it today; this makes sure of it).
func (s *Source) redact(err error) error { return s.conn.RedactError(err) }

// Lost reports whether err, returned while reading s, means that s's
// connection is lost or was killed (closed, network failure, server
// shutting down or terminating the backend), so reading again needs a new
// connection; other errors (a bad query, a bad value) would fail again.
func (s *Snapshot) Lost(err error) bool {
	return s.tx.Conn().IsClosed() || Disconnected(err)
}

// Disconnected reports whether err is a lost or refused connection to the
// source: a network failure, the server shutting down, starting up or
// terminating the backend, a change stream the server ended. A new
// connection may succeed later; other errors would fail again.
func Disconnected(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// admin_shutdown, crash_shutdown, cannot_connect_now, and the
		// connection exception class.
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || strings.HasPrefix(pe.Code, "08")
	}
	return netError(err) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, errStreamEnded) || pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// netError reports whether err is a network error. A bare system error
// (syscall.Errno) has the methods of net.Error too, so a full disk
// (ENOSPC from writing a file) would pass for one: only a system error a
// network operation returned (wrapped in *net.OpError, which is itself a
// net.Error) counts.
func netError(err error) bool {
	var ne net.Error
	if !errors.As(err, &ne) {
		return false
	}
	_, bare := ne.(syscall.Errno)
	return !bare
}
