package extract

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestCatalogEstimate: a table never analyzed (reltuples -1) still gets a
// row estimate when it is small: the exact count, so progress can show a
// total; an analyzed table keeps the planner's figure.
func TestCatalogEstimate(t *testing.T) {
	conn, schema := convertTestDB(t)
	ctx := context.Background()
	fresh := pgx.Identifier{schema, "fresh"}.Sanitize()
	analyzed := pgx.Identifier{schema, "analyzed"}.Sanitize()
	for _, sql := range []string{
		"CREATE TABLE " + fresh + " (id int PRIMARY KEY)",
		"INSERT INTO " + fresh + " SELECT generate_series(1, 37)",
		"CREATE TABLE " + analyzed + " (id int PRIMARY KEY)",
		"INSERT INTO " + analyzed + " SELECT generate_series(1, 500)",
		"ANALYZE " + analyzed,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var reltuples float64
	if err := conn.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = $1::regclass", fresh).Scan(&reltuples); err != nil {
		t.Fatal(err)
	}
	if reltuples >= 0 {
		t.Fatalf("reltuples of a fresh table is %v: the case tests nothing", reltuples)
	}
	cat, err := ReadCatalog(ctx, conn, []string{schema + ".fresh", schema + ".analyzed"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cat.Table(schema + ".fresh").Estimate; got != 37 {
		t.Errorf("estimate of a fresh 37-row table = %d, want 37", got)
	}
	if got := cat.Table(schema + ".analyzed").Estimate; got != 500 {
		t.Errorf("estimate of an analyzed 500-row table = %d, want 500", got)
	}
}
