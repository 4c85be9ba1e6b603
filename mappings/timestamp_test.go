package mappings

import (
	"fmt"
	"strings"
	"testing"
)

// TestTimestampMode: timestamps are BSON dates by default; timestamp:
// string at the file level makes every timestamp column text, and a
// field's timestamp overrides the file's for its column, in lookups and
// aggregates too; it applies to timestamp columns only.
func TestTimestampMode(t *testing.T) {
	cat := &Catalog{Tables: map[string]*Table{
		"public.event": {Schema: "public", Name: "event", PrimaryKey: []string{"id"}, Columns: []Column{
			{Name: "id", Type: "integer", TypeName: "int4", Category: "N"},
			{Name: "a", Type: "timestamp with time zone", TypeName: "timestamptz", Category: "D"},
			{Name: "b", Type: "timestamp without time zone", TypeName: "timestamp", Category: "D"},
			{Name: "c", Type: "timestamp without time zone[]", TypeName: "_timestamp", Category: "A", ElemTypeName: "timestamp", ElemCategory: "D"},
			{Name: "kind_id", Type: "integer", TypeName: "int4", Category: "N"},
		}},
		"public.kind": {Schema: "public", Name: "kind", PrimaryKey: []string{"id"}, Columns: []Column{
			{Name: "id", Type: "integer", TypeName: "int4", Category: "N"},
			{Name: "since", Type: "timestamp with time zone", TypeName: "timestamptz", Category: "D"},
			{Name: "event_id", Type: "integer", TypeName: "int4", Category: "N"},
		}},
	}}
	text := func(file string) (map[string]bool, error) {
		f, err := Parse("ts.yaml", []byte(file))
		if err != nil {
			return nil, err
		}
		plan, err := Resolve(f, cat)
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		root := plan.Collections[0].Root
		for _, c := range root.Columns {
			out[c.Name] = c.TimestampText
		}
		for _, l := range root.Children {
			for _, c := range l.Columns {
				out[l.Path[strings.LastIndexByte(l.Path, '.')+1:]+"."+c.Name] = c.TimestampText
			}
		}
		return out, nil
	}
	const fields = `
collections:
  - name: events
    table: event
    lookups: [{name: kind, table: kind, join: {id: kind_id}}]
    fields:
      - a
      - {column: b, timestamp: %s}
      - c
      - {name: since, column: kind.since, timestamp: %s}
      - {name: latest, aggregate: {fn: max, table: kind, join: {event_id: id}, column: since}, timestamp: %s}
`
	for _, tc := range []struct {
		file                   string
		a, b, c, since, latest bool
	}{
		{"version: 1" + fmt.Sprintf(fields, "date", "date", "date"), false, false, false, false, false},
		{"version: 1\ntimestamp: date" + fmt.Sprintf(fields, "string", "string", "string"), false, true, false, true, true},
		{"version: 1\ntimestamp: string" + fmt.Sprintf(fields, "date", "string", "date"), true, false, true, true, false},
	} {
		got, err := text(tc.file)
		if err != nil {
			t.Fatalf("%s\n%v", tc.file, err)
		}
		if got["a"] != tc.a || got["b"] != tc.b || got["c"] != tc.c || got["kind.since"] != tc.since || got["latest.max"] != tc.latest {
			t.Errorf("%s\ntext: %v", tc.file, got)
		}
	}
	_, err := text(`version: 1
collections:
  - name: events
    table: event
    fields:
      - {column: kind_id, timestamp: string}
      - {name: n, aggregate: {fn: count, table: kind, join: {event_id: id}}, timestamp: string}
`)
	for _, want := range []string{
		`ts.yaml:6:38: events: timestamp applies to timestamp and timestamptz columns (and arrays of them); kind_id is integer`,
		`ts.yaml:7:89: events.n: timestamp applies to timestamp and timestamptz columns (and arrays of them); count is bigint`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}
