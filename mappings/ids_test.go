package mappings

import (
	"testing"
)

// TestIDOverlapsComposite: composite _ids meet only when their fields are
// of the same kinds, as MongoDB compares documents field by field; found
// by the differential fuzzer, where two document types with {k1: number,
// k2: binary} and {k1: number, k2: string} _ids were compared in SQL and
// PostgreSQL refused ("cannot compare dissimilar column types bytea and
// text"), failing validate with exit 1.
func TestIDOverlapsComposite(t *testing.T) {
	table := func(name, k2 string) *Table {
		return &Table{Schema: "public", Name: name, PrimaryKey: []string{"k1", "k2"}, Columns: []Column{
			{Name: "k1", Type: "integer", TypeName: "int4", Category: "N", NotNull: true},
			{Name: "k2", Type: k2, TypeName: k2, Category: map[string]string{"bytea": "U", "text": "S"}[k2], NotNull: true},
		}}
	}
	cat := &Catalog{Tables: map[string]*Table{"public.a": table("a", "bytea"), "public.b": table("b", "text"), "public.c": table("c", "text")}}
	f, err := Parse("m.yaml", []byte(`
version: 1
collections:
  - {name: things, table: a, discriminator: type, fields: [{name: type, value: a}]}
  - {name: things, table: b, discriminator: type, fields: [{name: type, value: b}]}
  - {name: things, table: c, discriminator: type, fields: [{name: type, value: c}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(f, cat)
	if err != nil {
		t.Fatal(err)
	}
	o := p.IDOverlaps()
	if len(o) != 1 || o[0].A.Root.Table.Name != "b" || o[0].B.Root.Table.Name != "c" || o[0].Kind != "document {k1: number, k2: string}" {
		for _, x := range o {
			t.Logf("%s %s %s", x.A.Root.Table.Name, x.B.Root.Table.Name, x.Kind)
		}
		t.Errorf("want one overlap, b and c, of kind document {k1: number, k2: string}")
	}
}
