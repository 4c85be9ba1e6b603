package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
)

// typedSQL is a source of every type family of the Types table, many
// documents (more than verify's pairing window, compare.pairWindow) each
// embedding a few lines.
const typedSQL = `
CREATE TABLE item (
  id    bigint PRIMARY KEY,
  n     numeric(15,2) NOT NULL,
  f     double precision NOT NULL,
  i     integer NOT NULL,
  d     date NOT NULL,
  ts    timestamptz NOT NULL,
  c     char(8) NOT NULL,
  v     varchar(40) NOT NULL,
  u     uuid NOT NULL,
  b     boolean NOT NULL,
  bin   bytea NOT NULL,
  arr   integer[] NOT NULL,
  j     jsonb NOT NULL
);
CREATE TABLE item_line (
  item_id bigint NOT NULL REFERENCES item(id),
  line_no integer NOT NULL,
  qty     numeric(12,3) NOT NULL,
  note    text,
  PRIMARY KEY (item_id, line_no)
);
INSERT INTO item
SELECT g, round(g / 7.0, 2), g / 8.0, g * 3, date '2020-01-01' + g % 1000,
       timestamptz '2021-03-04 05:06:07.123+00' + g * interval '1 minute',
       'C' || g % 100, 'item ' || g, md5(g::text)::uuid, g % 2 = 0,
       decode(lpad(to_hex(g), 8, '0'), 'hex'), ARRAY[g, g + 1, g + 2],
       jsonb_build_object('k', g, 'tags', jsonb_build_array('a', 'b'))
FROM generate_series(1, 6000) g;
INSERT INTO item_line
SELECT g, l, (g * l) / 8.0, CASE WHEN l = 2 THEN NULL ELSE 'line ' || l END
FROM generate_series(1, 6000) g, generate_series(1, 3) l;
`

const typedMapping = `version: 1
collections:
  - name: items
    table: item
    fields:
      - n
      - f
      - i
      - d
      - ts
      - c
      - v
      - u
      - b
      - bin
      - arr
      - j
      - name: lines
        embed:
          table: item_line
          join: {item_id: id}
          orderBy: line_no
          fields: [line_no, qty, note]
`

// bump changes the value at a dotted path to another value of the same
// BSON type: the smallest damage verify must see for each type family.
func bump(path string) func(bson.D) bson.D {
	return func(d bson.D) bson.D {
		return at(d, strings.Split(path, "."), func(v any) any {
			switch x := v.(type) {
			case int32:
				return x + 1
			case int64:
				return x + 1
			case float64:
				return x + 0.5
			case bson.Decimal128:
				dec, err := bson.ParseDecimal128(x.String() + "1")
				if err != nil {
					panic(err)
				}
				return dec
			case string:
				return x + "x"
			case bson.DateTime:
				return x + 1
			case bool:
				return !x
			case bson.Binary:
				data := bytes.Clone(x.Data)
				data[len(data)-1] ^= 1
				return bson.Binary{Subtype: x.Subtype, Data: data}
			}
			panic(fmt.Sprintf("bump: no change for %T at %s", v, path))
		}).(bson.D)
	}
}

// TestVerifyPairedFindsTampering: verify skips spilling the expected
// documents it meets in the target's order (compare.Pair) and reads a
// directory's documents back from its files (load.OffsetScanner); it
// must still find one changed value of each type family (top level and
// embedded), a changed array order, a missing and an unexpected document,
// on both kinds of target, in a source larger than the pairing window;
// and, in a directory, an _id held twice whose first copy is damaged and
// whose second is the source's (the expected document's twin is then the
// second copy).
func TestVerifyPairedFindsTampering(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	sqlFile := filepath.Join(t.TempDir(), "typed.sql")
	if err := os.WriteFile(sqlFile, []byte(typedSQL), 0o644); err != nil {
		t.Fatal(err)
	}
	src := testenv.PostgresDB(t, sqlFile)
	// FerretDB cannot store a Decimal128: numerics are doubles there.
	mappings := map[string]string{
		"directory": writeMapping(t, typedMapping),
		"server":    writeMapping(t, strings.Replace(typedMapping, "version: 1\n", "version: 1\nnumeric: double\n", 1)),
	}
	tampers := []tamper{
		{op: "edit", coll: "items", id: "10", fn: bump("n")},             // numeric: Decimal128, or double
		{op: "edit", coll: "items", id: "20", fn: bump("f")},             // double
		{op: "edit", coll: "items", id: "30", fn: bump("i")},             // int32
		{op: "edit", coll: "items", id: "40", fn: bump("d")},             // date
		{op: "edit", coll: "items", id: "50", fn: bump("ts")},            // timestamptz
		{op: "edit", coll: "items", id: "60", fn: bump("c")},             // char(n)
		{op: "edit", coll: "items", id: "70", fn: bump("v")},             // varchar
		{op: "edit", coll: "items", id: "80", fn: bump("u")},             // uuid
		{op: "edit", coll: "items", id: "90", fn: bump("b")},             // bool
		{op: "edit", coll: "items", id: "100", fn: bump("bin")},          // bytea
		{op: "edit", coll: "items", id: "110", fn: bump("arr.1")},        // array item
		{op: "edit", coll: "items", id: "120", fn: bump("j.k")},          // jsonb
		{op: "edit", coll: "items", id: "4500", fn: bump("lines.2.qty")}, // embedded, past the window
		{op: "edit", coll: "items", id: "5000", fn: reverse("lines")},    // array order
		{op: "delete", coll: "items", id: "5999"},
		{op: "insert", coll: "items", doc: `{"_id": 99999, "v": "stray"}`},
	}
	want := []finding{
		{kind: "different", coll: "items", id: "10", path: "n"},
		{kind: "different", coll: "items", id: "20", path: "f"},
		{kind: "different", coll: "items", id: "30", path: "i"},
		{kind: "different", coll: "items", id: "40", path: "d"},
		{kind: "different", coll: "items", id: "50", path: "ts"},
		{kind: "different", coll: "items", id: "60", path: "c"},
		{kind: "different", coll: "items", id: "70", path: "v"},
		{kind: "different", coll: "items", id: "80", path: "u"},
		{kind: "different", coll: "items", id: "90", path: "b"},
		{kind: "different", coll: "items", id: "100", path: "bin"},
		{kind: "different", coll: "items", id: "110", path: "arr.1"},
		{kind: "different", coll: "items", id: "120", path: "j.k"},
		{kind: "different", coll: "items", id: "4500", path: "lines.2.qty"},
		{kind: "different", coll: "items", id: "5000", path: "lines", note: "same items in a different order"},
		{kind: "missing", coll: "items", id: "5999"},
		{kind: "unexpected", coll: "items", id: "99999"},
	}
	for _, kind := range []string{"directory", "server"} {
		t.Run(kind, func(t *testing.T) {
			mapping := mappings[kind]
			var target string
			var db *mongo.Database
			if kind == "directory" {
				target = t.TempDir()
			} else {
				target, db = testenv.MongoDB(t)
			}
			if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", target); code != 0 {
				t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
			}
			// Untouched, the target is identical.
			if code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", target); code != 0 {
				t.Fatalf("verify of the untouched target: exit %d, want 0\n%s%s", code, out, errs)
			}
			for _, tm := range tampers {
				if db != nil {
					tamperServer(t, db, tm)
				} else {
					tamperDir(t, target, tm)
				}
			}
			want := want
			if db == nil {
				duplicateDamaged(t, filepath.Join(target, "items.jsonl"), "200", bump("v"))
				want = append(want, finding{kind: "different", coll: "items", id: "200", path: "v"},
					finding{kind: "duplicate", coll: "items", id: "200"})
			}
			report := filepath.Join(t.TempDir(), "report.json")
			code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", target, "--report", report)
			if code != 1 {
				t.Fatalf("verify exit %d, want 1 (different)\n%s%s", code, out, errs)
			}
			checkFindings(t, readReport(t, report), want, out)
		})
	}
}

// duplicateDamaged puts before the line of _id id a damaged copy of it
// (fn applied).
func duplicateDamaged(t *testing.T, path, id string, fn func(bson.D) bson.D) {
	t.Helper()
	var out []string
	done := false
	for _, l := range testenv.ReadLines(t, path) {
		var d bson.D
		if err := bson.UnmarshalExtJSON([]byte(l), false, &d); err != nil {
			t.Fatal(err)
		}
		if !done && idOf(t, d) == id {
			b, err := bson.MarshalExtJSON(fn(d), false, false)
			if err != nil {
				t.Fatal(err)
			}
			out, done = append(out, string(b)), true
		}
		out = append(out, l)
	}
	if !done {
		t.Fatalf("%s has no document with _id %s", path, id)
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
