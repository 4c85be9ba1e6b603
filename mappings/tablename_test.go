package mappings

import (
	"strings"
	"testing"
)

// TestParseTableName: table names read as PostgreSQL's SQL reads them:
// quoting, folding, dots inside quotes, and what is refused.
func TestParseTableName(t *testing.T) {
	for _, tc := range []struct {
		in, schema, name, err string
	}{
		{in: "person", name: "person"},
		{in: "Person", name: "person"},
		{in: "PUBLIC.Person", schema: "public", name: "person"},
		{in: `"Mixed Case"`, name: "Mixed Case"},
		{in: `"x.y".z`, schema: "x.y", name: "z"},
		{in: `x."y.z"`, schema: "x", name: "y.z"},
		{in: `"Sales Dept"."Order"`, schema: "Sales Dept", name: "Order"},
		{in: `"a""b"`, name: `a"b`},
		{in: ` app . item `, schema: "app", name: "item"},
		{in: "élan", name: "élan"},
		{in: "ÉLAN", name: "Élan"}, // only ASCII letters fold, as in a UTF-8 database
		{in: "a$1", name: "a$1"},
		{in: "_x", name: "_x"},
		{in: "x.y.z", err: "3-part name"},
		{in: `"x"."y"."z"`, err: "3-part name"},
		{in: "", err: "empty"},
		{in: `""`, err: "empty name"},
		{in: `"open`, err: "not closed"},
		{in: "my-table", err: `unexpected "-table"`},
		{in: "1st", err: `"1" cannot begin a name`},
		{in: "$x", err: `"$" cannot begin a name`},
		{in: "x.", err: "a name is missing"},
		{in: ".x", err: "a name is missing before a dot"},
		{in: strings.Repeat("a", 64), err: "longer than 63 bytes"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTableName(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseTableName(%q) = %+v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got.Schema != tc.schema || got.Name != tc.name {
				t.Fatalf("ParseTableName(%q) = %+v, %v; want schema %q name %q", tc.in, got, err, tc.schema, tc.name)
			}
			// What String writes reads back as the same name.
			back, err := ParseTableName(got.String())
			if err != nil || back != got {
				t.Errorf("%q -> %q -> %+v, %v", tc.in, got.String(), back, err)
			}
		})
	}
}

// TestQualifiedTableName: the key of a table tells apart names that only
// differ in where the dot is, and is plain for plain names.
func TestQualifiedTableName(t *testing.T) {
	for _, tc := range []struct{ schema, name, want string }{
		{"public", "person", "public.person"},
		{"x.y", "z", `"x.y".z`},
		{"x", "y.z", `x."y.z"`},
		{"public", "Mixed Case", `public."Mixed Case"`},
		{"public", `a"b`, `public."a""b"`},
		{"public", "élan", `public."élan"`},
		{"public", "t2", "public.t2"},
		{"public", "2t", `public."2t"`},
	} {
		if got := QualifiedTableName(tc.schema, tc.name); got != tc.want {
			t.Errorf("QualifiedTableName(%q, %q) = %s, want %s", tc.schema, tc.name, got, tc.want)
		}
		s, n, err := SplitQualifiedName(tc.want)
		if err != nil || s != tc.schema || n != tc.name {
			t.Errorf("SplitQualifiedName(%s) = %q, %q, %v", tc.want, s, n, err)
		}
	}
}
