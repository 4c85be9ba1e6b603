package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"runtime/debug"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// TestStreamsFallBackToSetWise: a role allowed two connections (the
// snapshot's and one more) cannot have the three streams of a root with
// two relations. The reader opens their connections at once, gives back
// the one it got, and reads set-wise instead: the same documents as a
// reader with its streams, and no connection left open.
func TestStreamsFallBackToSetWise(t *testing.T) {
	db := testenv.PostgresDB(t)
	testenv.Exec(t, db, `
CREATE TABLE p (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE c (p_id int NOT NULL REFERENCES p, n int NOT NULL, v text, PRIMARY KEY (p_id, n));
CREATE TABLE d (p_id int NOT NULL REFERENCES p, k int NOT NULL, w int, PRIMARY KEY (p_id, k));
INSERT INTO p SELECT i, 'p' || i FROM generate_series(1, 700) i;
INSERT INTO c SELECT i, n, md5((i * n)::text) FROM generate_series(1, 700) i, generate_series(1, 1 + i % 4) n;
INSERT INTO d SELECT i, k, i * k FROM generate_series(1, 700, 3) i, generate_series(1, 2) k;`)
	limited := testenv.ReaderRole(t, db, "", "secret")
	u, err := url.Parse(limited)
	if err != nil {
		t.Fatal(err)
	}
	role := u.User.Username()
	testenv.Exec(t, db, "ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" CONNECTION LIMIT 2")
	f, err := mappings.Parse("fallback.yaml", []byte(`version: 1
collections:
  - name: p
    table: p
    fields:
      - name
      - {name: cs, embed: {table: c, join: {p_id: id}, orderBy: n, fields: [n, v]}}
      - {name: ds, embed: {table: d, join: {p_id: id}, orderBy: k, fields: [k, w]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	// A connection left open would be closed by the collector (its file
	// descriptor's finalizer) before it is counted.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ctx := context.Background()
	read := func(dbURL string) (docs string, streamed bool) {
		t.Helper()
		_, snap := openSnapshot(t, ctx, dbURL)
		cp := resolveIn(t, ctx, snap, f).Collections[0]
		if n := len(Streamable(cp)); n != 2 {
			t.Fatalf("%d streamable relations, want 2: the test proves nothing", n)
		}
		r := NewReader(snap, cp, 100, nil)
		defer r.Close()
		n := 0
		for {
			b, err := r.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			streamed = streamed || r.merge != nil
			built, rejects := transform.Build(cp, b.Roots, b)
			if len(rejects) > 0 {
				t.Fatalf("rejects: %v", rejects)
			}
			n += len(built)
			docs += fmt.Sprintf("%v\n", built)
		}
		if n != 700 {
			t.Fatalf("%d documents, want 700", n)
		}
		if dbURL == limited {
			waitConnections(t, db, role, 1) // the snapshot's only
		}
		return docs, streamed
	}
	want, streamed := read(db)
	if !streamed {
		t.Fatal("the unlimited role did not read by streams")
	}
	got, streamed := read(limited)
	if streamed {
		t.Fatal("the role allowed two connections read by three streams")
	}
	if got != want {
		t.Fatal("set-wise documents differ from the streamed ones")
	}
}

// waitConnections waits until role has want connections to the server.
func waitConnections(t *testing.T, db, role string, want int) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE usename = $1", role).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == want {
			return
		}
	}
	t.Fatalf("role %s has %d connections, want %d", role, n, want)
}
