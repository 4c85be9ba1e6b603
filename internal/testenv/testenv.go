// Package testenv gives integration tests their own databases on the real
// PostgreSQL and MongoDB-wire servers that `make test` starts
// (scripts/testenv.sh exports DENORM_TEST_PG and DENORM_TEST_MONGO).
//
// Without those variables a test fails with instructions, unless the short
// suite was asked for (go test -short), where it is skipped with a message.
package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

var counter atomic.Int64

func need(t testing.TB, env string) string {
	t.Helper()
	v := os.Getenv(env)
	if v != "" {
		return v
	}
	if testing.Short() {
		t.Skipf("%s not set: integration test skipped in the short suite", env)
	}
	t.Fatalf("%s is not set: run the suite with `make test` (it starts PostgreSQL and FerretDB), or `go test -short` for unit tests only", env)
	return ""
}

// uniqueName is a database name unique to this test and process.
func uniqueName(t testing.TB) string {
	re := regexp.MustCompile(`[^a-z0-9]+`)
	n := re.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(n) > 30 {
		n = n[:30]
	}
	return fmt.Sprintf("t_%s_%d_%d", n, os.Getpid(), counter.Add(1))
}

// Root returns the repository root (where go.mod is).
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// PostgresDB creates a database holding the given SQL files (ExecFile,
// in order; none for an empty database) and returns its URL. With files,
// the database is a copy of a template loaded once per server (LoadedDB
// says how). The database is dropped when the test ends.
func PostgresDB(t testing.TB, sqlFiles ...string) string {
	t.Helper()
	if len(sqlFiles) > 0 {
		return templateCopy(t, "exec", sqlFiles, func(db string) {
			for _, f := range sqlFiles {
				ExecFile(t, db, f)
			}
		})
	}
	return createDB(t, "", nil)
}

// ExecFile runs an SQL file (simple protocol, several statements) in db.
func ExecFile(t testing.TB, dbURL, file string) {
	t.Helper()
	sql, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	Exec(t, dbURL, string(sql))
}

// Exec runs SQL statements in db.
func Exec(t testing.TB, dbURL, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("exec SQL: %v", err)
	}
}

// QueryString runs a query returning one value and returns its text.
func QueryString(t testing.TB, dbURL, query string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, "SELECT ("+query+")::text").Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s
}

// MongoDB returns the URI of a fresh database on the test server (its name
// in the path) and a handle to it. The database is dropped at the end.
func MongoDB(t testing.TB) (string, *mongo.Database) {
	t.Helper()
	base := need(t, "DENORM_TEST_MONGO")
	client, err := mongo.Connect(options.Client().ApplyURI(base))
	if err != nil {
		t.Fatalf("connect to test MongoDB-wire server: %v", err)
	}
	name := uniqueName(t)
	db := client.Database(name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = db.Drop(ctx)
		_ = client.Disconnect(ctx)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String(), db
}

// DumpCollection returns every document of a collection sorted by _id as
// relaxed Extended JSON lines.
func DumpCollection(t testing.TB, db *mongo.Database, coll string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cur, err := db.Collection(coll).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatalf("find %s: %v", coll, err)
	}
	defer cur.Close(ctx)
	var out []string
	for cur.Next(ctx) {
		b, err := bson.MarshalExtJSON(cur.Current, false, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ReaderRole creates a login role that can only read db's tables (the
// least-privileged role SECURITY.md recommends: CONNECT on the database,
// USAGE on the schema, SELECT on its tables) with the given password, and
// returns db's URL for it. role "" picks a name unique to the test; roles
// belong to the whole server, so a given name must be too. The role is
// dropped when the test ends.
func ReaderRole(t testing.TB, dbURL, role, password string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if role == "" {
		role = uniqueName(t)
	}
	Exec(t, dbURL, fmt.Sprintf(`CREATE ROLE %[1]s LOGIN PASSWORD %[2]s;
GRANT CONNECT ON DATABASE %[3]s TO %[1]s;
GRANT USAGE ON SCHEMA public TO %[1]s;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO %[1]s;`,
		pgx.Identifier{role}.Sanitize(), quoteLiteral(password), pgx.Identifier{db}.Sanitize()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, target := range []string{dbURL, need(t, "DENORM_TEST_PG")} {
			c, err := pgx.Connect(ctx, target)
			if err != nil {
				continue
			}
			_, _ = c.Exec(ctx, "DROP OWNED BY "+pgx.Identifier{role}.Sanitize())
			if target != dbURL {
				_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
			}
			c.Close(ctx)
		}
	})
	u.User = url.UserPassword(role, password)
	return u.String()
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// LongEnv is the variable that asks for the long suite (make test-long):
// the long randomized rounds and fault loops at their full length.
const LongEnv = "DENORM_TEST_LONG"

// Long tells whether the long suite was asked for (DENORM_TEST_LONG=1).
func Long() bool {
	v := os.Getenv(LongEnv)
	return v != "" && v != "0"
}

// Count is n in the long suite (make test-long) and short otherwise, for
// a test whose rounds, seeds or iterations `make test` shortens: the
// shortened test says so in its log, names what the long suite runs, and
// still asserts everything it asserts at full length.
func Count(t testing.TB, what string, short, long int) int {
	t.Helper()
	if Long() || short >= long {
		return long
	}
	t.Logf("%s: %d (the long suite, %s=1 or make test-long, runs %d)", what, short, LongEnv, long)
	return short
}
