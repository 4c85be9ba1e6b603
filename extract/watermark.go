package extract

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/mappings"
)

// DefaultWatermarkColumns are the column names taken as a row's last
// modification time when the user names none.
var DefaultWatermarkColumns = []string{"updated_at", "last_update", "modified_at", "last_modified", "update_time"}

// TableWrites is what a watermark column says about one source table: how
// many of its rows, in the verified snapshot, changed after a time.
type TableWrites struct {
	Table  string    `json:"table"`
	Column string    `json:"column"`
	Rows   int64     `json:"rows"`
	Latest time.Time `json:"latest,omitzero"`
	// Collections are the target collections built from the table.
	Collections []string `json:"collections"`
}

// Time is the time the snapshot's transaction started.
func (s *Snapshot) Time(ctx context.Context) (time.Time, error) {
	rows, err := s.Query(ctx, "SELECT now()")
	if err != nil {
		return time.Time{}, fmt.Errorf("snapshot time: %w", err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[time.Time])
	if err != nil {
		return time.Time{}, fmt.Errorf("snapshot time: %w", err)
	}
	return t, nil
}

// WritesSince counts, inside snap, the rows of every table the plan reads
// that carry a timestamp column named in columns with a value after since:
// rows changed after the last migration or sync, whose documents the
// target cannot hold yet. Tables without such a column are not listed (a
// delete leaves no row to count: watermarks cannot show deletes). One
// aggregate query per table.
func WritesSince(ctx context.Context, snap *Snapshot, plan *mappings.Plan, since time.Time, columns []string) ([]TableWrites, error) {
	var out []TableWrites
	for _, t := range plan.Tables() {
		name := t.QualifiedName()
		var col *mappings.Column
		for _, c := range columns {
			if x := t.Column(c); x != nil && strings.HasPrefix(x.Type, "timestamp") {
				col = x
				break
			}
		}
		if col == nil {
			continue
		}
		q := fmt.Sprintf("SELECT count(*), max(%[1]s)::timestamptz FROM %[2]s WHERE %[1]s::timestamptz > $1",
			pgx.Identifier{col.Name}.Sanitize(), tableRef(t))
		rows, err := snap.Query(ctx, q, since)
		if err != nil {
			return nil, fmt.Errorf("count writes since %s in %s: %w", since.Format(time.RFC3339), name, err)
		}
		var tw TableWrites
		var latest *time.Time
		_, err = pgx.ForEachRow(rows, []any{&tw.Rows, &latest}, func() error { return nil })
		if err != nil {
			return nil, fmt.Errorf("count writes since %s in %s: %w", since.Format(time.RFC3339), name, err)
		}
		var colls []string
		for _, d := range plan.Dependents(name) {
			if !slices.Contains(colls, d.Collection.Name) {
				colls = append(colls, d.Collection.Name)
			}
		}
		tw.Table, tw.Column, tw.Collections = name, col.Name, colls
		if latest != nil {
			tw.Latest = latest.UTC()
		}
		out = append(out, tw)
	}
	return out, nil
}
