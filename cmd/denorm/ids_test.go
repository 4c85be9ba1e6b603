package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// sharedMapping puts books and reviews in one collection; prefix adds
// idPrefix to both.
func sharedMapping(t *testing.T, prefix bool) string {
	t.Helper()
	p1, p2 := "", ""
	if prefix {
		p1, p2 = "    idPrefix: \"book-\"\n", "    idPrefix: \"review-\"\n"
	}
	m := `version: 1
collections:
  - name: things
    table: b
    discriminator: type
` + p1 + `    fields: [title, {name: type, value: book}]
  - name: things
    table: r
    discriminator: type
` + p2 + `    fields: [body, {name: type, value: review}]
`
	file := filepath.Join(t.TempDir(), "shared.yaml")
	if err := os.WriteFile(file, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestIDCollisions: document types sharing a collection whose ids are
// equal are refused by validate (with the count and an example) and
// flagged by plan; ids of one kind that do not meet yet are a warning;
// a directory target holding two documents with one _id is reported by
// verify as duplicates (exit 1); idPrefix makes the _ids distinct, and
// must then be set on every type, none the beginning of another.
func TestIDCollisions(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE b (id int PRIMARY KEY, title text);
CREATE TABLE r (id int PRIMARY KEY, body text);
INSERT INTO b SELECT i, 'book ' || i FROM generate_series(1, 3) i;
INSERT INTO r SELECT i, 'review ' || i FROM generate_series(2, 6) i;`)
	disjoint := testenv.PostgresDB(t)
	testenv.Exec(t, disjoint, `
CREATE TABLE b (id int PRIMARY KEY, title text);
CREATE TABLE r (id int PRIMARY KEY, body text);
INSERT INTO b VALUES (1, 'x'), (3, 'y');
INSERT INTO r VALUES (2, 'z');`)
	plain, prefixed := sharedMapping(t, false), sharedMapping(t, true)

	code, out, errs := runCLI(t, "validate", "--mapping", plain, "--source", src)
	if code != exitUsage || !strings.Contains(errs, `collection "things": the b and r document types (tables b and r) both have number _ids, and 2 of them are equal (e.g. (2))`) || !strings.Contains(errs, "idPrefix") {
		t.Errorf("validate with equal ids: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "validate", "--mapping", plain, "--source", disjoint)
	if code != 0 || !strings.Contains(errs, "warning:") || !strings.Contains(errs, "in overlapping ranges ((1)..(3) and (2)..(2)); none is equal today, but a new row could") {
		t.Errorf("validate with disjoint ids: exit %d\n%s%s", code, out, errs)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if code, out, errs := runCLI(t, "plan", "--mapping", plain, "--source", src, "--format", "json", "--output", planFile); code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Warnings []struct{ Severity, Rule, Message string }
	}
	raw, err := os.ReadFile(planFile)
	if err == nil {
		err = json.Unmarshal(raw, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	flagged := false
	for _, w := range rep.Warnings {
		flagged = flagged || (w.Rule == "id-collision" && w.Severity == "error" && strings.Contains(w.Message, "2 of them are equal"))
	}
	if !flagged {
		t.Errorf("plan does not flag the collision: %+v", rep.Warnings)
	}

	// migrate does not stop it (validate does): verify must see it.
	dir := filepath.Join(t.TempDir(), "out")
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", plain, "--source", src, "--target", dir); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	report := filepath.Join(t.TempDir(), "verify.json")
	code, out, errs = runCLI(t, "verify", "--mapping", plain, "--source", src, "--target", dir, "--report", report)
	if code != 1 {
		t.Fatalf("verify of duplicate _ids: exit %d, want 1\n%s%s", code, out, errs)
	}
	dups := map[string]int{}
	for _, d := range readReport(t, report).Differences {
		if d.Kind == "duplicate" {
			dups[string(d.ID)]++
		}
	}
	// _ids 2 and 3: each given twice by the source and held twice.
	if dups["2"] != 2 || dups["3"] != 2 || len(dups) != 2 {
		t.Errorf("duplicates reported: %v\n%s", dups, out)
	}

	// idPrefix: valid, distinct _ids, verify identical.
	if code, out, errs := runCLI(t, "validate", "--mapping", prefixed, "--source", src); code != 0 || strings.Contains(errs, "warning") {
		t.Fatalf("validate with idPrefix: exit %d\n%s%s", code, out, errs)
	}
	dir2 := filepath.Join(t.TempDir(), "out2")
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", prefixed, "--source", src, "--target", dir2); code != 0 {
		t.Fatalf("migrate with idPrefix: exit %d\n%s%s", code, out, errs)
	}
	lines := testenv.ReadLines(t, filepath.Join(dir2, "things.jsonl"))
	all := strings.Join(lines, "\n")
	if len(lines) != 8 || !strings.Contains(all, `{"_id":"book-2","title":"book 2","type":"book"}`) || !strings.Contains(all, `{"_id":"review-2","body":"review 2","type":"review"}`) {
		t.Errorf("documents with idPrefix:\n%s", all)
	}
	if code, out, errs := runCLI(t, "verify", "--mapping", prefixed, "--source", src, "--target", dir2); code != 0 {
		t.Errorf("verify with idPrefix: exit %d\n%s%s", code, out, errs)
	}

	// idPrefix on every type, none the beginning of another.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	text := strings.Replace(strings.Replace(string(mustRead(t, prefixed)), `"review-"`, `"book-x"`, 1), "    idPrefix: \"book-\"\n", "    idPrefix: \"book-\"\n", 1)
	if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "validate", "--mapping", bad); code != exitUsage || !strings.Contains(errs, `idPrefix "book-x" and "book-" (line 6) can begin the same _id`) {
		t.Errorf("prefixes that begin each other: exit %d\n%s", code, errs)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
