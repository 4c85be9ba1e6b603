package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
)

// rejectRows are rows whose values a document cannot hold: ±infinity
// timestamps, a JSON number beyond a double's range (numeric: double), a
// multi-dimensional array, and a NaN double (which FerretDB refuses by
// closing the connection); ticks join events on a timestamp, infinity
// included; a view of events is a root.
const rejectRows = `
CREATE TABLE event (id int PRIMARY KEY, at timestamptz NOT NULL UNIQUE, day date, data jsonb, grid int[], score float8, note text);
INSERT INTO event VALUES
  (1, '2024-01-01 10:00+00', '2024-01-01', '{"n": 1.5}', '{1,2}', 0.5, 'fine'),
  (2, 'infinity', '2024-01-02', NULL, NULL, NULL, 'at infinity'),
  (3, '2024-01-03 10:00+00', '-infinity', NULL, NULL, NULL, 'day -infinity'),
  (4, '2024-01-04 10:00+00', NULL, '{"n": 1e400}', NULL, NULL, 'json out of range'),
  (5, '2024-01-05 10:00+00', NULL, NULL, '{{1,2},{3,4}}', NULL, 'two dimensions'),
  (6, '2024-01-06 10:00+00', NULL, NULL, NULL, 'NaN', 'NaN'),
  (7, '-infinity', NULL, NULL, NULL, NULL, NULL),
  (8, '2024-01-08 10:00+00', '5874897-12-31', NULL, NULL, 1e308, 'far date');
CREATE TABLE tick (id int PRIMARY KEY, event_at timestamptz, n int);
INSERT INTO tick VALUES (1, 'infinity', 10), (2, '2024-01-01 10:00+00', 20), (3, '-infinity', 30), (4, '2024-01-09 10:00+00', 40);
CREATE VIEW recent_event AS SELECT id, note FROM event WHERE id > 5;
`

const rejectMapping = `version: 1
numeric: double
collections:
  - name: events
    table: event
  - name: eventsFixed
    table: event
    fields:
      - note
      - {name: atEpoch, sql: "extract(epoch from at)"}
      - {name: dataText, sql: "data::text"}
      - {name: cells, sql: "array_length(grid, 1) * coalesce(array_length(grid, 2), 1)"}
      - {name: score, sql: "CASE WHEN score = 'NaN' THEN NULL ELSE score END"}
  - name: ticks
    table: tick
    lookups:
      - {name: ev, table: event, join: {at: event_at}}
    fields:
      - n
      - {name: eventId, column: ev.id}
  - name: recent
    table: recent_event
    id: id
`

type rejectLine struct {
	Collection, Source, Error string
}

func readRejects(t *testing.T, path string) []rejectLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []rejectLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r rejectLine
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// checkRejects requires the reject file path to hold exactly want: the
// reason of each rejected row, by its source.
func checkRejects(t *testing.T, path string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, r := range readRejects(t, path) {
		got[r.Source] = r.Error
	}
	for src, msg := range want {
		if got[src] != msg {
			t.Errorf("%s: rejected with\n  %q, want\n  %q", src, got[src], msg)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rejected %v", got)
	}
}

// TestRejectsNotAborts: every value a document cannot hold rejects its
// row - listed in --rejects, exit 3 - never the run, on a directory and on
// a server target (where FerretDB's refusal of NaN is found within
// seconds, not retried for the retry period); infinite timestamps still
// join; fields computed by PostgreSQL (sql:) are the way out; a view is a
// root once the mapping names its id.
func TestRejectsNotAborts(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, rejectRows)
	mapping := filepath.Join(t.TempDir(), "rejects.yaml")
	if err := os.WriteFile(mapping, []byte(rejectMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "validate", "--mapping", mapping, "--source", src); code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errs)
	}
	mongoURI, db := testenv.MongoDB(t)
	for _, target := range []string{filepath.Join(t.TempDir(), "out"), mongoURI} {
		name := "directory"
		if target == mongoURI {
			name = "server"
		}
		t.Run(name, func(t *testing.T) {
			rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
			start := time.Now()
			code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", target, "--rejects", rejects)
			if code != exitRejected {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitRejected, out, errs)
			}
			if took := time.Since(start); took > time.Minute {
				t.Errorf("took %s: a refused document was retried", took)
			}
			want := map[string]string{
				"event (id)=(2)": "infinity",
				"event (id)=(3)": "-infinity",
				"event (id)=(4)": "out of range for a double",
				"event (id)=(5)": "2-dimensional array",
				"event (id)=(7)": "-infinity",
			}
			if name == "server" {
				want["event (id)=(6)"] = "closed the connection"
			}
			got := map[string]string{}
			for _, r := range readRejects(t, rejects) {
				if r.Collection != "events" {
					t.Errorf("rejected from %s: %+v", r.Collection, r)
					continue
				}
				got[r.Source] = r.Error
			}
			for src, msg := range want {
				if !strings.Contains(got[src], msg) {
					t.Errorf("%s: rejected with %q, want a message with %q", src, got[src], msg)
				}
			}
			if len(got) != len(want) {
				t.Errorf("rejected %v, want %v", got, want)
			}
			docs := func(coll string) []string {
				if name == "server" {
					return testenv.DumpCollection(t, db, coll)
				}
				return testenv.ReadLines(t, filepath.Join(target, coll+".jsonl"))
			}
			if n := len(docs("events")); n != 8-len(want) {
				t.Errorf("%d events written, want %d", n, 8-len(want))
			}
			fixed := docs("eventsFixed")
			if len(fixed) != 8 {
				t.Fatalf("%d fixed events, want 8:\n%s", len(fixed), strings.Join(fixed, "\n"))
			}
			for _, want := range []string{`"atEpoch":"Infinity"`, `"atEpoch":"-Infinity"`, `"atEpoch":1.7041032E+09`, `"cells":4`, `"dataText":"{\"n\": 10000000000`} {
				if !slices.ContainsFunc(fixed, func(d string) bool { return strings.Contains(d, want) }) {
					t.Errorf("no fixed event holds %s:\n%s", want, strings.Join(fixed, "\n"))
				}
			}
			ticks := strings.Join(docs("ticks"), "\n")
			for _, want := range []string{`"_id":1,"n":10,"eventId":2`, `"_id":2,"n":20,"eventId":1`, `"_id":3,"n":30,"eventId":7`, `"_id":4,"n":40}`} {
				if !strings.Contains(ticks, want) {
					t.Errorf("ticks do not hold %s:\n%s", want, ticks)
				}
			}
			if recent := docs("recent"); len(recent) != 3 {
				t.Errorf("recent events from the view: %v", recent)
			}
		})
	}
	// A rejects file that cannot be written (a full device) is an error
	// (exit 1), never a silent list cut short.
	code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", filepath.Join(t.TempDir(), "out"), "--rejects", "/dev/full")
	if want := "5 rows were rejected, but the rejects file /dev/full could not be written"; code != exitRuntime || !strings.Contains(errs, want) || !strings.Contains(errs, "no space left on device") {
		t.Errorf("--rejects /dev/full: exit %d, want %d saying %q\n%s%s", code, exitRuntime, want, out, errs)
	}
}

// TestSQLFieldVolatileRefused: validate refuses a sql: field calling a
// function PostgreSQL marks volatile, naming it.
func TestSQLFieldVolatileRefused(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `CREATE TABLE t (id int PRIMARY KEY, x int);`)
	mapping := filepath.Join(t.TempDir(), "volatile.yaml")
	if err := os.WriteFile(mapping, []byte(`version: 1
collections:
  - name: ts
    table: t
    fields:
      - {name: ok, sql: "round(x * 1.5)"}
      - {name: r, sql: "x + random()"}
      - {name: k, sql: "pg_terminate_backend(x)::int"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "validate", "--mapping", mapping, "--source", src)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitUsage, out, errs)
	}
	for _, want := range []string{`field "r": sql: calls random, which PostgreSQL marks volatile`, `field "k": sql: calls pg_terminate_backend`} {
		if !strings.Contains(errs, want) {
			t.Errorf("validate does not say %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, `"ok"`) {
		t.Errorf("validate refuses round:\n%s", errs)
	}
}
