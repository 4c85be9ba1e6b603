package mappings

import (
	"strings"
	"testing"
)

// TestOnDeleteParse parses onDelete in every shape a file can give it,
// valid and hostile: each valid one gives its mode and field, each other
// one a problem that names onDelete (and never a panic).
func TestOnDeleteParse(t *testing.T) {
	const head = "version: 1\ncollections:\n  - name: people\n    table: person\n"
	for _, tc := range []struct {
		name, yaml string
		mode       OnDeleteMode
		field      string
		problem    string // a part of the first problem; "" when valid
	}{
		{"absent", head, OnDeleteDelete, "", ""},
		{"delete", head + "    onDelete: delete\n", OnDeleteDelete, "", ""},
		{"ignore", head + "    onDelete: ignore\n", OnDeleteIgnore, "", ""},
		{"tombstone", head + "    onDelete: {tombstone: deletedAt}\n", OnDeleteTombstone, "deletedAt", ""},
		{"block style", head + "    onDelete:\n      tombstone: gone_at\n", OnDeleteTombstone, "gone_at", ""},
		{"unicode field", head + "    onDelete: {tombstone: gelöscht}\n", OnDeleteTombstone, "gelöscht", ""},
		{"alias", "version: 1\ncollections:\n  - name: a\n    table: person\n    onDelete: &od {tombstone: deletedAt}\n  - name: b\n    table: person\n    onDelete: *od\n", OnDeleteTombstone, "deletedAt", ""},
		{"scalar alias", "version: 1\ncollections:\n  - name: a\n    table: person\n    onDelete: &od ignore\n  - name: b\n    table: person\n    onDelete: *od\n", OnDeleteIgnore, "", ""},
		{"bare tombstone", head + "    onDelete: tombstone\n", "", "", "onDelete: tombstone needs the name of the field"},
		{"upper case", head + "    onDelete: DELETE\n", "", "", "must be delete, ignore or {tombstone: <field>}"},
		{"null", head + "    onDelete: null\n", "", "", "must be delete, ignore or {tombstone: <field>}"},
		{"boolean", head + "    onDelete: true\n", "", "", "must be delete, ignore or {tombstone: <field>}"},
		{"list", head + "    onDelete: [tombstone]\n", "", "", "must be delete, ignore or {tombstone: <field>}"},
		{"empty field", head + "    onDelete: {tombstone: ''}\n", "", "", "onDelete.tombstone"},
		{"number field", head + "    onDelete: {tombstone: 12}\n", "", "", "onDelete.tombstone"},
		{"two keys", head + "    onDelete: {tombstone: a, ignore: b}\n", "", "", `unknown key "ignore"`},
		{"dollar", head + "    onDelete: {tombstone: $set}\n", "", "", `starts with "$"`},
		{"dot", head + "    onDelete: {tombstone: a.b}\n", "", "", `contains "."`},
		{"id", head + "    onDelete: {tombstone: _id}\n", "", "", "cannot be _id"},
		{"long", head + "    onDelete: " + strings.Repeat("x", 100000) + "\n", "", "", "must be delete, ignore or {tombstone: <field>}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("m.yaml", []byte(tc.yaml))
			if tc.problem != "" {
				if err == nil || !IsProblems(err) || !strings.Contains(err.Error(), tc.problem) || !strings.Contains(err.Error(), "onDelete") {
					t.Fatalf("Parse: %v; want a problem with %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range f.Collections {
				if m, fd := c.OnDeleteOf(); m != tc.mode || fd != tc.field {
					t.Errorf("%s: onDelete %q %q, want %q %q", c.Name, m, fd, tc.mode, tc.field)
				}
			}
		})
	}
}
