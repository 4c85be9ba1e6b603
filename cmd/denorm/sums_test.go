package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// Sums and averages of real, double precision and interval values are
// exact, rounded once, whatever order PostgreSQL adds the rows in; one
// beyond its type's range rejects the row of its document (PostgreSQL's
// own sum ends the query). migrate into both targets, and verify and
// verify --oracle sql agree with it.
const sumRows = `
CREATE TABLE g (id int PRIMARY KEY);
CREATE TABLE x (id int PRIMARY KEY, g int REFERENCES g, d float8, r real, i interval);
INSERT INTO g VALUES (1), (2), (3), (4), (5), (6), (7);
INSERT INTO x VALUES
  -- partial sums overflow in PostgreSQL's order, the exact sum does not
  (1, 1, 1.7976931348623157e308, 1, '1 day'), (2, 1, 1.7976931348623157e308, 2, '2 hours'), (3, 1, -1.7976931348623157e308, 3, '-1 mon'),
  -- the sums overflow
  (4, 2, 1.7976931348623157e308, 3e38, '178000000 years'), (5, 2, 1.7976931348623157e308, 3e38, '178000000 years'),
  -- order-dependent in floating point (1e16 + 1 - 1e16 is 0 in primary
  -- key order, 1 in others): exact, 1; the reals' shortest decimals sum
  -- to 0.6 (PostgreSQL's own avg of them is 0.2000000054637591)
  (6, 3, 1e16, 0.1, '1.5 seconds'), (7, 3, 1, 0.2, '0.000001 seconds'), (8, 3, -1e16, 0.3, '-1 day'),
  -- special values
  (9, 4, 'Infinity', 'NaN', NULL), (10, 4, 1, 1, NULL), (11, 5, 'Infinity', 'Infinity', NULL), (12, 5, '-Infinity', 1, NULL),
  -- NULLs only: no sum (the field is left out), but a count
  (13, 6, NULL, NULL, NULL);
-- g 7 has no rows: sums are 0, averages left out. Interval averages are
-- PostgreSQL's division of the exact sum ('-1 mons +1 day 02:00:00' / 3
-- is '-10 days +08:40:00').
`

const sumMapping = `version: 1
collections:
  - name: g
    table: g
    fields:
      - {name: sd, aggregate: {fn: sum, table: x, join: {g: id}, column: d}}
      - {name: ad, aggregate: {fn: avg, table: x, join: {g: id}, column: d}}
      - {name: sr, aggregate: {fn: sum, table: x, join: {g: id}, column: r}}
      - {name: ar, aggregate: {fn: avg, table: x, join: {g: id}, column: r}}
      - {name: si, aggregate: {fn: sum, table: x, join: {g: id}, column: i}}
      - {name: ai, aggregate: {fn: avg, table: x, join: {g: id}, column: i}}
`

func TestSumsExactOrRejected(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, sumRows)
	mapping := filepath.Join(t.TempDir(), "sums.yaml")
	if err := os.WriteFile(mapping, []byte(sumMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRejects := map[string]string{
		"g (id)=(2)": `g: field "sd": column "sum": the sum of the double precision values, 3595386269724631400000000000...0000000000000000000000000000 (309 characters), is out of range for double precision`,
	}
	wantDocs := []string{
		`{"_id":1,"sd":1.7976931348623157e+308,"ad":5.992310449541053e+307,"sr":6,"ar":2,"si":"-1 mons +1 day 02:00:00","ai":"-10 days +08:40:00"}`,
		`{"_id":3,"sd":1,"ad":0.3333333333333333,"sr":0.6,"ar":0.2,"si":"-1 days +00:00:01.500001","ai":"-07:59:59.5"}`,
		`{"_id":4,"sd":{"$numberDouble":"Infinity"},"ad":{"$numberDouble":"Infinity"},"sr":{"$numberDouble":"NaN"},"ar":{"$numberDouble":"NaN"}}`,
		`{"_id":5,"sd":{"$numberDouble":"NaN"},"ad":{"$numberDouble":"NaN"},"sr":{"$numberDouble":"Infinity"},"ar":{"$numberDouble":"Infinity"}}`,
		`{"_id":6,"sd":0,"sr":0}`, // sums of NULLs only are 0, as of no rows
		`{"_id":7,"sd":0,"sr":0}`,
	}
	out := filepath.Join(t.TempDir(), "out")
	rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
	code, stdout, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", out, "--rejects", rejects)
	if code != exitRejected {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitRejected, stdout, errs)
	}
	checkRejects(t, rejects, wantRejects)
	testenv.EqualDocs(t, "g", wantDocs, testenv.ReadLines(t, filepath.Join(out, "g.jsonl")))
	for _, oracle := range [][]string{nil, {"--oracle", "sql"}} {
		args := append([]string{"verify", "--mapping", mapping, "--source", src, "--target", out}, oracle...)
		code, stdout, errs := runCLI(t, args...)
		// the rejected row is the one difference: a document that cannot
		// be built
		if code != exitRuntime || !strings.Contains(stdout, "unbuildable") {
			t.Errorf("verify %v: exit %d, want %d with the one unbuildable document\n%s%s", oracle, code, exitRuntime, stdout, errs)
		}
	}
}
