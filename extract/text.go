package extract

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// QueryText runs sql inside the snapshot and hands each row's columns to
// fn as PostgreSQL's text (nil for NULL), as the rows arrive: verify's
// oracle reads the documents PostgreSQL built this way, never holding more
// than one row. The slices are valid only during the call. An error of fn
// stops the query and is returned as it is.
func (s *Snapshot) QueryText(ctx context.Context, sql string, fn func(cols [][]byte) error) error {
	rows, err := s.tx.Query(ctx, sql, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.RawValues()); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	return nil
}
