package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
)

// TestDropDirectory: --drop removes the mapping's files (a stale one of a
// collection this run writes again, and its indexes file), says what it
// drops, and leaves other files alone; --drop with --resume is refused.
func TestDropDirectory(t *testing.T) {
	src := seedDB(t)
	dir := t.TempDir()
	stale := filepath.Join(dir, "posts.jsonl")
	other := filepath.Join(dir, "notmine.jsonl")
	for _, f := range []string{stale, other, filepath.Join(dir, "posts.indexes.json")} {
		if err := os.WriteFile(f, []byte(`{"_id": 99, "stale": true}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, "migrate", "--progress", "none", "--indexes", "none", "--mapping", example(t, "blog"), "--source", src, "--target", dir, "--drop")
	if code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "--drop: dropped collection posts (its documents and indexes) from "+dir) || !strings.Contains(errs, "--drop: no collection comments to drop") {
		t.Errorf("--drop does not say what it drops:\n%s", errs)
	}
	if lines := testenv.ReadLines(t, stale); len(lines) != 3 || strings.Contains(strings.Join(lines, ""), "stale") {
		t.Errorf("posts.jsonl after --drop: %v", lines)
	}
	if _, err := os.Stat(filepath.Join(dir, "posts.indexes.json")); !os.IsNotExist(err) {
		t.Errorf("the stale indexes file survived --drop (--indexes none writes none): %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("--drop removed a file the mapping does not write: %v", err)
	}
	code, _, errs = runCLI(t, "migrate", "--mapping", example(t, "blog"), "--source", src, "--target", dir, "--drop", "--job", "j", "--resume")
	if code != 2 || !strings.Contains(errs, "--drop would drop what the job being resumed wrote") || !strings.Contains(errs, "Run 'denorm migrate --help' for usage.") {
		t.Errorf("--drop --resume: exit %d, want 2 with the subcommand's usage hint:\n%s", code, errs)
	}
}

// TestCollectionsAndLimit: --collections runs a subset of the mapping
// (an unknown name is a usage error naming the known ones); --limit N
// writes the first N documents of each collection, the pages of the
// first N parents of a bucket collection, and verify with the same
// flags finds exactly those.
func TestCollectionsAndLimit(t *testing.T) {
	src := seedDB(t)
	uri, db := testenv.MongoDB(t)
	blog := example(t, "blog")

	code, _, errs := runCLI(t, "migrate", "--mapping", blog, "--source", src, "--target", uri, "--collections", "posts,nope")
	if code != 2 || !strings.Contains(errs, "--collections: the mapping has no collection nope (it has posts, comments)") {
		t.Errorf("unknown collection: exit %d, want 2:\n%s", code, errs)
	}
	code, out, errs := runCLI(t, "migrate", "--progress", "none", "--mapping", blog, "--source", src, "--target", uri, "--collections", "comments")
	if code != 0 {
		t.Fatalf("migrate --collections exit %d\n%s%s", code, out, errs)
	}
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, "posts") || !slices.Contains(names, "comments") {
		t.Errorf("--collections comments wrote %v", names)
	}

	uri2, db2 := testenv.MongoDB(t)
	code, out, errs = runCLI(t, "migrate", "--progress", "none", "--mapping", blog, "--source", src, "--target", uri2, "--limit", "1")
	if code != 0 {
		t.Fatalf("migrate --limit exit %d\n%s%s", code, out, errs)
	}
	if got := testenv.DumpCollection(t, db2, "posts"); len(got) != 1 || !strings.HasPrefix(got[0], `{"_id":1,`) {
		t.Errorf("--limit 1 posts: %v", got)
	}
	var pages []string
	for _, d := range testenv.DumpCollection(t, db2, "comments") {
		var p struct {
			ID string `json:"_id"`
		}
		_ = json.Unmarshal([]byte(d), &p)
		pages = append(pages, p.ID)
	}
	if !slices.Equal(pages, []string{"1-0", "1-1", "1-2"}) {
		t.Errorf("--limit 1 comments: pages %v, want every page of post 1", pages)
	}
	if code, out, errs := runCLI(t, "verify", "-q", "--mapping", blog, "--source", src, "--target", uri2, "--limit", "1"); code != 0 {
		t.Errorf("verify --limit 1: exit %d, want 0\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "migrate", "--mapping", blog, "--source", src, "--target", uri2, "--limit", "1", "--job", "x"); code != 2 || !strings.Contains(errs, "leave out --job") {
		t.Errorf("--limit --job: exit %d, want 2\n%s", code, errs)
	}
}

// TestSummaryFile: --summary-file writes the run's summary as JSON, for
// a run that succeeds and for one that fails.
func TestSummaryFile(t *testing.T) {
	src := seedDB(t)
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "summary.json")
	code, out, errs := runCLI(t, "migrate", "-q", "--mapping", example(t, "blog"), "--source", src, "--target", dir, "--summary-file", file, "--job", "s")
	if code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	var s summaryFile
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary file: %v\n%s", err, b)
	}
	if s.Command != "migrate" || s.Status != "ok" || s.ExitCode != 0 || s.Job != "s" || s.Target != dir || len(s.Collections) != 2 {
		t.Errorf("summary = %+v", s)
	}
	posts, comments := s.Collections[0], s.Collections[1]
	if posts.Kind != "documents" || posts.Run.Documents != 3 || posts.Run.Rows != 3 || !posts.Done ||
		comments.Kind != "buckets" || comments.Run.Rows != 252 || comments.Run.Documents != 4 || comments.Job != comments.Run {
		t.Errorf("collections = %+v", s.Collections)
	}
	if s.Run.Documents != 7 || s.JobTotal.Documents != 7 || len(s.Indexes) != 2 || s.Indexes[1].Indexes[0] != "postId_1_page_1" {
		t.Errorf("totals %+v %+v, indexes %+v", s.Run, s.JobTotal, s.Indexes)
	}

	// Resumed (the finished job marked running again, as a killed one
	// would be after its last batch): this run did nothing, the job all.
	ck := filepath.Join(dir, "_denorm", "s.json")
	cb, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ck, []byte(strings.Replace(string(cb), `"phase": "done"`, `"phase": "running"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(t, "migrate", "-q", "--mapping", example(t, "blog"), "--source", src, "--target", dir, "--summary-file", file, "--job", "s", "--resume")
	if code != 0 {
		t.Fatalf("resume exit %d\n%s%s", code, out, errs)
	}
	s = summaryFile{}
	if b, err = os.ReadFile(file); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil || !s.Resumed || s.Run.Documents != 0 || s.Run.Rows != 0 || s.JobTotal.Documents != 7 || s.JobTotal.Rows != 255 ||
		s.Collections[1].Job.Rows != 252 || s.Collections[1].Run.Rows != 0 {
		t.Errorf("summary of the resumed run = %+v (%v)\n%s", s, err, b)
	}

	missing := strings.Replace(src, "?", "_nosuchdb?", 1)
	code, _, _ = runCLI(t, "migrate", "-q", "--mapping", example(t, "blog"), "--source", missing, "--target", dir, "--summary-file", file)
	if code != 1 {
		t.Fatalf("migrate from a missing database: exit %d, want 1", code)
	}
	b, _ = os.ReadFile(file)
	s = summaryFile{}
	if err := json.Unmarshal(b, &s); err != nil || s.Status != "failed" || s.ExitCode != 1 || !strings.Contains(s.Error, "does not exist") {
		t.Errorf("summary of a failed run = %+v (%v)\n%s", s, err, b)
	}
}

// TestLogFormatJSON: with --log-format json every line denorm writes to
// stderr parses as JSON, whatever the command and however it ends:
// progress, notices, warnings, usage errors, a mapping file's problems,
// verify's verdict, an unreachable target.
func TestLogFormatJSON(t *testing.T) {
	src := seedDB(t)
	uri, _ := testenv.MongoDB(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\ncollections:\n  - name: a\n    table: nope\n    colour: red\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := [][]string{
		{"migrate", "--progress", "lines", "--mapping", example(t, "blog"), "--source", src, "--target", uri, "--drop"},
		{"migrate", "--progress", "lines", "--mapping", example(t, "catalog"), "--source", src, "--target", uri, "--job", "j"},
		{"migrate", "--mapping", example(t, "blog"), "--source", src, "--target", uri, "--batch-size", "0"},
		{"migrate", "--mapping", example(t, "blog"), "--source", src, "--target", uri, "--no-such-flag"},
		{"validate", "--mapping", bad},
		{"plan", "--progress", "lines", "--mapping", example(t, "blog"), "--source", src, "--fail-on", "warning", "--max-doc-size", "200"},
		{"verify", "--mapping", example(t, "person"), "--source", src, "--target", uri},
		{"status", "--target", uri},
		{"advise", "--source", src, "--output", filepath.Join(dir, "advised.yaml")},
		{"status", "--target", "mongodb://127.0.0.1:1/x?serverSelectionTimeoutMS=200"},
		{"nosuchcommand"},
	}
	for _, args := range runs {
		args = append([]string{"--log-format", "json"}, args...)
		code, _, errs := runCLI(t, args...)
		lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
		if errs == "" {
			lines = nil
		}
		if code != 0 && len(lines) == 0 {
			t.Errorf("denorm %s: exit %d and nothing on stderr", strings.Join(args, " "), code)
		}
		levels := map[string]int{}
		for _, l := range lines {
			var rec struct {
				Time  string `json:"time"`
				Level string `json:"level"`
				Msg   string `json:"msg"`
			}
			if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Level == "" || rec.Msg == "" || rec.Time == "" {
				t.Errorf("denorm %s: stderr line is not a JSON record (%v): %s", strings.Join(args, " "), err, l)
			}
			levels[rec.Level]++
		}
		t.Logf("denorm %s: exit %d, %d lines %v", strings.Join(args[2:], " "), code, len(lines), levels)
	}
}

// TestUsageHintNamesSubcommand: a usage error points at the help of the
// command that was run.
func TestUsageHintNamesSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"migrate", "--batch-size", "0"}, "Run 'denorm migrate --help' for usage."},
		{[]string{"plan", "--format", "pdf"}, "Run 'denorm plan --help' for usage."},
		{[]string{"verify", "--nope"}, "Run 'denorm verify --help' for usage."},
		{[]string{"nosuchcommand"}, "Run 'denorm --help' for usage."},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.hint) {
			t.Errorf("denorm %s: exit %d, want 2 and %q:\n%s", strings.Join(tc.args, " "), code, tc.hint, errs)
		}
	}
}

// libpqEnv sets the PG* variables of the test database db (its URL) for
// the test, with user and password as given ("" leaves them unset).
func libpqEnv(t *testing.T, db, user, password string) {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range libpqVars {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("DENORM_SOURCE", "")
	t.Setenv("PGHOST", u.Hostname())
	t.Setenv("PGPORT", u.Port())
	t.Setenv("PGDATABASE", strings.TrimPrefix(u.Path, "/"))
	t.Setenv("PGSSLMODE", "disable")
	if user == "" {
		user = u.User.Username()
	}
	t.Setenv("PGUSER", user)
	if password != "" {
		t.Setenv("PGPASSWORD", password)
	}
}

// TestLibpqEnvironment: without --source and DENORM_SOURCE, the source is
// read from PGHOST, PGPORT, PGDATABASE, PGUSER (and PGSSLMODE); the resume
// hint then has no --source to paste.
func TestLibpqEnvironment(t *testing.T) {
	src := seedDB(t)
	libpqEnv(t, src, "", "")
	dir := t.TempDir()
	code, out, errs := runCLI(t, "migrate", "-q", "--mapping", example(t, "person"), "--target", dir)
	if code != 0 {
		t.Fatalf("migrate from PG* variables: exit %d\n%s%s", code, out, errs)
	}
	if n := countLines(t, filepath.Join(dir, "people.jsonl")); n != 2 {
		t.Errorf("people.jsonl has %d lines, want 2", n)
	}
	t.Setenv("PGDATABASE", "no_such_database_here")
	code, _, errs = runCLI(t, "plan", "-q", "--mapping", example(t, "person"))
	if code != 1 || !strings.Contains(errs, `database "no_such_database_here" does not exist`) || strings.Contains(errs, "tls error") {
		t.Errorf("plan with PGDATABASE naming no database: exit %d, want 1 with the server's error and no tls line:\n%s", code, errs)
	}
	for _, v := range libpqVars {
		os.Unsetenv(v)
	}
	code, _, errs = runCLI(t, "plan", "-q", "--mapping", example(t, "person"))
	if code != 2 || !strings.Contains(errs, "set PGHOST, PGDATABASE, PGUSER") {
		t.Errorf("no source at all: exit %d, want 2 naming the PG* variables:\n%s", code, errs)
	}
}

// TestPgpass: a role that needs a password (scram-sha-256 for it alone,
// in the test server's pg_hba.conf) logs in with the password from a
// .pgpass file (PGPASSFILE) and PG* variables; without the file, the
// server refuses it, so the password did come from the file.
func TestPgpass(t *testing.T) {
	src := seedDB(t)
	admin := os.Getenv("DENORM_TEST_PG")
	role := fmt.Sprintf("pgpass_%d", time.Now().UnixNano()%1e9)
	testenv.Exec(t, admin, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'S3cret-pw'`, role))
	t.Cleanup(func() {
		testenv.Exec(t, src, "DROP OWNED BY "+role)
		testenv.Exec(t, admin, "DROP ROLE IF EXISTS "+role)
	})
	u, _ := url.Parse(src)
	dbName := strings.TrimPrefix(u.Path, "/")
	testenv.Exec(t, src, fmt.Sprintf(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO %s`, role))
	requirePassword(t, admin, role)

	libpqEnv(t, src, role, "")
	pgpass := filepath.Join(t.TempDir(), "pgpass")
	t.Setenv("PGPASSFILE", pgpass)
	dir := t.TempDir()
	if err := os.WriteFile(pgpass, []byte("# no entry for this database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "migrate", "-q", "--mapping", example(t, "person"), "--target", dir)
	if code != 1 || !strings.Contains(errs, "password authentication failed") && !strings.Contains(errs, "SASL") {
		t.Fatalf("without a password: exit %d, want 1 refused by the server:\n%s", code, errs)
	}
	line := fmt.Sprintf("%s:%s:%s:%s:S3cret-pw\n", u.Hostname(), u.Port(), dbName, role)
	if err := os.WriteFile(pgpass, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "migrate", "-q", "--mapping", example(t, "person"), "--target", dir)
	if code != 0 {
		t.Fatalf("with .pgpass: exit %d\n%s%s", code, out, errs)
	}
	if n := countLines(t, filepath.Join(dir, "people.jsonl")); n != 2 {
		t.Errorf("people.jsonl has %d lines, want 2", n)
	}
	if strings.Contains(out+errs, "S3cret-pw") {
		t.Errorf("the password shows in the output:\n%s%s", out, errs)
	}
}

// requirePassword makes the test server ask role for its password
// (scram-sha-256) on loopback, leaving every other role as it was: a line
// for role alone, first in pg_hba.conf, removed at the end of the test.
func requirePassword(t *testing.T, admin, role string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var hba string
	if err := conn.QueryRow(ctx, "SHOW hba_file").Scan(&hba); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(hba)
	if err != nil {
		t.Skipf("cannot read the test server's pg_hba.conf (%v): the .pgpass test needs the server's files", err)
	}
	line := fmt.Sprintf("host all %s 127.0.0.1/32 scram-sha-256\n", role)
	if err := os.WriteFile(hba, append([]byte(line), old...), 0o600); err != nil {
		t.Fatal(err)
	}
	reload := func() {
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() {
		cur, _ := os.ReadFile(hba)
		_ = os.WriteFile(hba, []byte(strings.Replace(string(cur), line, "", 1)), 0o600)
		reload()
	})
	reload()
	// The postmaster reloads asynchronously: wait until the role, without
	// a password, is refused.
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	for deadline := time.Now().Add(time.Minute); ; {
		c, err := pgx.Connect(ctx, u.String())
		if err != nil {
			break
		}
		c.Close(ctx)
		if time.Now().After(deadline) {
			t.Fatal("pg_hba.conf reloaded, but the role still logs in without a password")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
