package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
)

// TestRerunDefaultBatchFerretDB reruns a finished job into FerretDB at the
// default settings (batch size 1000), with every source row changed.
// FerretDB 1.24 stalls on a bulk write of 100 or more replaces of
// existing documents, and finds a document by an integer _id by scanning
// the collection, so replacing every document made a rerun hang, then
// quadratic: a fresh run there empties its collections first
// (load.Caps.EmptyFirst) and only inserts. The rerun must finish, write
// every document with the source's new contents, leave none twice, and
// say what it deleted. Both runs' times are logged (not asserted: timings
// belong in benchmarks).
func TestRerunDefaultBatchFerretDB(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	const persons = 5000
	src := personsDB(t, persons)
	target, db := testenv.MongoDB(t)
	args := []string{"migrate", "-q", "--progress", "none", "--mapping", example(t, "person"), "--source", src, "--target", target, "--job", "rerun"}
	timed := func(want ...string) time.Duration {
		t.Helper()
		start := time.Now()
		expectCLI(t, 0, want, args...)
		return time.Since(start)
	}
	first := timed()
	before := testenv.DumpCollection(t, db, "people")
	if len(before) != persons+2 {
		t.Fatalf("first run: %d people, want %d", len(before), persons+2)
	}
	testenv.Exec(t, src, `UPDATE person SET last_name = 'Rerun ' || id`)
	rerun := timed("FerretDB: deleted the documents an earlier run wrote before writing them again")
	after := testenv.DumpCollection(t, db, "people")
	if len(after) != persons+2 {
		t.Fatalf("rerun: %d people, want %d", len(after), persons+2)
	}
	for _, d := range after {
		if !strings.Contains(d, `"lastName":"Rerun `) && !strings.Contains(d, `"last_name":"Rerun `) {
			t.Fatalf("a document the rerun did not write again: %s", d)
		}
	}
	t.Logf("%d documents at the default batch size into FerretDB: first run %s, rerun %s (%.2fx)",
		persons+2, first.Round(time.Millisecond), rerun.Round(time.Millisecond), rerun.Seconds()/first.Seconds())
}

// TestNumericFerretDB: FerretDB 1.24 closes the connection on a BSON
// Decimal128, which denorm would take for an outage and retry for the
// whole --retry-for. A mapping writing NUMERIC in numeric mode decimal
// (the default) is refused by validate --target and by migrate before
// anything is written, naming each field and the two ways out; with
// numeric: string or double the same data migrates; a Decimal128 only
// the data makes (a jsonb number beyond a double's precision) rejects its
// row, and the rest is written.
func TestNumericFerretDB(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `CREATE TABLE acct (id int PRIMARY KEY, name text NOT NULL, balance numeric(12,2), doc jsonb);
CREATE TABLE line (id int PRIMARY KEY, acct_id int NOT NULL REFERENCES acct, amount numeric);
INSERT INTO acct SELECT g, 'a' || g, g * 1.25, '{"n": 1}' FROM generate_series(1, 50) g;
INSERT INTO line SELECT g, 1 + g % 50, g / 4.0 FROM generate_series(1, 120) g;
UPDATE acct SET doc = '{"big": 1234567890123456789012.5}' WHERE id = 7;`)
	target, db := testenv.MongoDB(t)
	dir := t.TempDir()
	mapping := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const body = `collections:
  - name: accounts
    table: acct
    fields:
      - name
      - balance
      - name: lines
        embed: {table: line, join: {acct_id: id}, orderBy: id, fields: [amount]}
      - {name: total, aggregate: {table: line, join: {acct_id: id}, fn: sum, column: amount}}
`
	decimal := mapping("decimal.yaml", "version: 1\n"+body)
	want := []string{"decimal.yaml:", "accounts.balance: NUMERIC is written as BSON Decimal128", "accounts.lines[].amount:", "accounts.total:",
		"which the target (FerretDB", "cannot store", "`numeric: double`", "`numeric: string`"}
	expectCLI(t, 2, want, "validate", "--mapping", decimal, "--source", src, "--target", target)
	expectCLI(t, 2, []string{"--target needs --source"}, "validate", "--mapping", decimal, "--target", target)
	start := time.Now()
	expectCLI(t, 2, want, "migrate", "-q", "--progress", "none", "--mapping", decimal, "--source", src, "--target", target, "--job", "n")
	if took := time.Since(start); took > time.Minute {
		t.Errorf("migrate took %s to refuse (--retry-for is 5 minutes)", took)
	}
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil || len(names) != 0 {
		t.Fatalf("the refused migrate wrote collections %v (%v)", names, err)
	}
	for _, mode := range []string{"string", "double"} {
		m := mapping(mode+".yaml", "version: 1\nnumeric: "+mode+"\n"+body)
		expectCLI(t, 0, []string{"valid against the source database"}, "validate", "--mapping", m, "--source", src, "--target", target)
		expectCLI(t, 0, nil, "migrate", "-q", "--progress", "none", "--mapping", m, "--source", src, "--target", target, "--job", mode, "--restart")
		docs := testenv.DumpCollection(t, db, "accounts")
		wantBalance := `"balance":"3.75"`
		if mode == "double" {
			wantBalance = `"balance":3.75`
		}
		if len(docs) != 50 || !slices.ContainsFunc(docs, func(d string) bool { return strings.Contains(d, wantBalance) }) {
			t.Errorf("numeric: %s: %d documents, none with %s: %v", mode, len(docs), wantBalance, docs[:min(2, len(docs))])
		}
	}

	// No NUMERIC column: only row 7's jsonb holds a Decimal128.
	onlyJSON := mapping("json.yaml", "version: 1\ncollections:\n  - name: docs\n    table: acct\n    fields: [name, doc]\n")
	expectCLI(t, 0, nil, "validate", "--mapping", onlyJSON, "--source", src, "--target", target)
	rejects := filepath.Join(dir, "rejects.jsonl")
	start = time.Now()
	expectCLI(t, exitRejected, []string{"1 rows were rejected"}, "migrate", "--progress", "none", "--mapping", onlyJSON, "--source", src, "--target", target, "--rejects", rejects)
	if took := time.Since(start); took > time.Minute {
		t.Errorf("migrate took %s", took)
	}
	lines := testenv.ReadLines(t, rejects)
	if len(lines) != 1 || !strings.Contains(lines[0], "Decimal128") || !strings.Contains(lines[0], "numeric: double") || !strings.Contains(lines[0], "7") {
		t.Errorf("rejects: %v", lines)
	}
	if docs := testenv.DumpCollection(t, db, "docs"); len(docs) != 49 {
		t.Errorf("%d documents written, want the 49 without a Decimal128", len(docs))
	}
}
