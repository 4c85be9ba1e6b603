package mappings

import (
	"fmt"
	"testing"
)

// TestCharMode: char(n) columns are trimmed by default; char: keep at the
// file level keeps every column's padding, and a field's char overrides
// the file's for its column, in lookups too.
func TestCharMode(t *testing.T) {
	cat := &Catalog{Tables: map[string]*Table{
		"public.code": {Schema: "public", Name: "code", PrimaryKey: []string{"id"}, Columns: []Column{
			{Name: "id", Type: "integer", TypeName: "int4", Category: "N"},
			{Name: "a", Type: "character(5)", TypeName: "bpchar", Category: "S"},
			{Name: "b", Type: "character(5)", TypeName: "bpchar", Category: "S"},
			{Name: "kind_id", Type: "integer", TypeName: "int4", Category: "N"},
		}},
		"public.kind": {Schema: "public", Name: "kind", PrimaryKey: []string{"id"}, Columns: []Column{
			{Name: "id", Type: "integer", TypeName: "int4", Category: "N"},
			{Name: "name", Type: "character(20)", TypeName: "bpchar", Category: "S"},
		}},
	}}
	keep := func(file string) map[string]bool {
		t.Helper()
		f, err := Parse("char.yaml", []byte(file))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Resolve(f, cat)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		root := plan.Collections[0].Root
		for _, c := range root.Columns {
			out[c.Name] = c.KeepPadding
		}
		for _, l := range root.Children {
			for _, c := range l.Columns {
				out[l.Table.Name+"."+c.Name] = c.KeepPadding
			}
		}
		return out
	}
	const fields = `
collections:
  - name: codes
    table: code
    lookups: [{name: kind, table: kind, join: {id: kind_id}}]
    fields:
      - a
      - {column: b, char: %s}
      - {name: kind, column: kind.name, char: %s}
`
	for _, tc := range []struct {
		file           string
		a, b, kindName bool
	}{
		{"version: 1" + fmt.Sprintf(fields, "trim", "trim"), false, false, false},
		{"version: 1\nchar: trim" + fmt.Sprintf(fields, "keep", "keep"), false, true, true},
		{"version: 1\nchar: keep" + fmt.Sprintf(fields, "trim", "keep"), true, false, true},
	} {
		got := keep(tc.file)
		if got["a"] != tc.a || got["b"] != tc.b || got["kind.name"] != tc.kindName {
			t.Errorf("%s\nkeep padding: a %v b %v kind.name %v, want %v %v %v", tc.file, got["a"], got["b"], got["kind.name"], tc.a, tc.b, tc.kindName)
		}
	}
}
