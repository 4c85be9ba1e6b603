package extract

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
)

var logicalSeq atomic.Int64

// logicalJob gives a test a database of its own holding schema, a job name
// unique on the server (slots are server-wide), and a connection. The job's
// slot and publication are dropped when the test ends, before its database.
func logicalJob(t *testing.T, schema string) (*Logical, *pgx.Conn) {
	t.Helper()
	url := testenv.PostgresDB(t)
	if schema != "" {
		testenv.Exec(t, url, schema)
	}
	l, err := logical(url, fmt.Sprintf("test_%d_%d", os.Getpid(), logicalSeq.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := l.Drop(ctx); err != nil {
			t.Errorf("drop: %v", err)
		}
	})
	return l, connect(t, url)
}

func logical(url, job string) (*Logical, error) {
	src, err := ParseSource(url)
	if err != nil {
		return nil, err
	}
	return src.Logical(job)
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func execSQL(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// setup creates the job's publication and slot for tables and releases the
// exported snapshot at once.
func setup(t *testing.T, l *Logical, tables ...string) LSN {
	t.Helper()
	ctx := context.Background()
	ss, err := l.Setup(ctx, tables)
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	if err := ss.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return ss.Consistent
}

func startStream(t *testing.T, l *Logical, from LSN, opts StreamOptions) *ChangeStream {
	t.Helper()
	s, err := l.Stream(context.Background(), from, opts)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readCaughtUp reads s until it has delivered everything committed before
// the server's current WAL position (a Progress at or past it), and
// returns what it read, Progress messages left out.
func readCaughtUp(t *testing.T, l *Logical, s *ChangeStream) []*Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target, err := l.CurrentWAL(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*Change
	for {
		c, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("next (waiting for %s): %v", target, err)
		}
		if c.Op == OpProgress {
			if c.LSN >= target {
				return out
			}
			continue
		}
		out = append(out, c)
	}
}

// text returns a row's values as strings: NULL, UNCHANGED and ABSENT for
// the other kinds.
func text(vals []Value) []string {
	if vals == nil {
		return nil
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = [...]string{"NULL", v.Text, "UNCHANGED", "ABSENT"}[v.Kind]
	}
	return out
}

func TestLogicalNames(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9_]{1,63}$`)
	long := strings.Repeat("x", 100)
	cases := []struct{ job, want string }{
		{"orders", "denorm_orders"},
		{"orders_eu_2", "denorm_orders_eu_2"},
		{"Orders", ""},
		{"orders-eu", ""},
		{"orders eu", ""},
		{"commandes_été", ""},
		{strings.Repeat("a", 56), "denorm_" + strings.Repeat("a", 56)},
		{strings.Repeat("a", 57), ""},
		{long, ""},
		{long + "y", ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got, err := LogicalNames(c.job)
		if err != nil {
			t.Fatalf("%q: %v", c.job, err)
		}
		if !valid.MatchString(got) {
			t.Errorf("%q: name %q is not a valid slot name", c.job, got)
		}
		if c.want != "" && got != c.want {
			t.Errorf("%q: name %q, want %q", c.job, got, c.want)
		}
		if c.want == "" && !regexp.MustCompile(`_[0-9a-f]{8}$`).MatchString(got) {
			t.Errorf("%q: name %q has no hash suffix", c.job, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("jobs %q and %q share the name %q", other, c.job, got)
		}
		seen[got] = c.job
	}
	if got, _ := LogicalNames("Orders"); !strings.HasPrefix(got, "denorm_orders_") {
		t.Errorf("Orders: %q, want the lower-cased name and a hash", got)
	}
	if _, err := LogicalNames(""); err == nil {
		t.Error("an empty job name was accepted")
	}
	if l, err := ParseLSN("16/B374D848"); err != nil || l.String() != "16/B374D848" || l != 0x16B374D848 {
		t.Errorf("ParseLSN: %v %v", l, err)
	}
}

// items reads table item as id -> v.
func items(t *testing.T, q Querier) map[string]int {
	t.Helper()
	rows, err := q.Query(context.Background(), "SELECT id, v FROM item")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	var id, v int
	_, err = pgx.ForEachRow(rows, []any{&id, &v}, func() error {
		out[fmt.Sprint(id)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLogicalSnapshotJoinsStream: a writer commits transactions before,
// during and after Setup. The exported snapshot plus the stream from the
// consistent point give exactly the final table: no transaction is in
// both (an insert of a row the snapshot has, an increment applied twice),
// none is in neither, and writes made while the snapshot is held are not
// in it.
func TestLogicalSnapshotJoinsStream(t *testing.T) {
	t.Parallel()
	l, conn := logicalJob(t, `
CREATE TABLE item (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO item SELECT g, 0 FROM generate_series(1, 100) g;`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	writer := connect(t, l.src.cfg.ConnString())
	var (
		committed atomic.Int64 // transactions the writer committed
		stop      = make(chan struct{})
		werr      = make(chan error, 1)
	)
	go func() {
		// Each transaction inserts row i, increments one of rows 1-100 and
		// sometimes deletes a row it inserted before.
		for i := 101; ; i++ {
			select {
			case <-stop:
				werr <- nil
				return
			default:
			}
			sql := fmt.Sprintf("INSERT INTO item VALUES (%d, 0); UPDATE item SET v = v + 1 WHERE id = %d", i, i%100+1)
			if i%7 == 0 {
				sql += fmt.Sprintf("; DELETE FROM item WHERE id = %d", i-3)
			}
			if _, err := writer.Exec(ctx, sql); err != nil {
				werr <- err
				return
			}
			committed.Add(1)
		}
	}()
	waitFor := func(n int64) {
		for committed.Load() < n {
			select {
			case err := <-werr:
				t.Fatalf("writer: %v", err)
			case <-time.After(time.Millisecond):
			}
		}
	}
	waitFor(50)
	ss, err := l.Setup(ctx, []string{"item"})
	if err != nil {
		t.Fatal(err)
	}
	afterSetup := committed.Load()
	waitFor(afterSetup + 50)
	snap, err := l.src.Adopt(ctx, ss.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	state := items(t, snap)
	if err := snap.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ss.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Rows the writer inserted after Setup returned are not in the snapshot.
	for i := 101 + afterSetup; i < 101+afterSetup+50; i++ {
		if _, ok := state[fmt.Sprint(i)]; ok {
			t.Fatalf("row %d, written after Setup, is in the exported snapshot", i)
		}
	}
	waitFor(committed.Load() + 50)
	close(stop)
	if err := <-werr; err != nil {
		t.Fatalf("writer: %v", err)
	}

	s := startStream(t, l, ss.Consistent, StreamOptions{})
	changes := readCaughtUp(t, l, s)
	txs, inserts := 0, 0
	for _, c := range changes {
		switch c.Op {
		case OpCommit:
			txs++
		case OpInsert:
			inserts++
			id, _ := c.NewValue("id")
			if _, dup := state[id.Text]; dup {
				t.Fatalf("insert of row %s, which the snapshot has: overlap", id.Text)
			}
			state[id.Text] = 0
		case OpUpdate:
			id, _ := c.NewValue("id")
			v, _ := c.NewValue("v")
			var nv int
			fmt.Sscan(v.Text, &nv)
			if old, ok := state[id.Text]; !ok || old != nv-1 {
				t.Fatalf("update of row %s to %d, but the snapshot plus the stream so far had %d (present: %v): gap or overlap", id.Text, nv, old, ok)
			}
			state[id.Text] = nv
		case OpDelete:
			id, _ := c.OldValue("id")
			if _, ok := state[id.Text]; !ok {
				t.Fatalf("delete of row %s, which is not there: gap or overlap", id.Text)
			}
			delete(state, id.Text)
		}
	}
	if txs == 0 || int64(txs) >= committed.Load() {
		t.Fatalf("%d transactions streamed of %d committed: the test did not split them", txs, committed.Load())
	}
	if d := cmp.Diff(items(t, conn), state); d != "" {
		t.Fatalf("snapshot + stream differ from the table (-table +rebuilt):\n%s", d)
	}
	t.Logf("%d transactions before the consistent point (in the snapshot), %d streamed (%d inserts)",
		committed.Load()-int64(txs), txs, inserts)
}

// TestLogicalDecode: inserts, updates, deletes and TRUNCATE arrive with
// their values (NULLs, non-ASCII text, arrays, JSON, an enum), unchanged
// TOAST values are marked, and old rows follow the replica identity: key
// only under DEFAULT (and none when the key did not change), whole under
// FULL. An unpublished table's changes do not appear.
func TestLogicalDecode(t *testing.T) {
	t.Parallel()
	l, conn := logicalJob(t, `
CREATE TYPE mood AS ENUM ('sad', 'happy');
CREATE TABLE val (id int PRIMARY KEY, name text, price numeric(10,2), at timestamptz, ok boolean,
                  tags text[], doc jsonb, m mood, big text);
CREATE TABLE val_full (id int PRIMARY KEY, grp int, big text);
ALTER TABLE val_full REPLICA IDENTITY FULL;
CREATE TABLE other (id int PRIMARY KEY);
CREATE TABLE pay (id int, k int, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE pay_1 PARTITION OF pay FOR VALUES IN (1);
CREATE TABLE pay_2 PARTITION OF pay FOR VALUES IN (2);`)
	ctx := context.Background()
	from := setup(t, l, "val", "val_full", "pay")
	s := startStream(t, l, from, StreamOptions{})
	var big string
	// Random hex does not compress: stored out of line (TOAST).
	if err := conn.QueryRow(ctx, "SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 3000)").Scan(&big); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	for _, sql := range []string{
		`INSERT INTO val VALUES (1, 'Zoë 日本語 🎉 "q" \ x', 12.5, '2024-01-02 03:04:05+02', true, '{a,"b c",NULL}', '{"k": [1, "x"]}', 'happy', NULL)`,
		`INSERT INTO val (id) VALUES (2)`,
		`INSERT INTO other VALUES (1)`,
		`INSERT INTO val (id, name, big) VALUES (3, 'wide', '` + big + `')`,
		`UPDATE val SET name = 'wider' WHERE id = 3`,
		`UPDATE val SET id = 4 WHERE id = 1`,
		`DELETE FROM val WHERE id = 2`,
		`INSERT INTO val_full VALUES (1, 10, '` + big + `')`,
		`UPDATE val_full SET grp = 20 WHERE id = 1`,
		`DELETE FROM val_full WHERE id = 1`,
		`TRUNCATE val, val_full`,
		`INSERT INTO pay VALUES (1, 1), (2, 2)`,
		`UPDATE pay SET k = 2 WHERE id = 1`,
		`TRUNCATE pay_1`, // a partition alone: not reported (a known limit)
		`TRUNCATE pay`,
	} {
		execSQL(t, conn, sql)
	}
	changes := readCaughtUp(t, l, s)

	type row struct {
		Op       string
		Table    string
		New, Old []string
		OldKind  OldKind
		Trunc    []string
	}
	var got []row
	rels := map[string]*Relation{}
	var xid uint32
	for _, c := range changes {
		switch c.Op {
		case OpBegin:
			if xid != 0 {
				t.Fatalf("begin inside a transaction")
			}
			xid = c.Xid
			if c.CommitTime.Before(before.Add(-time.Minute)) || c.CommitTime.After(time.Now().Add(time.Minute)) {
				t.Errorf("commit time %v is not now", c.CommitTime)
			}
			continue
		case OpCommit:
			if c.Xid != xid || c.EndLSN <= c.CommitLSN {
				t.Errorf("commit %d/%s-%s closing transaction %d", c.Xid, c.CommitLSN, c.EndLSN, xid)
			}
			xid = 0
			continue
		case OpRelation:
			rels[c.Rel.Table()] = c.Rel
			continue
		}
		if xid == 0 || c.Xid != xid {
			t.Errorf("%s outside its transaction", c.Op)
		}
		r := row{Op: c.Op.String(), New: text(c.New), Old: text(c.Old), OldKind: c.OldKind}
		if c.Rel != nil {
			r.Table = c.Rel.Table()
		}
		for _, tr := range c.Truncated {
			r.Trunc = append(r.Trunc, tr.Table())
		}
		got = append(got, r)
	}
	n := "NULL"
	want := []row{
		{Op: "insert", Table: "public.val", New: []string{"1", `Zoë 日本語 🎉 "q" \ x`, "12.50", "2024-01-02 01:04:05+00", "t", `{a,"b c",NULL}`, `{"k": [1, "x"]}`, "happy", n}},
		{Op: "insert", Table: "public.val", New: []string{"2", n, n, n, n, n, n, n, n}},
		{Op: "insert", Table: "public.val", New: []string{"3", "wide", n, n, n, n, n, n, big}},
		{Op: "update", Table: "public.val", New: []string{"3", "wider", n, n, n, n, n, n, "UNCHANGED"}},
		{Op: "update", Table: "public.val", New: []string{"4", `Zoë 日本語 🎉 "q" \ x`, "12.50", "2024-01-02 01:04:05+00", "t", `{a,"b c",NULL}`, `{"k": [1, "x"]}`, "happy", n},
			Old: []string{"1", "ABSENT", "ABSENT", "ABSENT", "ABSENT", "ABSENT", "ABSENT", "ABSENT", "ABSENT"}, OldKind: OldKey},
		{Op: "delete", Table: "public.val", Old: []string{"2", "ABSENT", "ABSENT", "ABSENT", "ABSENT", "ABSENT", "ABSENT", "ABSENT", "ABSENT"}, OldKind: OldKey},
		{Op: "insert", Table: "public.val_full", New: []string{"1", "10", big}},
		{Op: "update", Table: "public.val_full", New: []string{"1", "20", "UNCHANGED"}, Old: []string{"1", "10", big}, OldKind: OldFull},
		{Op: "delete", Table: "public.val_full", Old: []string{"1", "20", big}, OldKind: OldFull},
		{Op: "truncate", Trunc: []string{"public.val", "public.val_full"}},
		// Partitions' rows under the partitioned table's name; a row moved
		// to another partition is a delete and an insert.
		{Op: "insert", Table: "public.pay", New: []string{"1", "1"}},
		{Op: "insert", Table: "public.pay", New: []string{"2", "2"}},
		{Op: "delete", Table: "public.pay", Old: []string{"1", "1"}, OldKind: OldKey},
		{Op: "insert", Table: "public.pay", New: []string{"1", "2"}},
		{Op: "truncate", Trunc: []string{"public.pay"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("changes (-want +got):\n%s", d)
	}

	type col struct {
		Name, Type string
		Mod        int32
		Key        bool
	}
	cols := func(r *Relation) []col {
		var out []col
		for _, c := range r.Columns {
			out = append(out, col{c.Name, c.TypeName, c.TypeMod, c.Key})
		}
		return out
	}
	// pgoutput describes the partitions too, though their rows arrive
	// under the partitioned table.
	if d := cmp.Diff([]string{"public.pay", "public.pay_1", "public.pay_2", "public.val", "public.val_full"},
		slices.Sorted(maps.Keys(rels))); d != "" {
		t.Fatalf("relations described (-want +got):\n%s", d)
	}
	wantVal := []col{{"id", "int4", -1, true}, {"name", "text", -1, false}, {"price", "numeric", 10<<16 | 2 + 4, false},
		{"at", "timestamptz", -1, false}, {"ok", "bool", -1, false}, {"tags", "_text", -1, false}, {"doc", "jsonb", -1, false},
		{"m", "mood", -1, false}, {"big", "text", -1, false}}
	if d := cmp.Diff(wantVal, cols(rels["public.val"])); d != "" {
		t.Errorf("relation val (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]col{{"id", "int4", -1, true}, {"grp", "int4", -1, true}, {"big", "text", -1, true}}, cols(rels["public.val_full"])); d != "" {
		t.Errorf("relation val_full (-want +got):\n%s", d)
	}
	if r := rels["public.val"]; r.Identity != "default" || rels["public.val_full"].Identity != "full" {
		t.Errorf("identities %q %q", r.Identity, rels["public.val_full"].Identity)
	}
	// The catalog the mapping is checked against agrees with the stream.
	cat, err := ReadCatalog(ctx, conn, []string{"public.val", "public.val_full", "public.pay"})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range rels {
		if cat.Table(name) == nil {
			continue
		}
		if ch := r.Changes(cat.Table(name), nil); len(ch) > 0 {
			t.Errorf("%s: the stream's description differs from the catalog: %v", name, ch)
		}
	}
}

// TestLogicalBigTransaction: a transaction of 200,000 rows streams through
// a buffer of 64 changes: while the consumer does not pull, the reader
// holds at most the buffer (and the change it is waiting to hand over),
// and every row then arrives, in order, between Begin and Commit.
func TestLogicalBigTransaction(t *testing.T) {
	t.Parallel()
	const rows, buffer = 200_000, 64
	l, conn := logicalJob(t, `CREATE TABLE big (id int PRIMARY KEY, v text)`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	from := setup(t, l, "big")
	s := startStream(t, l, from, StreamOptions{Buffer: buffer})
	execSQL(t, conn, fmt.Sprintf("INSERT INTO big SELECT g, 'row ' || g FROM generate_series(1, %d) g", rows))
	end, err := l.CurrentWAL(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var consumed int64
	next := func() *Change {
		c, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		consumed++
		if held := s.decoded.Load() - consumed; held > buffer+1 {
			t.Fatalf("the stream holds %d changes, more than its buffer of %d", held, buffer)
		}
		return c
	}
	for c := next(); c.Op != OpInsert; c = next() {
	}
	// Stop pulling: the reader fills the buffer, then waits.
	deadline := time.Now().Add(30 * time.Second)
	for s.decoded.Load() < consumed+buffer && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if held := s.decoded.Load() - consumed; held < buffer || held > buffer+1 {
		t.Fatalf("while the consumer paused, the stream decoded %d changes past it (want the buffer, %d)", held, buffer)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("paused: %d changes held, heap in use %.1f MiB", s.decoded.Load()-consumed, float64(ms.HeapInuse)/(1<<20))

	want := 2 // the one read above
	start := time.Now()
	for {
		c := next()
		if c.Op == OpCommit {
			break
		}
		if c.Op != OpInsert {
			t.Fatalf("%s inside the transaction", c.Op)
		}
		if id, _ := c.NewValue("id"); id.Text != fmt.Sprint(want) {
			t.Fatalf("row %s arrived where row %d was due", id.Text, want)
		}
		want++
	}
	if want-1 != rows {
		t.Fatalf("%d rows streamed, want %d", want-1, rows)
	}
	t.Logf("%d rows read in %v (%.0f rows/s)", rows, time.Since(start).Round(time.Millisecond), float64(rows)/time.Since(start).Seconds())
	for c := next(); c.Op != OpProgress || c.LSN < end; c = next() {
		if c.Op != OpProgress {
			t.Fatalf("unexpected %s after the transaction", c.Op)
		}
	}
}

// TestLogicalCloseBlocked: Close ends a stream whose reader waits for the
// consumer in the middle of a transaction, and returns once the slot is
// free; nothing was confirmed, so the next stream delivers the whole
// transaction.
func TestLogicalCloseBlocked(t *testing.T) {
	t.Parallel()
	l, conn := logicalJob(t, `CREATE TABLE t (id int PRIMARY KEY)`)
	ctx := context.Background()
	from := setup(t, l, "t")
	s := startStream(t, l, from, StreamOptions{Buffer: 1})
	execSQL(t, conn, "INSERT INTO t SELECT generate_series(1, 1000)")
	for c, err := s.Next(ctx); c == nil || c.Op != OpBegin; c, err = s.Next(ctx) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for s.decoded.Load() < 4 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	if c, err := s.Next(ctx); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("next after Close: %v %v, want ErrStreamClosed", c, err)
	}
	// Close returns once the server let go of the slot.
	st, err := l.Status(ctx)
	if err != nil || st.Active {
		t.Fatalf("status right after Close: %+v %v, want the slot free", st, err)
	}
	if st.Confirmed != from {
		t.Fatalf("slot at %s after Close, want %s (nothing confirmed)", st.Confirmed, from)
	}
	inserts := 0
	for _, c := range readCaughtUp(t, l, startStream(t, l, 0, StreamOptions{})) {
		if c.Op == OpInsert {
			inserts++
		}
	}
	if inserts != 1000 {
		t.Fatalf("%d inserts replayed, want 1000", inserts)
	}
}

// waitSlot polls the slot's status until ok accepts it.
func waitSlot(t *testing.T, l *Logical, what string, ok func(*SlotStatus) bool) *SlotStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := l.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot never got %s: %+v", what, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLogicalConfirm: the slot's confirmed position follows Confirm and
// nothing else (not the delivered transactions, not the keepalives), and a
// new stream replays exactly the transactions after it.
func TestLogicalConfirm(t *testing.T) {
	t.Parallel()
	l, conn := logicalJob(t, `CREATE TABLE t (id int PRIMARY KEY)`)
	from := setup(t, l, "t")
	const interval = 50 * time.Millisecond
	s := startStream(t, l, from, StreamOptions{StatusInterval: interval})
	for i := 1; i <= 3; i++ {
		execSQL(t, conn, "INSERT INTO t VALUES ($1)", i)
	}
	var commits []*Change
	for _, c := range readCaughtUp(t, l, s) {
		if c.Op == OpCommit {
			commits = append(commits, c)
		}
	}
	if len(commits) != 3 {
		t.Fatalf("%d commits, want 3", len(commits))
	}
	if st := waitSlot(t, l, "a reader", func(st *SlotStatus) bool { return st.Active }); st.Confirmed != from {
		t.Fatalf("before any Confirm the slot is at %s, want the start %s", st.Confirmed, from)
	}
	first := commits[0].EndLSN
	s.Confirm(first)
	s.Confirm(first - 1) // lower: ignored
	if s.Confirmed() != first {
		t.Fatalf("Confirmed() = %s, want %s", s.Confirmed(), first)
	}
	waitSlot(t, l, "the confirmed position", func(st *SlotStatus) bool { return st.Confirmed == first })
	time.Sleep(10 * interval)
	st, err := l.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Confirmed != first || st.LagBytes <= 0 {
		t.Fatalf("after more status reports the slot is at %s (lag %d bytes), want %s", st.Confirmed, st.LagBytes, first)
	}

	// Another stream of the job while this one runs: refused.
	var busy *SlotBusyError
	if _, err := l.Stream(context.Background(), 0, StreamOptions{}); !errors.As(err, &busy) || busy.PID != st.ActivePID {
		t.Fatalf("a second stream: %v, want *SlotBusyError naming PID %d", err, st.ActivePID)
	}
	if err := l.Drop(context.Background()); !errors.As(err, &busy) {
		t.Fatalf("drop while streaming: %v, want *SlotBusyError", err)
	}
	s.Close()
	if _, err := s.Next(context.Background()); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("next after Close: %v", err)
	}
	waitSlot(t, l, "no reader", func(st *SlotStatus) bool { return !st.Active })

	// A new stream from the slot's position replays transactions 2 and 3.
	// It reports a Confirm at once, not at its next status report (10 s).
	s2 := startStream(t, l, 0, StreamOptions{})
	var ids []string
	for _, c := range readCaughtUp(t, l, s2) {
		if c.Op == OpInsert {
			v, _ := c.NewValue("id")
			ids = append(ids, v.Text)
		}
	}
	if d := cmp.Diff([]string{"2", "3"}, ids); d != "" {
		t.Fatalf("replayed rows (-want +got):\n%s", d)
	}
	last := commits[2].EndLSN
	confirmed := time.Now()
	s2.Confirm(last)
	waitSlot(t, l, "the last confirmed position", func(st *SlotStatus) bool { return st.Confirmed == last })
	if d := time.Since(confirmed); d > 5*time.Second {
		t.Errorf("the slot took %v to show a Confirm", d)
	}
	s2.Close()
	waitSlot(t, l, "no reader", func(st *SlotStatus) bool { return !st.Active && st.Confirmed == last })

	// Resuming from before the slot's position would skip changes: refused.
	var ahead *SlotAheadError
	if _, err := l.Stream(context.Background(), first, StreamOptions{}); !errors.As(err, &ahead) || ahead.Confirmed != last {
		t.Fatalf("stream from %s: %v, want *SlotAheadError", first, err)
	}
}

// TestLogicalSchemaChange: a dropped column and a changed type reach the
// stream as a new Relation, which differs from the catalog.
func TestLogicalSchemaChange(t *testing.T) {
	t.Parallel()
	l, conn := logicalJob(t, `CREATE TABLE s (id int PRIMARY KEY, a text, b int)`)
	ctx := context.Background()
	cat, err := ReadCatalog(ctx, conn, []string{"public.s"})
	if err != nil {
		t.Fatal(err)
	}
	s := startStream(t, l, setup(t, l, "s"), StreamOptions{})
	execSQL(t, conn, "INSERT INTO s VALUES (1, 'x', 2)")
	execSQL(t, conn, "ALTER TABLE s DROP COLUMN a")
	execSQL(t, conn, "ALTER TABLE s ALTER COLUMN b TYPE bigint")
	execSQL(t, conn, "INSERT INTO s VALUES (2, 3)")
	var rels []*Relation
	for _, c := range readCaughtUp(t, l, s) {
		switch c.Op {
		case OpRelation:
			rels = append(rels, c.Rel)
		case OpInsert:
			if c.Rel != rels[len(rels)-1] {
				t.Errorf("an insert described by an older relation")
			}
		}
	}
	if len(rels) != 2 {
		t.Fatalf("%d relation messages, want 2", len(rels))
	}
	if ch := rels[0].Changes(cat.Table("public.s"), nil); len(ch) != 0 {
		t.Errorf("first description differs from the catalog: %v", ch)
	}
	want := []ColumnChange{{Column: "a", Was: "text"}, {Column: "b", Was: "int4", Now: "int8"}}
	got := rels[1].Changes(cat.Table("public.s"), nil)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("changes (-want +got):\n%s", d)
	}
	if got := rels[1].Changes(cat.Table("public.s"), []string{"id"}); len(got) != 0 {
		t.Errorf("column id did not change, got %v", got)
	}
	msg := (&SchemaChangeError{Table: "public.s", Changes: got}).Error()
	for _, part := range []string{`column "a" was dropped`, `column "b" changed type from int4 to int8`, "denorm sync --drop"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
}

// TestLogicalSetupDrop: Setup makes the publication (or corrects one of
// its name) and the slot; a second Setup finds the slot; Drop removes both
// and tolerates their absence; a stream of a dropped slot or publication
// is a *SlotMissingError.
func TestLogicalSetupDrop(t *testing.T) {
	t.Parallel()
	l, conn := logicalJob(t, `CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY);`)
	ctx := context.Background()
	// A publication of the job's name with one table and inserts only.
	execSQL(t, conn, fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE a WITH (publish = 'insert')", l.Name))
	ss, err := l.Setup(ctx, []string{"a", "public.b"})
	if err != nil {
		t.Fatal(err)
	}
	if ss.Snapshot == "" || ss.Consistent == 0 {
		t.Fatalf("setup returned %+v", ss)
	}
	ss.Release(ctx)
	ss.Release(ctx)
	var pub string
	if err := conn.QueryRow(ctx, `
SELECT string_agg(tablename, ',' ORDER BY tablename) || ' ' || bool_and(p.pubupdate AND p.pubdelete AND p.pubtruncate AND p.pubviaroot)
FROM pg_publication_tables t JOIN pg_publication p USING (pubname) WHERE pubname = $1`, l.Name).Scan(&pub); err != nil {
		t.Fatal(err)
	}
	if pub != "a,b true" {
		t.Fatalf("publication: %q, want tables a,b with every change published", pub)
	}
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Plugin != "pgoutput" || st.Confirmed != ss.Consistent || st.Active || st.WALStatus != "reserved" {
		t.Fatalf("status %+v", st)
	}
	var exists *SlotExistsError
	if _, err := l.Setup(ctx, []string{"a"}); !errors.As(err, &exists) {
		t.Fatalf("second setup: %v, want *SlotExistsError", err)
	}

	// The publication dropped behind the job's back.
	execSQL(t, conn, "DROP PUBLICATION "+l.Name)
	var missing *SlotMissingError
	if _, err := l.Stream(ctx, 0, StreamOptions{}); !errors.As(err, &missing) || !missing.Publication {
		t.Fatalf("stream without publication: %v, want *SlotMissingError for the publication", err)
	}
	if err := l.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Drop(ctx); err != nil {
		t.Fatalf("second drop: %v", err)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1) +
		(SELECT count(*) FROM pg_publication WHERE pubname = $1)`, l.Name).Scan(&left); err != nil || left != 0 {
		t.Fatalf("after drop: %d objects left (%v)", left, err)
	}
	if _, err := l.Stream(ctx, 0, StreamOptions{}); !errors.As(err, &missing) || missing.Publication {
		t.Fatalf("stream of a dropped slot: %v, want *SlotMissingError", err)
	}
	if _, err := l.Status(ctx); !errors.As(err, &missing) || !strings.Contains(err.Error(), "denorm sync --drop") {
		t.Fatalf("status of a dropped slot: %v", err)
	}
}

// TestLogicalReplicaIdentity: modes, the columns whose old values are
// known, partitioned tables judged by their partitions, the exact
// statements with quoted names, and Setup refusing tables PostgreSQL would
// stop accepting updates for.
func TestLogicalReplicaIdentity(t *testing.T) {
	t.Parallel()
	l, conn := logicalJob(t, `
CREATE SCHEMA "Sales Dept";
SET search_path = "Sales Dept";
CREATE TABLE pk (id int PRIMARY KEY, a text);
CREATE TABLE "Order" (id int PRIMARY KEY, a text);
ALTER TABLE "Order" REPLICA IDENTITY FULL;
CREATE TABLE idx (id int NOT NULL, code text NOT NULL, x int);
CREATE UNIQUE INDEX idx_code ON idx (code);
ALTER TABLE idx REPLICA IDENTITY USING INDEX idx_code;
CREATE TABLE nokey (a int, b int);
CREATE TABLE nothing (id int PRIMARY KEY);
ALTER TABLE nothing REPLICA IDENTITY NOTHING;
CREATE TABLE part (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE part_1 PARTITION OF part FOR VALUES IN (1);
CREATE TABLE part_2 PARTITION OF part FOR VALUES IN (2);
ALTER TABLE part_2 REPLICA IDENTITY FULL;
CREATE VIEW v AS SELECT * FROM pk;`)
	ctx := context.Background()
	s := func(t string) string { return mappings.QualifiedTableName("Sales Dept", t) }
	ids, err := ReadReplicaIdentity(ctx, conn, []string{s("pk"), s("Order"), s("idx"), s("nokey"), s("nothing"), s("part")})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Table, Mode string
		Columns     []string
		Usable      bool
		Statements  []string
	}
	var got []row
	for _, id := range ids {
		got = append(got, row{id.Table, id.Mode, id.Columns, id.Usable(), id.FullStatements()})
	}
	alter := func(t string) []string { return []string{`ALTER TABLE "Sales Dept".` + t + ` REPLICA IDENTITY FULL`} }
	want := []row{
		{s("pk"), "default", []string{"id"}, true, alter(`"pk"`)},
		{s("Order"), "full", []string{"id", "a"}, true, []string{}},
		{s("idx"), "index", []string{"code"}, true, alter(`"idx"`)},
		{s("nokey"), "default", nil, false, alter(`"nokey"`)},
		{s("nothing"), "nothing", nil, false, alter(`"nothing"`)},
		{s("part"), "default", []string{"id", "k"}, true, alter(`"part_1"`)},
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })); d != "" {
		t.Fatalf("replica identities (-want +got):\n%s", d)
	}
	if !ids[0].Covers("id") || ids[0].Covers("id", "a") || !ids[1].Covers("id", "a") {
		t.Error("Covers disagrees with Columns")
	}
	if _, err := ReadReplicaIdentity(ctx, conn, []string{s("v"), s("gone")}); err == nil ||
		!strings.Contains(err.Error(), `"Sales Dept".v is not a table`) || !strings.Contains(err.Error(), `table "Sales Dept".gone does not exist`) {
		t.Fatalf("a view and a missing table: %v", err)
	}

	var rie *ReplicaIdentityError
	_, err = l.Setup(ctx, []string{s("pk"), s("nokey")})
	if !errors.As(err, &rie) || len(rie.Tables) != 1 || rie.Tables[0].Table != s("nokey") ||
		!strings.Contains(err.Error(), `ALTER TABLE "Sales Dept"."nokey" REPLICA IDENTITY FULL;`) {
		t.Fatalf("setup with a table without replica identity: %v", err)
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_publication WHERE pubname = $1`, l.Name).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the refused setup left a publication (%v)", err)
	}
}

// TestLogicalPrivileges: a user without the REPLICATION attribute, without
// CREATE on the database, or not owning the tables gets a *PrivilegeError
// saying what to grant, and Setup leaves nothing behind; given a
// publication the DBA made, the user needs no table ownership.
func TestLogicalPrivileges(t *testing.T) {
	t.Parallel()
	l, conn := logicalJob(t, `CREATE TABLE t (id int PRIMARY KEY)`)
	ctx := context.Background()
	role := fmt.Sprintf("denorm_norepl_%d_%d", os.Getpid(), logicalSeq.Add(1))
	execSQL(t, conn, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		_, _ = conn.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = conn.Exec(ctx, "DROP ROLE "+role)
	})
	execSQL(t, conn, "GRANT SELECT ON t TO "+role)
	u, err := url.Parse(l.src.cfg.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	lu, err := logical(u.String(), l.Job)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		grant, fix string
	}{
		{"", "ALTER ROLE <user> REPLICATION"},
		{"ALTER ROLE " + role + " REPLICATION", "GRANT CREATE ON DATABASE"},
		{"GRANT CREATE ON DATABASE " + pgx.Identifier{l.src.cfg.Database}.Sanitize() + " TO " + role, "only a table's owner"},
	} {
		if step.grant != "" {
			execSQL(t, conn, step.grant)
		}
		var pe *PrivilegeError
		if _, err := lu.Setup(ctx, []string{"t"}); !errors.As(err, &pe) || !strings.Contains(err.Error(), step.fix) {
			t.Fatalf("setup as %s after %q: %v, want a *PrivilegeError saying %q", role, step.grant, err, step.fix)
		}
	}
	var left int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1) +
		(SELECT count(*) FROM pg_publication WHERE pubname = $1)`, l.Name).Scan(&left); err != nil || left != 0 {
		t.Fatalf("refused setups left %d objects (%v)", left, err)
	}
	// Without owning the table: a publication the DBA made and gave it.
	execSQL(t, conn, "CREATE PUBLICATION "+l.Name+" FOR TABLE t WITH (publish_via_partition_root = true)")
	execSQL(t, conn, "ALTER PUBLICATION "+l.Name+" OWNER TO "+role)
	setup(t, lu, "t")
	if err := lu.Drop(ctx); err != nil {
		t.Fatalf("drop as the publication's owner: %v", err)
	}
}

// privateServer starts a PostgreSQL cluster of the test's own
// (testenv.PrivatePostgres), not in the short suite.
func privateServer(t *testing.T) (string, func()) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL server: skipped in the short suite")
	}
	return testenv.PrivatePostgres(t)
}

// TestLogicalServerStates, on a server of its own: wal_level below logical
// is a *WALLevelError; a slot the server invalidated (its WAL removed past
// max_slot_wal_keep_size) is a *SlotInvalidError from Status and Stream.
func TestLogicalServerStates(t *testing.T) {
	t.Parallel()
	url, restart := privateServer(t)
	ctx := context.Background()
	admin := func(sql string) {
		t.Helper()
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	admin("CREATE TABLE t (id int PRIMARY KEY)")
	l, err := logical(url, "states")
	if err != nil {
		t.Fatal(err)
	}

	// A restart while streaming ends the stream with an error that is not
	// a lost slot; a new stream resumes after the confirmed position.
	s := startStream(t, l, setup(t, l, "t"), StreamOptions{})
	admin("INSERT INTO t VALUES (-1)")
	for _, c := range readCaughtUp(t, l, s) {
		if c.Op == OpCommit {
			s.Confirm(c.EndLSN)
		}
	}
	restart()
	ctx10, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, err := s.Next(ctx10)
		if err == nil {
			continue
		}
		var inv *SlotInvalidError
		var missing *SlotMissingError
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &inv) || errors.As(err, &missing) {
			t.Fatalf("stream across a restart: %v, want a connection error", err)
		}
		t.Logf("the stream across a restart ended with: %v", err)
		break
	}
	s.Close()
	s = startStream(t, l, s.Confirmed(), StreamOptions{})
	admin("INSERT INTO t VALUES (-2)")
	var ids []string
	for _, c := range readCaughtUp(t, l, s) {
		if c.Op == OpInsert {
			v, _ := c.NewValue("id")
			ids = append(ids, v.Text)
		}
	}
	if d := cmp.Diff([]string{"-2"}, ids); d != "" {
		t.Fatalf("after the restart (-want +got):\n%s", d)
	}
	s.Close()
	waitSlot(t, l, "no reader", func(st *SlotStatus) bool { return !st.Active })
	if err := l.Drop(ctx); err != nil {
		t.Fatal(err)
	}

	admin("ALTER SYSTEM SET wal_level = replica")
	restart()
	var wl *WALLevelError
	if _, err := l.Setup(ctx, []string{"t"}); !errors.As(err, &wl) || wl.Level != "replica" || !strings.Contains(err.Error(), "wal_level = logical") {
		t.Fatalf("setup with wal_level replica: %v, want *WALLevelError", err)
	}
	// What validate --sync logical and sync check first says so too.
	src, err := ParseSource(url)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckLogical(ctx, snap, l, &mappings.Plan{})
	_ = snap.Close(ctx)
	if !errors.As(err, &wl) {
		t.Fatalf("CheckLogical with wal_level replica: %v, want *WALLevelError", err)
	}

	admin("ALTER SYSTEM SET wal_level = logical")
	admin("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'")
	restart()
	setup(t, l, "t")
	for i := 0; i < 3; i++ {
		admin(fmt.Sprintf("INSERT INTO t VALUES (%d)", i))
		admin("SELECT pg_switch_wal()")
	}
	admin("CHECKPOINT")
	var inv *SlotInvalidError
	st, err := l.Status(ctx)
	if !errors.As(err, &inv) || st == nil || st.WALStatus != "lost" || !strings.Contains(err.Error(), "denorm sync --drop") {
		t.Fatalf("status of an invalidated slot: %+v, %v; want wal_status lost and *SlotInvalidError", st, err)
	}
	if _, err := l.Stream(ctx, 0, StreamOptions{}); !errors.As(err, &inv) {
		t.Fatalf("stream of an invalidated slot: %v, want *SlotInvalidError", err)
	}
	if err := l.Drop(ctx); err != nil {
		t.Fatalf("drop of an invalidated slot: %v", err)
	}
}
