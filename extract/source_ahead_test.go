package extract

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
)

// TestDialAhead: connections dialed ahead are the ones the next snapshots
// take (no new backend while spares last); a spare the server dropped
// while it waited is replaced by a new connection, not reported as a lost
// snapshot; CloseSpares closes the spares no snapshot took.
func TestDialAhead(t *testing.T) {
	db := testenv.PostgresDB(t)
	testenv.Exec(t, db, `CREATE TABLE a (id int PRIMARY KEY); INSERT INTO a SELECT generate_series(1, 5)`)
	reader := testenv.ReaderRole(t, db, "", "secret")
	u, err := url.Parse(reader)
	if err != nil {
		t.Fatal(err)
	}
	role := u.User.Username()
	src, err := ParseSource(reader)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// backends waits until the source has want connections, and returns
	// the pids of those outside a transaction (spares).
	backends := func(want int) (idle []int32) {
		t.Helper()
		var n int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			idle = idle[:0]
			rows, err := admin.Query(ctx, "SELECT pid, state = 'idle' FROM pg_stat_activity WHERE usename = $1", role)
			if err != nil {
				t.Fatal(err)
			}
			n = 0
			for rows.Next() {
				var pid int32
				var isIdle bool
				if err := rows.Scan(&pid, &isIdle); err != nil {
					t.Fatal(err)
				}
				n++
				if isIdle {
					idle = append(idle, pid)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if n == want {
				return idle
			}
			if time.Now().After(deadline) {
				t.Fatalf("the source has %d connections, want %d", n, want)
			}
		}
	}
	count := func(s *Snapshot) int {
		t.Helper()
		var n int
		if err := s.tx.QueryRow(ctx, "SELECT count(*) FROM a").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	src.DialAhead(ctx, 2)
	if idle := backends(2); len(idle) != 2 {
		t.Fatalf("%d of the 2 spares are idle, want both", len(idle))
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close(ctx)
	backends(2) // a spare taken, none dialed
	// A row added after the snapshot: adopters must not see it.
	testenv.Exec(t, db, "INSERT INTO a VALUES (6)")
	a1, err := src.Adopt(ctx, snap.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close(ctx)
	backends(2)
	a2, err := src.Adopt(ctx, snap.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close(ctx)
	backends(3) // no spare left: dialed
	for _, s := range []*Snapshot{snap, a1, a2} {
		if n := count(s); n != 5 {
			t.Fatalf("a snapshot sees %d rows, want the 5 of the snapshot", n)
		}
	}

	// A spare terminated while it waits.
	src.DialAhead(ctx, 1)
	idle := backends(4)
	if len(idle) != 1 {
		t.Fatalf("%d idle connections, want the one spare", len(idle))
	}
	var ok bool
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", idle[0]).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate the spare: %v %v", ok, err)
	}
	backends(3)
	a3, err := src.Adopt(ctx, snap.ID)
	if err != nil {
		t.Fatalf("adopt after the spare was dropped: %v", err)
	}
	defer a3.Close(ctx)
	if n := count(a3); n != 5 {
		t.Fatalf("the snapshot adopted anew sees %d rows, want 5", n)
	}
	backends(4)

	// Spares no snapshot takes.
	src.DialAhead(ctx, 2)
	backends(6)
	src.CloseSpares(ctx)
	backends(4)
}
