package extract

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/mappings"
)

// TestCapturedRows: the typed benchmark's hook keeps the first rows of a
// query as the wire sent them and decodes the columns asked for, counting
// the values that are not NULL.
func TestCapturedRows(t *testing.T) {
	conn, schema := convertTestDB(t)
	ctx := context.Background()
	qt := pgx.Identifier{schema, "captured"}.Sanitize()
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE %[1]s (id integer PRIMARY KEY, price numeric(15,2), code char(4));
INSERT INTO %[1]s SELECT g, CASE WHEN g %% 2 = 0 THEN NULL ELSE g / 4.0 END, 'c' || g FROM generate_series(1, 5) g`, qt)); err != nil {
		t.Fatal(err)
	}
	table := schema + ".captured"
	cat, err := ReadCatalog(ctx, conn, []string{table})
	if err != nil {
		t.Fatal(err)
	}
	cols := cat.Table(table).Columns
	var sel string
	for i, c := range cols {
		if i > 0 {
			sel += ", "
		}
		sel += SelectExpr(c, "t")
	}
	rows, err := CaptureRows(ctx, conn, fmt.Sprintf("SELECT %s FROM %s AS t ORDER BY id", sel, qt), 4)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Len() != 4 {
		t.Fatalf("%d rows captured, want the first 4", rows.Len())
	}
	for _, mode := range []mappings.NumericMode{mappings.NumericDecimal, mappings.NumericDouble, mappings.NumericString} {
		n := &mappings.Node{Table: &mappings.Table{Name: "captured"}, Columns: cols}
		for range cols {
			n.Numeric = append(n.Numeric, mode)
		}
		// price: rows 1 and 3 of the four; code: all four.
		for _, c := range []struct {
			cols []int
			want int
		}{{[]int{1}, 2}, {[]int{2}, 4}, {[]int{0, 1, 2}, 10}} {
			got, err := rows.Decode(n, c.cols)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("%s: columns %v: %d values, want %d", mode, c.cols, got, c.want)
			}
		}
		if _, err := rows.Decode(n, []int{3}); err == nil {
			t.Errorf("a column the query does not have: no error")
		}
	}
}
