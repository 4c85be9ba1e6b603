package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// TestUnstorableKeys: documents no target can hold as built - a key from
// a jsonb value or a pivot's data that starts with "$" or holds ".", an
// empty key, a pivot named like its sibling field, nesting deeper than
// 100 levels - reject their rows (exit 3, listed with --rejects) and are
// never written, on a directory (where {"$date": 0} would read back as a
// date) and on FerretDB; the other rows are written, a document exactly
// 100 levels deep included. plan reports the same documents.
func TestUnstorableKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `CREATE TABLE item (id int PRIMARY KEY, name text NOT NULL, doc jsonb);
CREATE TABLE attr_kind (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE attr (id int PRIMARY KEY, item_id int NOT NULL REFERENCES item, kind_id int NOT NULL REFERENCES attr_kind, val text, note text);
INSERT INTO attr_kind VALUES (1, 'color'), (2, 'note'), (3, '$set'), (4, 'e.mail');
-- nesting: the document is level 1, and each jsonb object in its field
-- doc one more: 99 objects make 100 levels, 100 objects 101.
INSERT INTO item VALUES
  (1, 'fine', '{"ok": {"nested": [1, {"a$": 2}]}}'),
  (2, 'dollar', '{"when": {"$date": 0}}'),
  (3, 'dot', '{"a.b": 1}'),
  (4, 'in array', '{"x": [1, {"$where": "1"}]}'),
  (5, 'empty key', '{"": 1}'),
  (6, '101 levels', (repeat('{"a":', 100) || '1' || repeat('}', 100))::jsonb),
  (7, '100 levels', (repeat('{"a":', 99) || '1' || repeat('}', 99))::jsonb),
  (8, 'pivot = sibling', NULL),
  (9, 'pivot $', NULL),
  (10, 'pivot .', NULL),
  (11, 'pivot fine', NULL);
INSERT INTO attr VALUES (1, 1, 1, 'red', 'n'), (2, 8, 2, 'x', 'n'), (3, 9, 3, 'x', NULL), (4, 10, 4, 'a@b', NULL), (5, 11, 1, 'blue', 'n');`)
	mapping := filepath.Join(t.TempDir(), "items.yaml")
	if err := os.WriteFile(mapping, []byte(`version: 1
collections:
  - name: items
    table: item
    fields:
      - name
      - doc
      - name: attrs
        embed:
          table: attr
          join: {item_id: id}
          orderBy: id
          lookups:
            - name: kind
              table: attr_kind
              join: {id: kind_id}
          fields:
            - key: kind.name
              column: val
            - note
`), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRejected := map[string]string{
		"2": `"doc.when.$date"`, "3": `"doc.a.b"`, "4": `"doc.x.1.$where"`, "5": `"doc."`, "6": "nested deeper than 100 levels",
		"8": `"attrs.0.note"`, "9": `"attrs.0.$set"`, "10": `"attrs.0.e.mail"`,
	}
	wantWritten := []string{`"name":"fine"`, `"name":"100 levels"`, `"name":"pivot fine"`}

	// plan sees them before anything is written.
	var rep struct {
		Collections []struct {
			Unstorable *struct {
				Count int `json:"count"`
				Docs  []struct {
					Source, Reason string
				} `json:"docs"`
			} `json:"unstorable"`
		} `json:"collections"`
		Warnings []struct{ Rule, Message string } `json:"warnings"`
	}
	code, out, errs := runCLI(t, "plan", "--format", "json", "--mapping", mapping, "--source", src)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	if len(rep.Collections) != 1 || rep.Collections[0].Unstorable == nil || rep.Collections[0].Unstorable.Count != len(wantRejected) ||
		!slices.ContainsFunc(rep.Warnings, func(w struct{ Rule, Message string }) bool {
			return w.Rule == "unstorable" && strings.Contains(w.Message, "8 documents cannot be stored")
		}) {
		t.Errorf("plan: %+v", rep)
	}
	text := expectCLI(t, 0, nil, "plan", "--mapping", mapping, "--source", src)
	if !strings.Contains(text, "8 documents cannot be stored as built") {
		t.Errorf("plan's text report lacks the warning:\n%s", text)
	}

	dirTarget := filepath.Join(t.TempDir(), "out")
	server, db := testenv.MongoDB(t)
	for _, target := range []string{dirTarget, server} {
		rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
		expectCLI(t, exitRejected, []string{"8 rows were rejected"}, "migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", target, "--rejects", rejects)
		got := map[string]string{}
		for _, r := range readRejects(t, rejects) {
			got[r.Source] = r.Error
		}
		for id, why := range wantRejected {
			if msg := got["item (id)=("+id+")"]; !strings.Contains(msg, why) || !strings.Contains(msg, "filter the row") {
				t.Errorf("%s: item %s rejected with %q, want a message with %s", target, id, msg, why)
			}
		}
		if len(got) != len(wantRejected) {
			t.Errorf("%s: rejected %v", target, got)
		}
		var docs []string
		if target == dirTarget {
			docs = testenv.ReadLines(t, filepath.Join(dirTarget, "items.jsonl"))
		} else {
			docs = testenv.DumpCollection(t, db, "items")
		}
		if len(docs) != len(wantWritten) {
			t.Errorf("%s: %d documents written, want %d:\n%s", target, len(docs), len(wantWritten), strings.Join(docs, "\n"))
		}
		for _, w := range wantWritten {
			if !slices.ContainsFunc(docs, func(d string) bool { return strings.Contains(d, w) }) {
				t.Errorf("%s: no document with %s", target, w)
			}
		}
		// verify lists the rejected rows as unbuildable.
		code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", target)
		if code != exitRuntime || !strings.Contains(out, "unbuildable") || !strings.Contains(out, `doc.when.$date`) {
			t.Errorf("%s: verify: exit %d\n%s%s", target, code, out, errs)
		}
	}
}
