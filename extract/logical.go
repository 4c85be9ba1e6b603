package extract

// Change capture for `denorm sync --method logical` (logical.go,
// pgoutput.go, identity.go, logical_error.go): a sync job owns one publication and one
// logical replication slot (plugin pgoutput), both named after the job.
// Setup creates them and exports the snapshot the initial copy reads, so
// the copy and the change stream join with no gap and no overlap; Stream
// delivers the committed changes after a position, in WAL order; Drop
// removes both. denorm creates nothing else in the source.
//
// Privileges. The source server needs wal_level = logical (a restart), and
// free max_replication_slots and max_wal_senders. The user denorm connects
// as needs the REPLICATION attribute (ALTER ROLE name REPLICATION; on
// managed services the provider's replication role), a pg_hba.conf entry
// allowing its replication connections, SELECT on the mapped tables, CREATE
// on the database and ownership of every mapped table (PostgreSQL lets only
// a table's owner add it to a publication). Instead of ownership, a DBA can
// create the publication beforehand, named as LogicalNames says: `CREATE
// PUBLICATION denorm_<job> FOR TABLE <the mapped tables> WITH
// (publish_via_partition_root = true)`, and make the sync user its owner
// (ALTER PUBLICATION ... OWNER TO), so that `sync --drop-slot` can remove it.
// Tables published for updates and deletes must have a replica
// identity (a primary key, or REPLICA IDENTITY FULL or USING INDEX):
// otherwise PostgreSQL would refuse the application's UPDATEs and DELETEs
// on them, so Setup refuses first and prints the statements to run.
//
// Limits: PostgreSQL 13 or later. Changes of a partitioned table's rows are
// reported under the partitioned table's name (publish_via_partition_root),
// but a TRUNCATE of one partition alone is not reported at all (pgoutput
// skips it). Rows of inheritance children are reported under the child's
// name. Views, materialized views and foreign tables cannot be captured.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/denorm/denorm/mappings"
)

// LSN is a position in PostgreSQL's write-ahead log.
type LSN uint64

// String prints the position as PostgreSQL does ("16/B374D848").
func (l LSN) String() string { return pglogrepl.LSN(l).String() }

// ParseLSN reads a position printed as PostgreSQL does ("16/B374D848").
func ParseLSN(s string) (LSN, error) {
	l, err := pglogrepl.ParseLSN(s)
	return LSN(l), err
}

// MarshalText writes the position as String does: a record holds it as
// PostgreSQL prints it, and reads it back typed.
func (l LSN) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a position written by MarshalText.
func (l *LSN) UnmarshalText(b []byte) error {
	v, err := ParseLSN(string(b))
	if err != nil {
		return fmt.Errorf("position %q: %w", b, err)
	}
	*l = v
	return nil
}

// maxIdentifier is PostgreSQL's identifier length limit (NAMEDATALEN - 1).
const maxIdentifier = 63

// LogicalNames returns the name of a job's replication slot, which is also
// its publication's: "denorm_" followed by the job name when the job name
// is made of lower-case ASCII letters, digits and underscores and the whole
// fits PostgreSQL's 63 bytes (slot names allow only [a-z0-9_]). Otherwise
// letters are lower-cased, every other character becomes "_", the name is
// cut to fit, and "_" plus 8
// hex digits of the job name's SHA-256 end it, so that jobs "Orders",
// "orders-eu" and "orders_eu" get different slots. Slot names are unique
// in the whole server, publication names in one database: two jobs of one
// name on two databases of one server collide (Stream then refuses the
// other database's slot).
func LogicalNames(job string) (string, error) {
	if job == "" {
		return "", errors.New("logical replication: the job has no name")
	}
	var b strings.Builder
	b.WriteString("denorm_")
	for _, r := range job {
		r = unicode.ToLower(r)
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "denorm_"+job && len(name) <= maxIdentifier {
		return name, nil
	}
	sum := sha256.Sum256([]byte(job))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(name) > maxIdentifier-len(suffix) {
		name = name[:maxIdentifier-len(suffix)]
	}
	return name + suffix, nil
}

// Logical is one sync job's change capture on a source database: its
// replication slot and publication (both named Name). It holds no
// connection: each call connects for itself, so a Logical may be used from
// any goroutine.
type Logical struct {
	src *Source
	// Job is the sync job's name; Name its slot's and publication's.
	Job, Name string
}

// Logical describes job's change capture on the source. It does not
// connect.
func (s *Source) Logical(job string) (*Logical, error) {
	name, err := LogicalNames(job)
	if err != nil {
		return nil, err
	}
	return &Logical{src: s, Job: job, Name: name}, nil
}

// connect opens an ordinary connection (catalog queries, publication).
func (l *Logical) connect(ctx context.Context) (*pgx.Conn, error) { return l.src.dial(ctx) }

// connectReplication opens a replication connection (replication=database):
// the server checks there the REPLICATION attribute, pg_hba.conf's
// replication entries and max_wal_senders.
func (l *Logical) connectReplication(ctx context.Context) (*pgconn.PgConn, error) {
	cfg := l.src.cfg.Config.Copy()
	// No read timeout: a stream is silent while no change comes, and
	// creating a slot waits for running transactions to end.
	cfg.DialFunc = l.src.unguarded
	cfg.RuntimeParams["replication"] = "database"
	// pgoutput prints values with the walsender's settings: make times
	// unambiguous whatever the server's defaults.
	cfg.RuntimeParams["TimeZone"] = "UTC"
	cfg.RuntimeParams["DateStyle"] = "ISO, YMD"
	cfg.RuntimeParams["IntervalStyle"] = "postgres"
	cfg.RuntimeParams["extra_float_digits"] = "1"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, l.explain(fmt.Errorf("open a replication connection: %w", l.src.redact(err)))
	}
	return conn, nil
}

// checkServer refuses servers that cannot decode logically: before 13, or
// wal_level below logical.
func checkServer(ctx context.Context, conn *pgx.Conn) error {
	var version int
	var level string
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int, current_setting('wal_level')`).Scan(&version, &level); err != nil {
		return fmt.Errorf("read server settings: %w", err)
	}
	if version < 130000 {
		return fmt.Errorf("logical replication: PostgreSQL %d.%d is too old: denorm's change capture needs 13 or later (use --method diff)", version/10000, version%10000)
	}
	if level != "logical" {
		return &WALLevelError{Level: level}
	}
	return nil
}

// CheckReplication opens a replication connection and closes it: a user
// without the REPLICATION attribute (or a server whose pg_hba.conf has no
// replication line for it) is refused here, as Setup would refuse it,
// before a caller makes anything for the job.
func (l *Logical) CheckReplication(ctx context.Context) error {
	conn, err := l.connectReplication(ctx)
	if err != nil {
		return err
	}
	return conn.Close(context.WithoutCancel(ctx))
}

// CheckServer checks that the server can stream changes to the job: a
// version with pgoutput's features, and wal_level = logical (a
// *WALLevelError otherwise).
func (l *Logical) CheckServer(ctx context.Context) error {
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return checkServer(ctx, conn)
}

// SlotSnapshot is what Setup returns: the new slot's consistent point and
// the snapshot it exported. The snapshot sees exactly the transactions
// committed before Consistent; the slot streams exactly those committed
// after it. Open read snapshots adopting Snapshot (Source.Adopt) before calling
// Release; they stay valid after it.
type SlotSnapshot struct {
	// Snapshot is the exported snapshot's id, for SET TRANSACTION SNAPSHOT.
	Snapshot string
	// Consistent is the slot's consistent point: stream from here.
	Consistent LSN
	// conn is the replication connection that created the slot: the
	// exported snapshot lives as long as it stays idle and open.
	conn *pgconn.PgConn
}

// Release closes the replication connection that keeps the exported
// snapshot alive: call it once every reader adopted the snapshot (or the
// initial copy is done). Safe to call more than once.
func (s *SlotSnapshot) Release(ctx context.Context) error {
	if s.conn == nil {
		return nil
	}
	c := s.conn
	s.conn = nil
	return c.Close(ctx)
}

// publish is the publication's option list: every kind of change, and
// partitions' changes under their partitioned table's name.
const publish = "publish = 'insert, update, delete, truncate', publish_via_partition_root = true"

// Setup prepares the job's change capture on tables ("schema.table"; "t"
// means "public.t"): it creates the publication (or sets an existing one
// of that name to exactly these tables), then creates the slot, exporting
// a snapshot. The publication comes first: pgoutput reads its membership
// as of each change, so changes after the slot's consistent point are all
// published.
//
// It refuses, before creating anything, a server without wal_level =
// logical (*WALLevelError), tables whose updates and deletes PostgreSQL
// would refuse once published (*ReplicaIdentityError), an existing slot
// (*SlotExistsError: continue with Stream, or Drop to start over), and a
// user without the REPLICATION attribute (*PrivilegeError).
//
// Creating a slot waits until every transaction running on the server has
// ended. The caller must Release the result.
func (l *Logical) Setup(ctx context.Context, tables []string) (*SlotSnapshot, error) {
	return l.SetupWaiting(ctx, tables, nil)
}

// slotWaitFirst and slotWaitEvery space what SetupWaiting says while the
// slot waits for open transactions.
var slotWaitFirst, slotWaitEvery = 2 * time.Second, 15 * time.Second

// SetupWaiting is Setup, telling waiting (when set) while the slot's
// creation waits for transactions open on the server to end (PostgreSQL
// starts a slot at a point no transaction spans): how many, the oldest's
// age and process.
func (l *Logical) SetupWaiting(ctx context.Context, tables []string, waiting func(string)) (*SlotSnapshot, error) {
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := checkServer(ctx, conn); err != nil {
		return nil, err
	}
	ids, err := ReadReplicaIdentity(ctx, conn, tables)
	if err != nil {
		return nil, err
	}
	var unusable []ReplicaIdentity
	for _, id := range ids {
		if !id.Usable() {
			unusable = append(unusable, id)
		}
	}
	if len(unusable) > 0 {
		return nil, &ReplicaIdentityError{Tables: unusable,
			Why: "no replica identity (no primary key, or REPLICA IDENTITY NOTHING), and PostgreSQL refuses UPDATE and DELETE on a table published without one"}
	}
	if st, err := l.status(ctx, conn); st != nil {
		return nil, &SlotExistsError{Job: l.Job, Slot: l.Name}
	} else if !errors.As(err, new(*SlotMissingError)) {
		return nil, err
	}
	// Connect for replication before creating anything: a missing
	// privilege fails here, leaving nothing behind.
	rconn, err := l.connectReplication(ctx)
	if err != nil {
		return nil, err
	}
	created, err := l.ensurePublication(ctx, conn, ids)
	if err != nil {
		rconn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	stopWatch := l.watchOpenTransactions(ctx, conn, waiting)
	res, err := pglogrepl.CreateReplicationSlot(ctx, rconn, l.Name, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT"})
	stopWatch()
	if err == nil && res.SnapshotName == "" {
		err = errors.New("the server exported no snapshot")
	}
	var lsn LSN
	if err == nil {
		lsn, err = ParseLSN(res.ConsistentPoint)
	}
	if err != nil {
		rconn.Close(context.WithoutCancel(ctx))
		if created {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "DROP PUBLICATION IF EXISTS "+pgx.Identifier{l.Name}.Sanitize())
		}
		return nil, l.explain(fmt.Errorf("create replication slot %s: %w", l.Name, err))
	}
	return &SlotSnapshot{Snapshot: res.SnapshotName, Consistent: lsn, conn: rconn}, nil
}

// Publish sets the job's publication to exactly tables, as Setup makes
// it, for a job whose mapping changed to read other tables: changes of a
// table added are streamed from the publication's change on. Tables
// without a usable replica identity are refused as Setup refuses them.
func (l *Logical) Publish(ctx context.Context, tables []string) error {
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ids, err := ReadReplicaIdentity(ctx, conn, tables)
	if err != nil {
		return err
	}
	var unusable []ReplicaIdentity
	for _, id := range ids {
		if !id.Usable() {
			unusable = append(unusable, id)
		}
	}
	if len(unusable) > 0 {
		return &ReplicaIdentityError{Tables: unusable,
			Why: "no replica identity (no primary key, or REPLICA IDENTITY NOTHING), and PostgreSQL refuses UPDATE and DELETE on a table published without one"}
	}
	_, err = l.ensurePublication(ctx, conn, ids)
	return err
}

// watchOpenTransactions tells waiting, slotWaitFirst after it is called
// and then every slotWaitEvery until the returned stop, what open
// transactions the slot's creation waits for (read on conn, which nothing
// else uses meanwhile). stop returns once conn is free again.
func (l *Logical) watchOpenTransactions(ctx context.Context, conn *pgx.Conn, waiting func(string)) (stop func()) {
	if waiting == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(slotWaitFirst)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var (
				n      int
				oldest time.Duration
				pid    int
			)
			err := conn.QueryRow(ctx, `SELECT count(*), COALESCE(EXTRACT(epoch FROM now() - min(xact_start)) * 1000, 0)::bigint,
				COALESCE((array_agg(pid ORDER BY xact_start))[1], 0)
				FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()`).Scan(&n, (*msDuration)(&oldest), &pid)
			if err == nil && n > 0 {
				waiting(fmt.Sprintf("creating replication slot %s waits for %d open transaction(s) on the source to end (the oldest began %s ago, server process %d): a slot starts at a point no transaction spans",
					l.Name, n, oldest.Round(time.Second), pid))
			}
			t.Reset(slotWaitEvery)
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// msDuration scans a number of milliseconds into a time.Duration.
type msDuration time.Duration

func (d *msDuration) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*d = msDuration(time.Duration(v) * time.Millisecond)
		return nil
	}
	return fmt.Errorf("milliseconds: unexpected %T", src)
}

// ensurePublication creates the job's publication for exactly the tables,
// or sets an existing one to them. It reports whether it created it.
func (l *Logical) ensurePublication(ctx context.Context, conn *pgx.Conn, ids []ReplicaIdentity) (bool, error) {
	want := make([]string, 0, len(ids))
	quoted := make([]string, 0, len(ids))
	for _, id := range ids {
		if slices.Contains(want, id.Table) {
			continue
		}
		want = append(want, id.Table)
		quoted = append(quoted, id.published)
	}
	slices.Sort(want)
	var (
		options bool
		have    []string
	)
	err := conn.QueryRow(ctx, `
SELECT p.pubinsert AND p.pubupdate AND p.pubdelete AND p.pubtruncate AND p.pubviaroot,
       coalesce((SELECT array_agg(quote_ident(n.nspname) || '.' || quote_ident(c.relname))
                 FROM pg_publication_rel r
                 JOIN pg_class c ON c.oid = r.prrelid
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE r.prpubid = p.oid), '{}')
FROM pg_publication p WHERE p.pubname = $1`, l.Name).Scan(&options, &have)
	// quote_ident also quotes keywords, which QualifiedTableName leaves
	// bare: compare the names as both spell them.
	for i, h := range have {
		if schema, name, err := mappings.SplitQualifiedName(h); err == nil {
			have[i] = mappings.QualifiedTableName(schema, name)
		}
	}
	slices.Sort(have)
	name := pgx.Identifier{l.Name}.Sanitize()
	list := strings.Join(quoted, ", ")
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := conn.Exec(ctx, "CREATE PUBLICATION "+name+" FOR TABLE "+list+" WITH ("+publish+")"); err != nil {
			return false, l.explain(fmt.Errorf("create publication %s: %w", l.Name, err))
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read publication %s: %w", l.Name, err)
	case options && slices.Equal(have, want):
		return false, nil
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "ALTER PUBLICATION "+name+" SET TABLE "+list); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "ALTER PUBLICATION "+name+" SET ("+publish+")")
		return err
	})
	if err != nil {
		return false, l.explain(fmt.Errorf("update publication %s: %w", l.Name, err))
	}
	return false, nil
}

// Drop removes the job's slot and publication; either may be missing
// already. A slot in use by a running stream for 2 s more is not dropped
// (*SlotBusyError): stop that sync first.
func (l *Logical) Drop(ctx context.Context) error {
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := l.idleStatus(ctx, conn); err != nil && !errors.As(err, new(*SlotMissingError)) {
		return err
	}
	_, err = conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, l.Name)
	if err != nil {
		return l.explain(fmt.Errorf("drop replication slot %s: %w", l.Name, err))
	}
	if _, err := conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pgx.Identifier{l.Name}.Sanitize()); err != nil {
		return l.explain(fmt.Errorf("drop publication %s: %w", l.Name, err))
	}
	return nil
}

// SlotStatus is a slot's state as pg_replication_slots shows it, with the
// server's current WAL position: what `denorm status` shows and lag uses.
type SlotStatus struct {
	Slot     string
	Database string
	Plugin   string
	// Active tells whether a stream is reading the slot now (ActivePID).
	Active    bool
	ActivePID int
	// Confirmed is confirmed_flush_lsn: the position the last stream
	// confirmed. A new stream starts there.
	Confirmed LSN
	// Restart is restart_lsn: the oldest WAL the slot keeps on the server.
	Restart LSN
	// WALStatus is "reserved", "extended", "unreserved" (will be lost at
	// the next checkpoint unless read) or "lost" (invalidated).
	WALStatus string
	// Conflicting is PostgreSQL 16's flag for a slot invalidated by
	// recovery conflicts (on a standby); false before 16.
	Conflicting bool
	// Current is the server's WAL position now (the replay position on a
	// standby), and LagBytes is Current - Confirmed: how much WAL the job
	// has not confirmed yet (0 when caught up).
	Current  LSN
	LagBytes int64
	// ReadAt is when the status was read (the source's clock).
	ReadAt time.Time
	// db is the database the status was read from.
	db string
}

// Status reads the job's slot. A missing slot is a *SlotMissingError; an
// invalidated one returns its status and a *SlotInvalidError.
func (l *Logical) Status(ctx context.Context) (*SlotStatus, error) {
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	st, err := l.status(ctx, conn)
	if err != nil {
		return st, err
	}
	return st, l.usable(st)
}

// status reads the slot: nil and *SlotMissingError when there is none.
func (l *Logical) status(ctx context.Context, conn *pgx.Conn) (*SlotStatus, error) {
	conflicting := "false"
	var version int
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return nil, fmt.Errorf("read server version: %w", err)
	}
	if version >= 160000 {
		conflicting = "coalesce(s.conflicting, false)"
	}
	var (
		st                            SlotStatus
		pid                           *int32
		confirmed, restart, walStatus *string
		current                       string
	)
	err := conn.QueryRow(ctx, `
WITH now AS (
  SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END AS lsn
)
SELECT s.slot_name, coalesce(s.database, ''), coalesce(s.plugin, ''), s.active, s.active_pid,
       s.confirmed_flush_lsn::text, s.restart_lsn::text, s.wal_status, `+conflicting+`,
       now.lsn::text, statement_timestamp(), current_database()
FROM pg_replication_slots s, now
WHERE s.slot_name = $1`, l.Name).Scan(&st.Slot, &st.Database, &st.Plugin, &st.Active, &pid,
		&confirmed, &restart, &walStatus, &st.Conflicting, &current, &st.ReadAt, &st.db)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &SlotMissingError{Job: l.Job, Name: l.Name}
	}
	if err != nil {
		return nil, fmt.Errorf("read replication slot %s: %w", l.Name, err)
	}
	if pid != nil {
		st.ActivePID = int(*pid)
	}
	if walStatus != nil {
		st.WALStatus = *walStatus
	}
	for _, f := range []struct {
		s *string
		l *LSN
	}{{confirmed, &st.Confirmed}, {restart, &st.Restart}, {&current, &st.Current}} {
		if f.s == nil {
			continue
		}
		if *f.l, err = ParseLSN(*f.s); err != nil {
			return nil, fmt.Errorf("read replication slot %s: %w", l.Name, err)
		}
	}
	if st.Current > st.Confirmed {
		st.LagBytes = int64(st.Current - st.Confirmed)
	}
	return &st, nil
}

// idleStatus reads the slot; when a stream reads it, it waits up to 2 s
// for it to let go: a stream that just ended (a process killed, a
// connection lost) may hold it until its server process notices.
func (l *Logical) idleStatus(ctx context.Context, conn *pgx.Conn) (*SlotStatus, error) {
	st, err := l.status(ctx, conn)
	for wait := 0; err == nil && st.Active && wait < 20; wait++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		st, err = l.status(ctx, conn)
	}
	return st, err
}

// usable reports why a slot that exists cannot be streamed from: it was
// invalidated, belongs to another database, or another plugin.
func (l *Logical) usable(st *SlotStatus) error {
	if st.WALStatus == "lost" || st.Conflicting {
		return &SlotInvalidError{Job: l.Job, Slot: l.Name, WALStatus: st.WALStatus, Conflicting: st.Conflicting}
	}
	if st.Database != st.db || st.Plugin != "pgoutput" {
		return fmt.Errorf("replication slot %s belongs to database %q with plugin %q, not to this job on database %q: "+
			"another job of the same name uses it; give this job another name", l.Name, st.Database, st.Plugin, st.db)
	}
	return nil
}

// CurrentWAL returns the end of the WAL the server has written so far
// (pg_current_wal_insert_lsn: with asynchronous commit, the WAL of
// transactions already visible may not be flushed yet, and
// pg_current_wal_lsn may be behind them). A stream has delivered
// everything committed before that position once it delivers a Progress
// at or past it: a second or so after the server flushed the WAL, up to
// ~15 s on an idle server whose last WAL belongs to a transaction still
// open.
func (l *Logical) CurrentWAL(ctx context.Context) (LSN, error) {
	conn, err := l.connect(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var s string
	if err := conn.QueryRow(ctx, `SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text`).Scan(&s); err != nil {
		return 0, fmt.Errorf("read the current WAL position: %w", err)
	}
	return ParseLSN(s)
}

// CommittedWAL returns a position past the commit of every transaction
// committed so far: once a stream delivers a Progress at or past it,
// every change visible now was delivered. It is the WAL flush position
// (the stream reads flushed WAL only), read once the commits made before
// the call are flushed: a commit with synchronous_commit = off is visible
// before its WAL is flushed, and the WAL writer flushes it within three
// times wal_writer_delay (longer on a busy machine), so when the WAL
// inserted so far is not all flushed the position is polled until it is,
// for at most ten times that delay. Unlike CurrentWAL it does not wait
// without bound for WAL that no commit needs flushed (the pruning a read
// can log, which an idle server leaves unflushed for up to 15 s).
func (l *Logical) CommittedWAL(ctx context.Context) (LSN, error) { return l.src.CommittedWAL(ctx) }

// CommittedWAL is Logical.CommittedWAL without a slot: a position past the
// commit of every transaction committed so far (verify waits for a sync
// job to pass it before rechecking a difference).
func (s *Source) CommittedWAL(ctx context.Context) (LSN, error) {
	conn, err := s.dial(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	read := func() (insert, flush LSN, delay time.Duration, err error) {
		var i, f string
		var ms int
		err = conn.QueryRow(ctx, `SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END::text,
       CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_flush_lsn() END::text,
       setting::int FROM pg_settings WHERE name = 'wal_writer_delay'`).Scan(&i, &f, &ms)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("read the WAL positions: %w", err)
		}
		if insert, err = ParseLSN(i); err == nil {
			flush, err = ParseLSN(f)
		}
		return insert, flush, time.Duration(ms) * time.Millisecond, err
	}
	insert, flush, delay, err := read()
	if err != nil || flush >= insert {
		return flush, err
	}
	// PostgreSQL flushes an asynchronous commit within three times
	// wal_writer_delay, later when the WAL writer waits for a CPU: the
	// flush position is polled until it passes what was inserted at the
	// call, for up to ten times the delay (WAL that no commit needs may
	// stay unflushed longer; the commits are flushed by then).
	deadline := time.Now().Add(10 * delay)
	for flush < insert && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(max(delay/4, 10*time.Millisecond)):
		}
		if _, flush, _, err = read(); err != nil {
			return 0, err
		}
	}
	return flush, nil
}

// ReplicaIdentity reads the replica identity of tables (see
// ReadReplicaIdentity).
func (l *Logical) ReplicaIdentity(ctx context.Context, tables []string) ([]ReplicaIdentity, error) {
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return ReadReplicaIdentity(ctx, conn, tables)
}

// qualify splits a qualified name (mappings.QualifiedTableName; "t"
// means "public.t"). A name it cannot read is taken as a table of that
// name in public, which no catalog query finds.
func qualify(table string) (schema, name string) {
	schema, name, err := mappings.SplitQualifiedName(table)
	if err != nil {
		return "public", table
	}
	return schema, name
}
