package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/denorm/denorm/mappings"
)

// Op is the kind of a Change.
type Op uint8

// The kinds of Change, in the order a transaction delivers them: Begin,
// then Relation, Insert, Update, Delete and Truncate in WAL order, then
// Commit. Progress comes only between transactions.
const (
	// OpBegin opens a transaction: Xid, CommitLSN, CommitTime.
	OpBegin Op = iota + 1
	// OpRelation describes a table (Rel) before its first change in this
	// stream and again after any change of its definition: compare it with
	// the previous one or the catalog (Relation.Changes) to notice a
	// dropped column or a changed type. Partitions of a published
	// partitioned table are described too, though their rows arrive under
	// the partitioned table's name.
	OpRelation
	// OpInsert: Rel, New.
	OpInsert
	// OpUpdate: Rel, New, and Old as the replica identity gives it (OldKey,
	// OldFull, or none when the key did not change under DEFAULT).
	OpUpdate
	// OpDelete: Rel, Old (OldKey or OldFull).
	OpDelete
	// OpTruncate: Truncated (every table one TRUNCATE emptied), Cascade,
	// RestartIdentity.
	OpTruncate
	// OpCommit closes the transaction: Xid, CommitLSN, EndLSN, CommitTime.
	// Confirm EndLSN once the transaction's effects are durable.
	OpCommit
	// OpProgress says that everything committed before LSN was delivered
	// before it (the server decoded the WAL that far; the rest concerned
	// other tables or databases). Once everything delivered before it is
	// durable, Confirm(LSN) lets the slot free that WAL; an LSN at or past
	// a position read with CurrentWAL means the stream has caught up.
	OpProgress
)

var opNames = [...]string{"?", "begin", "relation", "insert", "update", "delete", "truncate", "commit", "progress"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// OldKind tells what an update's or delete's Old holds.
type OldKind uint8

const (
	// OldNone: no old values (an update that kept its key, under DEFAULT or
	// USING INDEX identity).
	OldNone OldKind = iota
	// OldKey: the old replica identity columns; the others are ValueAbsent.
	OldKey
	// OldFull: every old value (REPLICA IDENTITY FULL).
	OldFull
)

// ValueKind tells what a Value holds.
type ValueKind uint8

const (
	// ValueNull is SQL NULL.
	ValueNull ValueKind = iota
	// ValueText is a value in PostgreSQL's text output format (Text).
	ValueText
	// ValueUnchanged is an update's new value that PostgreSQL did not send
	// because it is stored out of line (TOAST) and was not changed: it
	// equals the old value, which the source still holds.
	ValueUnchanged
	// ValueAbsent is a column that a key-only old row does not carry.
	ValueAbsent
)

// Value is one column's value in a change.
type Value struct {
	Kind ValueKind
	// Text is the value as PostgreSQL prints it (when Kind is ValueText).
	Text string
}

// Column is one column of a Relation.
type Column struct {
	Name string
	// TypeOID is the type's OID; TypeName its pg_type.typname ("int4",
	// "varchar", "_text", "mood") as mappings.Column.TypeName has it.
	TypeOID  uint32
	TypeName string
	// TypeMod is the type modifier (-1 when none).
	TypeMod int32
	// Key marks the replica identity's columns (every column under FULL).
	Key bool
}

// Relation describes a table as the change stream sends it: the columns
// of the rows that follow, in order. A Relation is never modified once
// delivered; a new definition is a new Relation.
type Relation struct {
	// ID is the table's OID.
	ID           uint32
	Schema, Name string
	// Identity is the replica identity mode ("default", "index", "full",
	// "nothing").
	Identity string
	Columns  []Column
}

// Table returns the qualified name (mappings.QualifiedTableName).
func (r *Relation) Table() string { return mappings.QualifiedTableName(r.Schema, r.Name) }

// Index returns the position of column name in Columns (and in a Change's
// New and Old), or -1.
func (r *Relation) Index(name string) int {
	for i := range r.Columns {
		if r.Columns[i].Name == name {
			return i
		}
	}
	return -1
}

// ColumnChange is one difference between a table's definition in the
// change stream and the catalog a job was planned with.
type ColumnChange struct {
	Column string
	// Was is the catalog's type name; Now the stream's ("" when the column
	// is gone).
	Was, Now string
}

func (c ColumnChange) String() string {
	if c.Now == "" {
		return fmt.Sprintf("column %q was dropped or renamed", c.Column)
	}
	return fmt.Sprintf("column %q changed type from %s to %s", c.Column, c.Was, c.Now)
}

// Changes compares the relation with the catalog's table t on columns
// (all of t's columns when nil): each one gone from the relation, or of
// another type (by pg_type name), is a change. Added columns are not.
func (r *Relation) Changes(t *mappings.Table, columns []string) []ColumnChange {
	if columns == nil {
		for _, c := range t.Columns {
			columns = append(columns, c.Name)
		}
	}
	var out []ColumnChange
	for _, name := range columns {
		was := t.Column(name)
		if was == nil {
			continue
		}
		i := r.Index(name)
		switch {
		case i < 0:
			out = append(out, ColumnChange{Column: name, Was: was.TypeName})
		case r.Columns[i].TypeName != was.TypeName:
			out = append(out, ColumnChange{Column: name, Was: was.TypeName, Now: r.Columns[i].TypeName})
		}
	}
	return out
}

// TableChanges compares a table as the catalog gives it now (nil: gone)
// with the table as planned (then), on columns: each one gone, or of
// another type, is a change, as Relation.Changes says.
func TableChanges(then, now *mappings.Table, columns []string) []ColumnChange {
	var out []ColumnChange
	for _, name := range columns {
		was := then.Column(name)
		if was == nil {
			continue
		}
		var is *mappings.Column
		if now != nil {
			is = now.Column(name)
		}
		switch {
		case is == nil:
			out = append(out, ColumnChange{Column: name, Was: was.TypeName})
		case is.TypeName != was.TypeName:
			out = append(out, ColumnChange{Column: name, Was: was.TypeName, Now: is.TypeName})
		}
	}
	return out
}

// SchemaChangeError: a mapped table's definition changed while syncing, so
// documents cannot be built as planned.
type SchemaChangeError struct {
	Table   string
	Changes []ColumnChange
}

func (e *SchemaChangeError) Error() string {
	parts := make([]string, len(e.Changes))
	for i, c := range e.Changes {
		parts[i] = c.String()
	}
	return fmt.Sprintf("table %s changed while syncing: %s; sync stopped before writing documents built from it: "+
		"update the mapping to the table as it is now and run sync again, which rebuilds only the collections the change of the mapping touches; "+
		"or start the job over (`denorm sync --drop-slot`, then `denorm sync`)",
		e.Table, strings.Join(parts, "; "))
}

// Change is one message of the change stream. Which fields are set
// depends on Op (see the Op constants). The consumer owns a returned
// Change and its slices; Rel and Truncated are shared and read-only.
type Change struct {
	Op Op
	// LSN is the message's position in the WAL, for information (0 for
	// Relation); for Progress, the position everything before which was
	// delivered.
	LSN LSN
	// Xid is the transaction's id (Begin, Commit and the changes between).
	Xid uint32
	// Rel is the changed table (Relation, Insert, Update, Delete).
	Rel *Relation
	// New and Old hold one Value per column of Rel, in Rel's order.
	New, Old []Value
	OldKind  OldKind
	// Truncated lists the tables one TRUNCATE emptied.
	Truncated       []*Relation
	Cascade         bool
	RestartIdentity bool
	// CommitLSN is the transaction's commit record (Begin, Commit); EndLSN
	// the position just past it (Commit): what Confirm takes.
	CommitLSN, EndLSN LSN
	// CommitTime is the commit's time on the source's clock (Begin,
	// Commit): the consumer's lag is its clock minus the CommitTime of the
	// last transaction it applied.
	CommitTime time.Time
}

// NewValue returns the new value of column name (Insert, Update).
func (c *Change) NewValue(name string) (Value, bool) { return c.value(c.New, name) }

// OldValue returns the old value of column name (Update, Delete); ok is
// false when the change carries no old values.
func (c *Change) OldValue(name string) (Value, bool) { return c.value(c.Old, name) }

func (c *Change) value(vals []Value, name string) (Value, bool) {
	if c.Rel == nil || vals == nil {
		return Value{}, false
	}
	i := c.Rel.Index(name)
	if i < 0 {
		return Value{}, false
	}
	return vals[i], true
}

// StreamOptions tunes a ChangeStream. The zero value is fine.
type StreamOptions struct {
	// Buffer is how many decoded changes may wait between the server and
	// Next (default 256). With the rows' sizes it bounds the stream's
	// memory, however large a transaction is.
	Buffer int
	// StatusInterval is how often the stream reports its confirmed
	// position to the server (default 10s). It must stay well below the
	// server's wal_sender_timeout (default 60s), which ends streams that
	// stay silent longer.
	StatusInterval time.Duration
}

// ChangeStream delivers a slot's committed changes in WAL order.
//
// One goroutine, started by Stream and ended by Close, owns the
// replication connection: it decodes messages into a buffer of
// StreamOptions.Buffer changes and waits while the buffer is full, so the
// consumer sets the pace; meanwhile it answers the server's keepalives and
// reports the confirmed position every StatusInterval, so a slow consumer
// does not lose the connection.
//
// Next is called from one goroutine at a time; Confirm and Close from any.
// The stream ends when Close is called (Next then returns ErrStreamClosed)
// or on an error (the connection lost, the server shutting down, the slot
// invalidated), which Next returns from then on; a new Stream resumes.
type ChangeStream struct {
	l        *Logical
	conn     *pgconn.PgConn
	interval time.Duration
	ch       chan *Change
	// err is set before ch is closed.
	err error
	// confirmed is the highest position Confirm was given.
	confirmed atomic.Uint64
	// stop is closed by Close; mu orders it with the reader's read
	// deadlines, so Close always interrupts a read.
	stop    chan struct{}
	mu      sync.Mutex
	stopped bool
	once    sync.Once
	done    chan struct{}
	closed  atomic.Bool
	// nudge tells the reader that Confirm advanced the position.
	nudge chan struct{}
	// decoded counts the changes the reader produced (tests use it to see
	// that the buffer bounds what is held).
	decoded atomic.Int64

	// Owned by the reader goroutine.
	rels       map[uint32]*Relation
	types      map[uint32]string
	inTx       bool
	xid        uint32
	serverEnd  LSN // the last keepalive's position, reported as written
	progressed LSN // the last Progress delivered
	nextStatus time.Time
	lastStatus time.Time
}

// confirmDelay is the least time between two status reports that Confirm
// brings forward.
const confirmDelay = 100 * time.Millisecond

// errStreamEnded: the server ended the change stream (CopyDone).
var errStreamEnded = errors.New("the server ended the stream")

// ErrStreamClosed is what Next returns after Close.
var ErrStreamClosed = errors.New("change stream closed")

// Stream starts streaming the job's slot: the transactions committed at
// or after from (a Commit's EndLSN or a Progress LSN the job saved, or
// Setup's Consistent), or after the slot's confirmed position when from is
// 0. It checks the slot first: missing (*SlotMissingError), invalidated
// (*SlotInvalidError), in use for 2 s more (*SlotBusyError), or confirmed
// past from (*SlotAheadError). ctx bounds the start only; Close ends the
// stream.
func (l *Logical) Stream(ctx context.Context, from LSN, opts StreamOptions) (*ChangeStream, error) {
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	st, err := l.idleStatus(ctx, conn)
	if err != nil {
		return nil, err
	}
	if err := l.usable(st); err != nil {
		return nil, err
	}
	if st.Active {
		return nil, &SlotBusyError{Job: l.Job, Slot: l.Name, PID: st.ActivePID}
	}
	var havePub bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_publication WHERE pubname = $1)`, l.Name).Scan(&havePub); err != nil {
		return nil, fmt.Errorf("read publication %s: %w", l.Name, err)
	}
	if !havePub {
		return nil, &SlotMissingError{Job: l.Job, Name: l.Name, Publication: true}
	}
	switch {
	case from == 0:
		from = st.Confirmed
	case from < st.Confirmed:
		return nil, &SlotAheadError{Job: l.Job, Slot: l.Name, From: from, Confirmed: st.Confirmed}
	}
	// Built-in types' names: pgoutput sends Type messages only for the
	// others.
	types := map[uint32]string{}
	rows, err := conn.Query(ctx, `SELECT oid::int8, typname::text FROM pg_type WHERE oid < 10000`)
	if err != nil {
		return nil, fmt.Errorf("read type names: %w", err)
	}
	for rows.Next() {
		var (
			oid  int64
			name string
		)
		if err := rows.Scan(&oid, &name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read type names: %w", err)
		}
		types[uint32(oid)] = name
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read type names: %w", err)
	}

	rconn, err := l.connectReplication(ctx)
	if err != nil {
		return nil, err
	}
	// Protocol 1: whole transactions, sent at commit in commit order (2
	// would also stream transactions in progress, which may still abort).
	err = pglogrepl.StartReplication(ctx, rconn, l.Name, pglogrepl.LSN(from), pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names '" + l.Name + "'"},
	})
	if err != nil {
		rconn.Close(context.WithoutCancel(ctx))
		return nil, l.explain(fmt.Errorf("start replication from slot %s at %s: %w", l.Name, from, err))
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 256
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = 10 * time.Second
	}
	s := &ChangeStream{
		l: l, conn: rconn, interval: opts.StatusInterval,
		ch: make(chan *Change, opts.Buffer), stop: make(chan struct{}), done: make(chan struct{}),
		nudge: make(chan struct{}, 1),
		rels:  map[uint32]*Relation{}, types: types,
		serverEnd: from,
	}
	s.confirmed.Store(uint64(from))
	go s.run()
	return s, nil
}

// Next returns the next change, waiting for one until ctx ends. After the
// stream ended it returns the reason: ErrStreamClosed after Close (changes
// still buffered are dropped), else the error that ended it, once the
// changes received before it were returned.
func (s *ChangeStream) Next(ctx context.Context) (*Change, error) {
	if s.closed.Load() {
		return nil, ErrStreamClosed
	}
	select {
	case c, ok := <-s.ch:
		if !ok {
			return nil, s.err
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Confirm tells the stream that everything up to lsn (a Commit's EndLSN or
// a Progress LSN) is durable on the consumer's side: the target
// acknowledged it and the checkpoint holding lsn is saved. The stream
// reports it to the server within about 100 ms (and at Close); the slot's
// confirmed position never passes what was confirmed. A position lower
// than one already confirmed is ignored.
//
// The server keeps the slot's position in memory and saves it at
// checkpoints: after a crash or restart it may be older than the last
// Confirm, so resume from the position the job saved (Stream's from), not
// from the slot's.
func (s *ChangeStream) Confirm(lsn LSN) {
	for {
		old := s.confirmed.Load()
		if uint64(lsn) <= old {
			return
		}
		if s.confirmed.CompareAndSwap(old, uint64(lsn)) {
			break
		}
	}
	select {
	case s.nudge <- struct{}{}:
	default:
		return // a nudge is pending already
	}
	// Interrupt a read, so that the reader sees the nudge.
	s.mu.Lock()
	if !s.stopped {
		_ = s.conn.Conn().SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
}

// nudged brings the next status report forward after a Confirm.
func (s *ChangeStream) nudged() {
	if at := s.lastStatus.Add(confirmDelay); at.Before(s.nextStatus) {
		s.nextStatus = at
	}
}

// Confirmed returns the highest position confirmed so far (at first, the
// position the stream started from).
func (s *ChangeStream) Confirmed() LSN { return LSN(s.confirmed.Load()) }

// Close ends the stream: it reports the confirmed position a last time,
// closes the connection and waits for the reader goroutine to end. Changes
// delivered but not confirmed are sent again by the next stream. Safe to
// call more than once and from any goroutine.
func (s *ChangeStream) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		s.mu.Lock()
		s.stopped = true
		close(s.stop)
		_ = s.conn.Conn().SetReadDeadline(time.Now())
		s.mu.Unlock()
	})
	<-s.done
	return nil
}

// run is the reader goroutine.
func (s *ChangeStream) run() {
	defer close(s.done)
	err := s.loop()
	if !s.conn.IsClosed() {
		// Leave the slot at what was confirmed last.
		if serr := s.sendStatus(); err == nil && serr != nil {
			err = serr
		}
		s.terminate()
	}
	if err == nil {
		err = ErrStreamClosed
	}
	s.err = err
	close(s.ch)
}

// terminate ends the replication connection and waits (5 s at most) until
// the server closed its side: its process has then released the slot, so
// a Drop or a new Stream right after Close finds it free.
func (s *ChangeStream) terminate() {
	raw := s.conn.Conn()
	_ = raw.SetDeadline(time.Now().Add(5 * time.Second))
	s.conn.Frontend().Send(&pgproto3.Terminate{})
	if s.conn.Frontend().Flush() == nil {
		_, _ = io.Copy(io.Discard, raw) // until the server hangs up
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.conn.Close(ctx)
}

// errStopped ends the loop on Close.
var errStopped = errors.New("stopped")

func (s *ChangeStream) loop() error {
	s.nextStatus = time.Now().Add(s.interval)
	for {
		if !time.Now().Before(s.nextStatus) {
			if err := s.sendStatus(); err != nil {
				return err
			}
		}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return nil
		}
		_ = s.conn.Conn().SetReadDeadline(s.nextStatus)
		s.mu.Unlock()
		select {
		case <-s.nudge:
			s.nudged()
			continue
		default:
		}
		msg, err := s.conn.ReceiveMessage(context.Background())
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // time to report, or Close
			}
			return s.l.explain(fmt.Errorf("replication slot %s: %w", s.l.Name, err))
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			err = s.copyData(m.Data)
		case *pgproto3.ErrorResponse:
			err = s.l.explain(fmt.Errorf("replication slot %s: %w", s.l.Name, pgconn.ErrorResponseToPgError(m)))
		case *pgproto3.CopyDone:
			err = fmt.Errorf("replication slot %s: %w", s.l.Name, errStreamEnded)
		}
		if errors.Is(err, errStopped) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// copyData handles one message of the replication protocol.
func (s *ChangeStream) copyData(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("replication slot %s: %w", s.l.Name, err)
		}
		end := LSN(k.ServerWALEnd)
		s.serverEnd = max(s.serverEnd, end)
		if k.ReplyRequested {
			if err := s.sendStatus(); err != nil {
				return err
			}
		}
		// The first keepalive, and then each one further on, between
		// transactions: at the stream's start or after a Commit ending
		// there too, it tells the consumer that nothing else came.
		if !s.inTx && (end > s.progressed || s.progressed == 0) {
			s.progressed = end
			return s.deliver(&Change{Op: OpProgress, LSN: end})
		}
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("replication slot %s: %w", s.l.Name, err)
		}
		c, err := s.decode(LSN(x.WALStart), x.WALData)
		if err != nil {
			return fmt.Errorf("replication slot %s at %s: %w", s.l.Name, LSN(x.WALStart), err)
		}
		if c != nil {
			return s.deliver(c)
		}
	}
	return nil
}

// deliver hands c to Next, waiting while the buffer is full; meanwhile it
// keeps reporting status, so that the server does not time the stream out.
func (s *ChangeStream) deliver(c *Change) error {
	s.decoded.Add(1)
	select {
	case s.ch <- c:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(s.nextStatus))
	defer t.Stop()
	for {
		select {
		case s.ch <- c:
			return nil
		case <-s.stop:
			return errStopped
		case <-s.nudge:
			s.nudged()
			t.Reset(time.Until(s.nextStatus))
		case <-t.C:
			if err := s.sendStatus(); err != nil {
				return err
			}
			t.Reset(time.Until(s.nextStatus))
		}
	}
}

// sendStatus reports the confirmed position as flushed and applied (the
// slot's confirmed_flush_lsn follows it) and the last keepalive's position
// as written, so the server sends a keepalive (a Progress) only when it
// decoded further.
func (s *ChangeStream) sendStatus() error {
	s.lastStatus = time.Now()
	s.nextStatus = s.lastStatus.Add(s.interval)
	c := pglogrepl.LSN(s.confirmed.Load())
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: max(pglogrepl.LSN(s.serverEnd), c), WALFlushPosition: c, WALApplyPosition: c,
	})
	if err != nil {
		return fmt.Errorf("replication slot %s: report position: %w", s.l.Name, err)
	}
	return nil
}

// decode turns one pgoutput message into a Change (nil for the messages
// the consumer does not see: Type, Origin, logical decoding messages).
func (s *ChangeStream) decode(at LSN, data []byte) (*Change, error) {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return nil, err
	}
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		s.inTx, s.xid = true, m.Xid
		return &Change{Op: OpBegin, LSN: at, Xid: m.Xid, CommitLSN: LSN(m.FinalLSN), CommitTime: m.CommitTime}, nil
	case *pglogrepl.CommitMessage:
		s.inTx = false
		return &Change{Op: OpCommit, LSN: at, Xid: s.xid, CommitLSN: LSN(m.CommitLSN), EndLSN: LSN(m.TransactionEndLSN), CommitTime: m.CommitTime}, nil
	case *pglogrepl.TypeMessage:
		s.types[m.DataType] = m.Name
		return nil, nil
	case *pglogrepl.RelationMessage:
		rel := &Relation{ID: m.RelationID, Schema: m.Namespace, Name: m.RelationName,
			Identity: identityModes[string(rune(m.ReplicaIdentity))], Columns: make([]Column, len(m.Columns))}
		for i, c := range m.Columns {
			rel.Columns[i] = Column{Name: c.Name, TypeOID: c.DataType, TypeName: s.types[c.DataType], TypeMod: c.TypeModifier, Key: c.Flags&1 != 0}
		}
		s.rels[m.RelationID] = rel
		return &Change{Op: OpRelation, LSN: at, Xid: s.xid, Rel: rel}, nil
	case *pglogrepl.InsertMessage:
		c, err := s.rowChange(OpInsert, at, m.RelationID)
		if err == nil {
			c.New, err = values(c.Rel, m.Tuple, false)
		}
		return c, err
	case *pglogrepl.UpdateMessage:
		c, err := s.rowChange(OpUpdate, at, m.RelationID)
		if err == nil {
			c.New, err = values(c.Rel, m.NewTuple, false)
		}
		if err == nil {
			c.OldKind, c.Old, err = oldValues(c.Rel, m.OldTupleType, m.OldTuple)
		}
		return c, err
	case *pglogrepl.DeleteMessage:
		c, err := s.rowChange(OpDelete, at, m.RelationID)
		if err == nil {
			c.OldKind, c.Old, err = oldValues(c.Rel, m.OldTupleType, m.OldTuple)
		}
		return c, err
	case *pglogrepl.TruncateMessage:
		c := &Change{Op: OpTruncate, LSN: at, Xid: s.xid,
			Cascade:         m.Option&pglogrepl.TruncateOptionCascade != 0,
			RestartIdentity: m.Option&pglogrepl.TruncateOptionRestartIdentity != 0}
		for _, id := range m.RelationIDs {
			rel, err := s.relation(id)
			if err != nil {
				return nil, err
			}
			c.Truncated = append(c.Truncated, rel)
		}
		return c, nil
	}
	return nil, nil // Origin, logical decoding messages
}

// rowChange starts the Change of a row of relation id.
func (s *ChangeStream) rowChange(op Op, at LSN, id uint32) (*Change, error) {
	rel, err := s.relation(id)
	if err != nil {
		return nil, err
	}
	return &Change{Op: op, LSN: at, Xid: s.xid, Rel: rel}, nil
}

func (s *ChangeStream) relation(id uint32) (*Relation, error) {
	if rel := s.rels[id]; rel != nil {
		return rel, nil
	}
	return nil, fmt.Errorf("a change of relation %d before its description", id)
}

// oldValues decodes an update's or delete's old row ('K' key, 'O' full).
func oldValues(rel *Relation, kind uint8, tuple *pglogrepl.TupleData) (OldKind, []Value, error) {
	switch kind {
	case pglogrepl.UpdateMessageTupleTypeKey:
		v, err := values(rel, tuple, true)
		return OldKey, v, err
	case pglogrepl.UpdateMessageTupleTypeOld:
		v, err := values(rel, tuple, false)
		return OldFull, v, err
	}
	return OldNone, nil, nil
}

// values copies a row's values out of the connection's buffer. In a
// key-only row, the columns outside the key are ValueAbsent.
func values(rel *Relation, tuple *pglogrepl.TupleData, keyOnly bool) ([]Value, error) {
	if tuple == nil {
		return nil, errors.New("a change without its row")
	}
	if len(tuple.Columns) != len(rel.Columns) {
		return nil, fmt.Errorf("a row of %s with %d values for %d columns", rel.Table(), len(tuple.Columns), len(rel.Columns))
	}
	out := make([]Value, len(tuple.Columns))
	for i, c := range tuple.Columns {
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			if keyOnly && !rel.Columns[i].Key {
				out[i].Kind = ValueAbsent
			}
		case pglogrepl.TupleDataTypeToast:
			out[i].Kind = ValueUnchanged
		case pglogrepl.TupleDataTypeText:
			out[i] = Value{Kind: ValueText, Text: string(c.Data)}
		default:
			return nil, fmt.Errorf("column %s of %s: unexpected value format %q", rel.Columns[i].Name, rel.Table(), c.DataType)
		}
	}
	return out, nil
}
