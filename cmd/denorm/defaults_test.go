package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
)

// TestTargetFirstContact (issue 28): every command that connects to a
// target fails within seconds when the target never answered - a closed
// port, and a listener that accepts and never replies - with the exit code
// of its table (verify: 4, could not complete), an error naming the
// target and the cause, and no retry for --retry-for (5 minutes by
// default), which is for faults once the target has answered.
func TestTargetFirstContact(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := seedDB(t)
	mapping := example(t, "person")
	for _, kind := range []struct {
		name, addr string
		causes     []string // one of them
	}{
		{"closed port", testenv.ClosedPort(t), []string{"connection refused"}},
		// Which timeout ends first, server selection or the handshake's
		// (both 10 s for status), decides how the cause reads.
		{"silent listener", testenv.SilentServer(t, true), []string{"nothing replied to the MongoDB handshake", "timed out waiting for server response"}},
	} {
		for _, c := range []struct {
			cmd  string
			code int
			args []string
		}{
			{"migrate", exitRuntime, []string{"migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--job", "fc"}},
			{"sync", exitRuntime, []string{"sync", "--mapping", mapping, "--source", src, "--job", "fc", "--method", "diff"}},
			{"verify", exitIncomplete, []string{"verify", "--mapping", mapping, "--source", src}},
			{"status", exitRuntime, []string{"status"}},
			{"validate", exitRuntime, []string{"validate", "--mapping", mapping, "--source", src}},
		} {
			t.Run(kind.name+"/"+c.cmd, func(t *testing.T) {
				t.Parallel()
				uri := "mongodb://" + kind.addr + "/fc"
				start := time.Now()
				code, out, errs := runCLI(t, append(c.args, "--target", uri)...)
				took := time.Since(start)
				t.Logf("%s after %s: %s", c.cmd, took.Round(time.Millisecond), strings.TrimSpace(errs))
				if code != c.code {
					t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out, errs)
				}
				cause := slices.ContainsFunc(kind.causes, func(c string) bool { return strings.Contains(errs, c) })
				if !strings.Contains(errs, "cannot reach the target "+uri) || !cause || !strings.Contains(errs, "it never answered") || strings.Contains(errs, "topology") {
					t.Errorf("the error does not name the target and the cause:\n%s", errs)
				}
				if strings.Contains(errs, "waiting for target") || strings.Contains(errs, "gave up after") {
					t.Errorf("a target that never answered was retried:\n%s", errs)
				}
				if took > 30*time.Second {
					t.Errorf("failed after %s: a target that never answered must fail within seconds", took)
				}
			})
		}
	}
}

// TestSyncDropSlot (issue 28): sync's flag that removes a job's change
// capture is --drop-slot (migrate --drop drops collections); --drop, its
// old name, still works and warns in one line on stderr that it is
// deprecated. Both remove the slot, the publication and the checkpoint.
func TestSyncDropSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	db := syncDB(t, "testdata/examples/seed.sql")
	mapping := example(t, "person")
	uri, _ := testenv.MongoDB(t)
	slots := func(job string) string {
		return testenv.QueryString(t, db, "SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'denorm_"+job+"') || ' ' || (SELECT count(*) FROM pg_publication WHERE pubname = 'denorm_"+job+"')")
	}
	for _, flag := range []string{"--drop-slot", "--drop"} {
		jb := syncJob(t, db)
		expectCLI(t, 0, nil, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri, "--job", jb, "--method", "logical", "--once")
		if got := slots(jb); got != "1 1" {
			t.Fatalf("after sync: slot and publication %s, want 1 1", got)
		}
		code, out, errs := runCLI(t, "sync", "--source", db, "--target", uri, "--job", jb, flag)
		if code != 0 || !strings.Contains(out, "sync job "+jb+" dropped") {
			t.Fatalf("sync %s: exit %d\n%s%s", flag, code, out, errs)
		}
		if got := slots(jb); got != "0 0" {
			t.Errorf("after sync %s: slot and publication %s, want 0 0", flag, got)
		}
		expectCLI(t, 0, []string{"no jobs in"}, "status", "--target", uri)
		const warning = "denorm: warning: sync --drop is deprecated: use --drop-slot"
		switch lines := strings.Split(strings.TrimSpace(errs), "\n"); {
		case flag == "--drop" && (len(lines) != 1 || !strings.HasPrefix(lines[0], warning)):
			t.Errorf("sync --drop: stderr is not one deprecation line:\n%s", errs)
		case flag == "--drop-slot" && errs != "":
			t.Errorf("sync --drop-slot: stderr:\n%s", errs)
		}
	}
	// Help lists --drop-slot, not the deprecated name.
	_, out, _ := runCLI(t, "sync", "--help")
	if !regexp.MustCompile(`(?m)^\s+--drop-slot\s`).MatchString(out) || regexp.MustCompile(`(?m)^\s+--drop\s`).MatchString(out) {
		t.Errorf("sync --help:\n%s", out)
	}
}

// TestValidateLibpqEnvironment (issue 28): validate reads the source
// from libpq's PG* variables when no --source (nor DENORM_SOURCE) is
// given, as migrate, plan and the others do: it checks the mapping
// against that database (a table the mapping names and the database lacks
// is a problem), and a PGDATABASE naming no database is the server's
// error, not "valid".
func TestValidateLibpqEnvironment(t *testing.T) {
	src := seedDB(t)
	libpqEnv(t, src, "", "")
	expectCLI(t, 0, []string{"valid against the source database (1 collection)"}, "validate", "--mapping", example(t, "person"))
	expectCLI(t, 2, []string{"no_such_table"}, "validate", "--mapping", writeMapping(t, "version: 1\ncollections:\n  - {name: x, table: no_such_table}\n"))
	expectCLI(t, 1, []string{"ready for logical sync", "replica identity"}[1:], "validate", "--mapping", example(t, "person"), "--sync", "logical")
	t.Setenv("PGDATABASE", "no_such_database_here")
	expectCLI(t, 1, []string{`database "no_such_database_here" does not exist`}, "validate", "--mapping", example(t, "person"))
	for _, v := range libpqVars {
		os.Unsetenv(v)
	}
	expectCLI(t, 0, []string{"valid (1 collection); give --source"}, "validate", "--mapping", example(t, "person"))
}

// TestDefaultTargetRead (issue 28): status and verify without --target
// (and without DENORM_TARGET) do not silently read ./denorm-out and
// report "no jobs" with exit 0: when it is not there, or holds no jobs
// (status), they fail with a usage error naming it; when it holds what
// migrate wrote, they say on stderr that they read it.
func TestDefaultTargetRead(t *testing.T) {
	src := seedDB(t)
	mapping := example(t, "person")
	t.Chdir(t.TempDir())
	t.Setenv("DENORM_TARGET", "")
	expectCLI(t, exitUsage, []string{"no --target given, and there is no ./denorm-out (migrate's default target) here: give --target"}, "status")
	expectCLI(t, exitUsage, []string{"no --target given, and there is no ./denorm-out (migrate's default target) here: give --target"}, "verify", "--mapping", mapping, "--source", src)
	if err := os.Mkdir("denorm-out", 0o755); err != nil {
		t.Fatal(err)
	}
	expectCLI(t, exitUsage, []string{"reading ./denorm-out, migrate's default target", "no --target given, and ./denorm-out (migrate's default target) holds no jobs"}, "status")
	// What migrate writes there by default is read, and said to be.
	expectCLI(t, 0, nil, "migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--job", "d")
	expectCLI(t, 0, []string{"reading ./denorm-out, migrate's default target", "d"}, "status")
	expectCLI(t, 0, []string{"reading ./denorm-out, migrate's default target"}, "verify", "--mapping", mapping, "--source", src)
	// An explicit target is read as given: an empty one has no jobs.
	empty := t.TempDir()
	out := expectCLI(t, 0, []string{"no jobs in"}, "status", "--target", empty)
	if strings.Contains(out, "default target") {
		t.Errorf("status --target: %s", out)
	}
}

// TestFlagsAgree (issue 28): a flag name means one thing with one
// default in every command that takes it. The test walks every command's
// flags and fails when one name has different defaults, or different
// help texts, in two commands - unless the difference is listed below
// with why it is justified. A listed difference that no longer exists
// fails too, so that the list stays true.
func TestFlagsAgree(t *testing.T) {
	// Flags whose default differs between commands, and why.
	defaults := map[string]string{
		// migrate writes ./denorm-out when no target is given (the
		// five-minute walk), and status and verify read it only when it
		// is there, saying so (defaultTargetRead); sync writes a server
		// only, and validate's target is optional: neither has a
		// default.
		"target": "migrate, status, verify: denorm-out; sync, validate: none",
	}
	// Flags whose help differs between commands, and why: the same
	// meaning said in each command's terms, or a justified difference.
	usages := map[string]string{
		"target":            "where a directory is allowed (not sync), optional (validate), a default read only when there (status, verify)",
		"drop":              "sync --drop is the hidden, deprecated old name of --drop-slot (it never meant migrate's --drop); it warns when used",
		"source":            "status reads the source only to show logical jobs' slots (optional)",
		"job":               "the job is named by migrate and sync, chosen by status and verify",
		"limit":             "migrate writes the first N documents, verify expects them",
		"fail-on-uncovered": "migrate refuses to write, verify changes its exit code",
		"rejects":           "migrate truncates its rejects file, sync appends to it (a job runs many passes)",
		"sample":            "plan samples root rows, verify documents",
		"temp-dir":          "what each command sorts",
		"sort-memory":       "sync's diff sorts, verify's four sorts",
		"max-doc-size":      "plan predicts the limit, migrate and sync reject over it",
		"workers":           "sync's workers read only the initial copy",
		"max-fanout":        "advise writes the flag in its draft, plan in its report",
		"format":            "plan and status have different formats",
		"output":            "advise writes a mapping, plan a report",
		"report":            "advise writes its choices as Markdown, verify its differences as JSON",
		"sync":              "migrate creates the slot, validate checks what sync needs",
		"batch-size":        "what each command does with a batch (plan and verify do not write)",
		"collections":       "migrate runs, verify verifies the chosen collections",
		"metrics-addr":      "migrate serves metrics for the whole run, sync only while it loops (--every or --follow)",
	}
	type use struct{ cmd, def, usage string }
	seen := map[string][]use{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			seen[f.Name] = append(seen[f.Name], use{c.CommandPath(), f.DefValue, f.Usage})
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(&globals{stdout: io.Discard, stderr: io.Discard}))
	differs := func(uses []use, field func(use) string) bool {
		for _, u := range uses[1:] {
			if field(u) != field(uses[0]) {
				return true
			}
		}
		return false
	}
	for name, uses := range seen {
		if len(uses) < 2 {
			continue
		}
		list := func(field func(use) string) string {
			var b strings.Builder
			for _, u := range uses {
				fmt.Fprintf(&b, "\n  %s: %q", u.cmd, field(u))
			}
			return b.String()
		}
		def := func(u use) string { return u.def }
		usage := func(u use) string { return u.usage }
		if d := differs(uses, def); d != (defaults[name] != "") {
			t.Errorf("--%s: default differs across commands: %v, listed as justified: %v%s", name, d, defaults[name] != "", list(def))
		}
		if d := differs(uses, usage); d != (usages[name] != "") {
			t.Errorf("--%s: help differs across commands: %v, listed as justified: %v%s", name, d, usages[name] != "", list(usage))
		}
	}
	for name := range usages {
		if len(seen[name]) < 2 {
			t.Errorf("--%s is listed but taken by fewer than two commands", name)
		}
	}
	// --retry-for: one default, one meaning.
	for _, u := range seen["retry-for"] {
		if u.def != defaultRetryFor.String() || u.usage != retryForUsage {
			t.Errorf("%s --retry-for: default %s, help %q", u.cmd, u.def, u.usage)
		}
	}
	if len(seen["retry-for"]) != 3 {
		t.Errorf("--retry-for in %d commands, want migrate, sync and verify", len(seen["retry-for"]))
	}
}

// targetCollections lists the collections of the target database at uri
// (each has at least its _id index once it exists).
func targetCollections(t *testing.T, db *mongo.Database) []string {
	t.Helper()
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestLogicalChecksBeforeIndexes (issue 28): a logical sync that cannot
// start - wal_level below logical, or a slot of the job's name that
// exists already - is refused before it makes anything on the target:
// no collection, no index.
func TestLogicalChecksBeforeIndexes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server: skipped in the short suite")
	}
	mapping := example(t, "blog") // an index on posts, a bucket index on comments
	t.Run("wal_level replica", func(t *testing.T) {
		url, restart := testenv.PrivatePostgres(t)
		testenv.PsqlFile(t, url, repoPath(t, "testdata", "examples", "seed.sql"))
		testenv.PsqlFile(t, url, repoPath(t, identityFull))
		testenv.Exec(t, url, "ALTER SYSTEM SET wal_level = replica")
		restart()
		uri, db := testenv.MongoDB(t)
		out := expectCLI(t, exitRuntime, []string{"the source has wal_level = replica; logical replication needs wal_level = logical"},
			"sync", "--mapping", mapping, "--source", url, "--target", uri, "--job", "wl", "--method", "logical", "--once")
		if strings.Contains(out, "creating") {
			t.Errorf("indexes announced before the refusal:\n%s", out)
		}
		if names := targetCollections(t, db); len(names) != 0 {
			t.Errorf("the refused sync made collections (and their indexes) %v", names)
		}
	})
	t.Run("slot taken", func(t *testing.T) {
		db := syncDB(t, "testdata/examples/seed.sql")
		uri, tdb := testenv.MongoDB(t)
		jb := syncJob(t, db)
		testenv.Exec(t, db, "SELECT pg_create_logical_replication_slot('denorm_"+jb+"', 'pgoutput')")
		out := expectCLI(t, exitRuntime, []string{"replication slot denorm_" + jb + " exists"},
			"sync", "--mapping", mapping, "--source", db, "--target", uri, "--job", jb, "--method", "logical", "--once")
		if strings.Contains(out, "creating") {
			t.Errorf("indexes announced before the refusal:\n%s", out)
		}
		// The job's record store (_denorm: its lease) is there; no
		// collection of the mapping is.
		if names := targetCollections(t, tdb); slices.Contains(names, "posts") || slices.Contains(names, "comments") {
			t.Errorf("the refused sync made collections (and their indexes) %v", names)
		}
	})
}

// TestSyncIndexLine (issue 28): sync announces an index only when it
// creates it: a --follow run of several passes says so once per
// collection, and a later run, the indexes being there, not at all.
func TestSyncIndexLine(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	db := syncDB(t, "testdata/examples/seed.sql")
	uri, _ := testenv.MongoDB(t)
	jb := syncJob(t, db)
	mapping := example(t, "blog")
	f := startFollow(t, "sync", "--mapping", mapping, "--source", db, "--target", uri, "--job", jb, "--method", "logical", "--follow")
	for i := 1; i <= 3; i++ {
		testenv.Exec(t, db, fmt.Sprintf("UPDATE comment SET comment = comment || '%d' WHERE id = (SELECT min(id) FROM comment)", i))
		want := fmt.Sprintf(`denorm_sync_passes_total{job_name="%s",method="logical"} %d`, jb, i)
		for deadline := time.Now().Add(time.Minute); !strings.Contains(f.metrics(), want); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no pass %d within a minute:\n%s", i, f.metrics())
			}
		}
	}
	f.stop()
	if code := f.wait(t); code != 0 {
		t.Fatalf("sync --follow: exit %d\n%s", code, f.out.String())
	}
	out := f.out.String()
	for _, coll := range []string{"posts", "comments"} {
		if n := strings.Count(out, "index on "+coll+":"); n != 1 {
			t.Errorf("sync --follow of 3 passes announced the index of %s %d times, want once:\n%s", coll, n, out)
		}
	}
	out = expectCLI(t, 0, nil, "sync", "--mapping", mapping, "--source", db, "--target", uri, "--job", jb, "--once")
	if strings.Contains(out, "creating") {
		t.Errorf("a sync finding its indexes announced them again:\n%s", out)
	}
}
