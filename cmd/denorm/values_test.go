package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// valueRows are values a document cannot hold exactly as denorm wrote
// them before (issue 25, classes 3, 7, 8 and 10): each of rows 1-4 and 7
// has one, rows 5 and 6 are exact at the edges.
const valueRows = `
CREATE TABLE v (id int PRIMARY KEY, n bigint, i4 int, num numeric, at timestamptz, ts timestamp, arr int[], stamps timestamptz[]);
INSERT INTO v VALUES
 (1, 9223372036854775807, 1, 1.5, '2024-01-01 10:00:00.123+00', '2024-01-01 10:00', '{1}', NULL),
 (2, 5, 1, 1e-991, '2024-01-01 10:00:00.123+00', '2024-01-01 10:00', '{1}', NULL),
 (3, 5, 1, 2.5, '2024-01-01 10:00:00.123+00', '2024-01-01 10:00', '[5:7]={1,2,3}', NULL),
 (4, 5, 0, 2.5, '2024-01-01 10:00:00.123+00', '2024-01-01 10:00', '{1}', NULL),
 (5, 5, -2147483648, 2.5, '2024-01-01 10:00:00.123456+00', '0044-03-15 12:00:00.5 BC', '{1}', '{"2024-01-01 10:00:00.000001+00",NULL}'),
 (6, 5, 1, 2.5, '1969-12-31 23:59:59.9995+00', '12345-01-01 00:00', '{}', NULL),
 (7, -9223372036854775807, 2, 2.5, '2024-01-01 10:00:00.124+00', '2024-01-01 10:00', NULL, NULL);
`

const valueMapping = `version: 1
numeric: double
collections:
  - name: vs
    table: v
    fields:
      - {name: next, expr: 'n + 1'}
      - {name: neg, expr: '-i4'}
      - {name: rem, expr: 'n % i4'}
      - {name: half, expr: 'num / 2'}
      - {name: prev, expr: 'n - i4'}
      - num
      - at
      - ts
      - arr
  - name: vsText
    table: v
    fields:
      - {column: at, timestamp: string}
      - {column: ts, timestamp: string}
      - {column: stamps, timestamp: string}
      - {name: arr, sql: 'arr[:]'}
      - {name: arrFrom, sql: 'array_lower(arr, 1)'}
`

// TestValuesExactOrRejected: integer overflow and division by zero in
// expr:, a NUMERIC whose double would be 0, and an array not starting at
// 1 reject their rows with the reason (exit 3), on a directory and a
// server; sub-millisecond timestamps are BSON dates rounded toward the
// past (counted by plan) or, with timestamp: string, ISO text with
// microseconds; sql: 'arr[:]' renumbers an array from 1.
func TestValuesExactOrRejected(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, valueRows)
	mapping := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(mapping, []byte(valueMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, "validate", "--mapping", mapping, "--source", src); code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errs)
	}
	wantRejects := map[string]string{
		"v (id)=(1)": `vs: field "next": expr "n + 1": integer overflow: 9223372036854775807 + 1 is beyond the 64-bit range (at column 3)`,
		"v (id)=(2)": `vs: field "half": expr "num / 2": num: column "num": numeric value 0.00000000000000000000000000...0000000000000000000000000001 (993 characters) is too small for a double (its nearest double is 0); use numeric mode decimal or string`,
		"v (id)=(3)": `vs: field "arr": column "arr": array subscripts [5:7] do not start at 1: a document's array has no lower bound (5); renumber it from 1 with a field computed by PostgreSQL, sql: 'arr[:]' (read the bound with sql: 'array_lower(arr, 1)' if it matters)`,
		"v (id)=(4)": `vs: field "rem": expr "n % i4": division by zero: 5 % 0 (at column 3)`,
		"v (id)=(7)": `vs: field "prev": expr "n - i4": integer overflow: -9223372036854775807 - 2 is beyond the 64-bit range (at column 3)`,
	}
	wantVs := []string{
		`{"_id":5,"next":6,"neg":2147483648,"rem":5,"half":1.25,"prev":2147483653,"num":2.5,"at":{"$date":"2024-01-01T10:00:00.123Z"},"ts":{"$date":{"$numberLong":"-63517780799500"}},"arr":[1]}`,
		`{"_id":6,"next":6,"neg":-1,"rem":0,"half":1.25,"prev":4,"num":2.5,"at":{"$date":{"$numberLong":"-1"}},"ts":{"$date":{"$numberLong":"327403382400000"}},"arr":[]}`,
	}
	wantText := []string{
		`{"_id":1,"at":"2024-01-01T10:00:00.123000Z","ts":"2024-01-01T10:00:00.000000Z","arr":[1],"arrFrom":1}`,
		`{"_id":2,"at":"2024-01-01T10:00:00.123000Z","ts":"2024-01-01T10:00:00.000000Z","arr":[1],"arrFrom":1}`,
		`{"_id":3,"at":"2024-01-01T10:00:00.123000Z","ts":"2024-01-01T10:00:00.000000Z","arr":[1,2,3],"arrFrom":5}`,
		`{"_id":4,"at":"2024-01-01T10:00:00.123000Z","ts":"2024-01-01T10:00:00.000000Z","arr":[1],"arrFrom":1}`,
		`{"_id":5,"at":"2024-01-01T10:00:00.123456Z","ts":"-000043-03-15T12:00:00.500000Z","stamps":["2024-01-01T10:00:00.000001Z",null],"arr":[1],"arrFrom":1}`,
		`{"_id":6,"at":"1969-12-31T23:59:59.999500Z","ts":"+012345-01-01T00:00:00.000000Z","arr":[]}`,
		`{"_id":7,"at":"2024-01-01T10:00:00.124000Z","ts":"2024-01-01T10:00:00.000000Z"}`,
	}
	mongoURI, db := testenv.MongoDB(t)
	for _, target := range []string{filepath.Join(t.TempDir(), "out"), mongoURI} {
		name := "directory"
		if target == mongoURI {
			name = "server"
		}
		t.Run(name, func(t *testing.T) {
			rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
			code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", target, "--rejects", rejects)
			if code != exitRejected {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitRejected, out, errs)
			}
			checkRejects(t, rejects, wantRejects)
			docs := func(coll string) []string {
				if name == "server" {
					return testenv.DumpCollection(t, db, coll)
				}
				return testenv.ReadLines(t, filepath.Join(target, coll+".jsonl"))
			}
			testenv.EqualDocs(t, "vs", wantVs, docs("vs"))
			testenv.EqualDocs(t, "vsText", wantText, docs("vsText"))
		})
	}
	// plan counts the dates that lose digits, per field and column.
	code, out, errs := runCLI(t, "plan", "-q", "--format", "json", "--mapping", mapping, "--source", src)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, errs)
	}
	var rep struct {
		Collections []struct {
			Name           string `json:"name"`
			SubMillisecond []struct {
				Path, Column, Example, Source string
				Count                         int64
			} `json:"subMillisecond"`
		} `json:"collections"`
		Warnings []struct{ Rule, Collection, Message string } `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	for _, c := range rep.Collections {
		switch c.Name {
		case "vs":
			if len(c.SubMillisecond) != 1 || c.SubMillisecond[0].Path != "at" || c.SubMillisecond[0].Column != "v.at" || c.SubMillisecond[0].Count != 2 || c.SubMillisecond[0].Example != "2024-01-01T10:00:00.123456Z" {
				t.Errorf("vs: sub-millisecond %+v, want at (v.at): 2", c.SubMillisecond)
			}
		case "vsText":
			if len(c.SubMillisecond) != 0 {
				t.Errorf("vsText (timestamp: string): sub-millisecond %+v", c.SubMillisecond)
			}
		}
	}
	warned := false
	for _, w := range rep.Warnings {
		warned = warned || w.Rule == "timestamp-precision" && w.Collection == "vs" && strings.Contains(w.Message, "at (v.at): 2")
	}
	if !warned {
		t.Errorf("no timestamp-precision warning for vs: %+v", rep.Warnings)
	}
}
