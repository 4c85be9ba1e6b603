package extract

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/mappings"
)

// TestTableChanges: a used column gone or retyped is a change; unused
// columns, added columns and a table read whole again are not; a table
// gone loses every used column.
func TestTableChanges(t *testing.T) {
	then := &mappings.Table{Schema: "public", Name: "c", Columns: []mappings.Column{
		{Name: "id", TypeName: "int4"}, {Name: "author", TypeName: "text"}, {Name: "n", TypeName: "int4"}, {Name: "spare", TypeName: "text"},
	}}
	now := &mappings.Table{Schema: "public", Name: "c", Columns: []mappings.Column{
		{Name: "id", TypeName: "int4"}, {Name: "n", TypeName: "int8"}, {Name: "added", TypeName: "text"},
	}}
	used := []string{"id", "author", "n"}
	want := []ColumnChange{{Column: "author", Was: "text"}, {Column: "n", Was: "int4", Now: "int8"}}
	if d := cmp.Diff(want, TableChanges(then, now, used)); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if got := TableChanges(then, then, used); len(got) != 0 {
		t.Errorf("an unchanged table: %v", got)
	}
	if got := TableChanges(then, now, []string{"id"}); len(got) != 0 {
		t.Errorf("only unchanged columns used: %v", got)
	}
	gone := TableChanges(then, nil, used)
	if len(gone) != 3 || gone[0].Now != "" {
		t.Errorf("a table gone: %v, want its 3 used columns dropped", gone)
	}
}
