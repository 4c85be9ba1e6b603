package extract

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/denorm/denorm/mappings"
)

// CapturedRows are the raw result rows of a query, as the wire sent them,
// kept with their field descriptions: the typed benchmark (bench/typed.go)
// times decoding and converting them apart from reading them. A hook for
// measurement only; no reader uses it.
type CapturedRows struct {
	fds []pgconn.FieldDescription
	m   *pgtype.Map
	raw [][][]byte
}

// CaptureRows runs sql on conn as a reader runs its queries and keeps the
// raw values of its first limit rows.
func CaptureRows(ctx context.Context, conn *pgx.Conn, sql string, limit int) (*CapturedRows, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	c := &CapturedRows{fds: rows.FieldDescriptions(), m: conn.TypeMap()}
	for len(c.raw) < limit && rows.Next() {
		src := rows.RawValues()
		row := make([][]byte, len(src))
		for i, v := range src {
			if v != nil {
				row[i] = append(make([]byte, 0, len(v)), v...)
			}
		}
		c.raw = append(c.raw, row)
	}
	rows.Close()
	return c, rows.Err()
}

// Len is the number of captured rows.
func (c *CapturedRows) Len() int { return len(c.raw) }

// Decode decodes the values cols (indexes in the query's select list and
// in n's Columns) of every captured row as a reader of n's rows decodes
// them, with a new decoder, and returns the number of values that were
// not NULL.
func (c *CapturedRows) Decode(n *mappings.Node, cols []int) (int, error) {
	sub := &mappings.Node{Table: n.Table}
	fds := make([]pgconn.FieldDescription, len(cols))
	for j, i := range cols {
		if i >= len(n.Columns) || i >= len(c.fds) {
			return 0, fmt.Errorf("column %d: the node has %d columns, the query %d", i, len(n.Columns), len(c.fds))
		}
		sub.Columns = append(sub.Columns, n.Columns[i])
		sub.Numeric = append(sub.Numeric, n.Numeric[i])
		fds[j] = c.fds[i]
	}
	d := &rowDecoder{node: sub, m: c.m, width: len(cols)}
	d.initCols(fds)
	raw := make([][]byte, len(cols))
	values := 0
	for _, row := range c.raw {
		for j, i := range cols {
			raw[j] = row[i]
			if row[i] != nil {
				values++
			}
		}
		if _, err := d.decode(raw); err != nil {
			return 0, err
		}
	}
	return values, nil
}
