package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Loaded data is built once per test server, not once per test: the first
// test that asks for a set of SQL files loads them into a template
// database (tpl_<hash of the loader and the files' contents>), and every
// test, in this package and in every other run against the same server,
// gets a copy of it (CREATE DATABASE ... TEMPLATE), which costs a file
// copy instead of running the SQL again - for Pagila, well under a second
// instead of several. A copy holds exactly what loading the files into an
// empty database gives (tables, rows, sequences, statistics); replication
// slots, which the tests create, are per database and never copied.
//
// The template is built under a transaction-free advisory lock (so two
// packages running at once build it once) into a scratch database renamed
// into place only when complete, and then closed to connections, so that
// no session (autovacuum included) keeps a copy from being made. Its name
// changes with the files' contents: an edited file gives a new template.
// The servers of `make test` are thrown away with their templates; a
// long-lived test server keeps them (DROP DATABASE tpl_... to reclaim).

// LoadedDB creates a database holding the given SQL files run with psql
// in order (PsqlFile: COPY ... FROM stdin works), copied from a template
// built once per server, and returns its URL. The database is dropped
// when the test ends.
func LoadedDB(t testing.TB, files ...string) string {
	t.Helper()
	return templateCopy(t, "psql", files, func(db string) {
		for _, f := range files {
			PsqlFile(t, db, f)
		}
	})
}

// templateCopy returns a fresh database copied from the template that
// load fills (building it first if this server has none).
func templateCopy(t testing.TB, loader string, files []string, load func(db string)) string {
	t.Helper()
	return createDB(t, templateName(t, loader, files), load)
}

// createDB creates a database that the test's end drops, and returns its
// URL: empty when tpl is "", else a copy of the template tpl, which load
// fills first if this server has none.
func createDB(t testing.TB, tpl string, load func(db string)) string {
	t.Helper()
	admin := need(t, "DENORM_TEST_PG")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to test PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	name := uniqueName(t)
	create := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if tpl != "" {
		if !databaseExists(t, ctx, conn, tpl) {
			buildTemplate(t, ctx, conn, admin, tpl, load)
		}
		create += " TEMPLATE " + pgx.Identifier{tpl}.Sanitize()
	}
	for attempt := 1; ; attempt++ {
		_, err = conn.Exec(ctx, create)
		// "source database is being accessed by other users": a session
		// (a test's, or autovacuum's) on the template at that moment.
		if err == nil || attempt == 5 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("%s: %v", create, err)
	}
	dropAtCleanup(t, admin, name)
	return dbURL(t, admin, name)
}

// templateName is tpl_ and a hash of the loader and of the files' names
// and contents.
func templateName(t testing.TB, loader string, files []string) string {
	t.Helper()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", loader, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%d\x00", len(b))
		h.Write(b)
	}
	return "tpl_" + hex.EncodeToString(h.Sum(nil))[:24]
}

func databaseExists(t testing.TB, ctx context.Context, conn *pgx.Conn, name string) bool {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatalf("look for database %s: %v", name, err)
	}
	return n > 0
}

// buildTemplate fills tpl with load, once per server: under an advisory
// lock (held by conn's session, released if the process dies), into a
// scratch database renamed to tpl when complete.
func buildTemplate(t testing.TB, ctx context.Context, conn *pgx.Conn, admin, tpl string, load func(db string)) {
	t.Helper()
	sum := sha256.Sum256([]byte(tpl))
	key := int64(binary.BigEndian.Uint64(sum[:8]))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		t.Fatalf("lock template %s: %v", tpl, err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", key) }()
	if databaseExists(t, ctx, conn, tpl) {
		return // another process built it meanwhile
	}
	start := time.Now()
	scratch := fmt.Sprintf("%s_build_%d", tpl, os.Getpid())
	ident := pgx.Identifier{scratch}.Sanitize()
	for _, sql := range []string{"DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)", "CREATE DATABASE " + ident} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("template %s: %s: %v", tpl, sql, err)
		}
	}
	load(dbURL(t, admin, scratch))
	for _, sql := range []string{
		"ALTER DATABASE " + ident + " ALLOW_CONNECTIONS false",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + scratch + "'",
		"ALTER DATABASE " + ident + " RENAME TO " + pgx.Identifier{tpl}.Sanitize(),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("template %s: %s: %v", tpl, sql, err)
		}
	}
	t.Logf("testenv: built template %s in %v (copied for every test that loads the same files)", tpl, time.Since(start).Round(time.Millisecond))
}

// dropAtCleanup drops the database name when the test ends.
func dropAtCleanup(t testing.TB, admin, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
}

// dbURL is the admin URL with the database name as its path.
func dbURL(t testing.TB, admin, name string) string {
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
