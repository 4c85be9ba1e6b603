package extract

// Statistics and checks for `denorm plan` and `denorm advise`: table
// activity counters, schema listing, children-per-parent figures and the
// set-wise check of reference values. All read-only.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/denorm/denorm/mappings"
)

// ReadActivity returns the activity of the named tables (qualified names,
// mappings.QualifiedTableName), keyed by qualified name. Tables without statistics are absent.
func ReadActivity(ctx context.Context, q Querier, tables []string) (map[string]mappings.TableActivity, error) {
	schemas := make([]string, len(tables))
	names := make([]string, len(tables))
	for i, t := range tables {
		schemas[i], names[i] = qualify(t)
	}
	rows, err := q.Query(ctx, `
SELECT n.nspname, c.relname,
       CASE WHEN coalesce(s.n_live_tup, 0) > 0 THEN s.n_live_tup ELSE greatest(c.reltuples::int8, 0) END,
       coalesce(s.n_tup_ins, 0), coalesce(s.n_tup_upd, 0), coalesce(s.n_tup_del, 0)
FROM unnest($1::text[], $2::text[]) AS want(nsp, rel)
JOIN pg_namespace n ON n.nspname = want.nsp
JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = want.rel
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid`, schemas, names)
	if err != nil {
		return nil, fmt.Errorf("read table statistics: %w", err)
	}
	defer rows.Close()
	out := map[string]mappings.TableActivity{}
	for rows.Next() {
		var s, n string
		var a mappings.TableActivity
		if err := rows.Scan(&s, &n, &a.Rows, &a.Inserts, &a.Updates, &a.Deletes); err != nil {
			return nil, fmt.Errorf("read table statistics: %w", err)
		}
		out[mappings.QualifiedTableName(s, n)] = a
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read table statistics: %w", err)
	}
	return out, nil
}

// ErrKeyType reports reference values that do not convert to the
// referenced key column's type (a string pointing at integer keys).
var ErrKeyType = errors.New("reference values do not convert to the key column's type")

// MissingKeys returns which of values (as text) match no row of table by
// column, in one query, inside a savepoint of the snapshot: values that do
// not convert to the column's type give ErrKeyType and leave the snapshot
// usable.
func (s *Snapshot) MissingKeys(ctx context.Context, table *mappings.Table, column string, values []string) (map[string]bool, error) {
	sp, err := s.tx.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("check keys of %s.%s: %w", table.Name, column, err)
	}
	out, err := MissingKeys(ctx, sp, table, column, values)
	if err != nil {
		_ = sp.Rollback(ctx)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
			return nil, fmt.Errorf("%w: %s (%s)", ErrKeyType, pgErr.Message, table.Column(column).Type)
		}
		return nil, err
	}
	return out, sp.Commit(ctx)
}

// MissingKeys returns which of values (as text) match no row of table by
// column, in one query.
func MissingKeys(ctx context.Context, q Querier, table *mappings.Table, column string, values []string) (map[string]bool, error) {
	col := table.Column(column)
	if col == nil {
		return nil, fmt.Errorf("table %s has no column %q", table.Name, column)
	}
	sql := fmt.Sprintf(`SELECT v FROM unnest($1::text[]) AS v
WHERE NOT EXISTS (SELECT 1 FROM %s AS t WHERE t.%s = v::%s)`,
		tableRef(table), pgx.Identifier{column}.Sanitize(), col.Type)
	rows, err := q.Query(ctx, sql, values)
	if err != nil {
		return nil, fmt.Errorf("check keys of %s.%s: %w", table.Name, column, err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out[v] = true
	}
	return out, rows.Err()
}

// SampleFilter is an SQL condition keeping about percent % of a table's
// rows, chosen by a hash of the columns: deterministic, and whole groups
// when the columns are a parent key (a bucket's pages stay complete).
func SampleFilter(columns []string, percent float64) string {
	refs := make([]string, len(columns))
	for i, c := range columns {
		refs[i] = pgx.Identifier{c}.Sanitize() + "::text"
	}
	return fmt.Sprintf("(abs(hashtext(concat_ws('|', %s))::int8) %% 1000000) < %d", strings.Join(refs, ", "), int64(percent*10000))
}

// ListTables lists the ordinary and partitioned tables of schema (leaving
// out partitions), as qualified names in name order.
func ListTables(ctx context.Context, q Querier, schema string) ([]string, error) {
	rows, err := q.Query(ctx, `
SELECT n.nspname::text, c.relname::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname`, schema)
	if err != nil {
		return nil, fmt.Errorf("list tables of schema %s: %w", schema, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s, n string
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out = append(out, mappings.QualifiedTableName(s, n))
	}
	return out, rows.Err()
}

// Fanout is how many child rows each parent row has through a foreign key.
type Fanout struct {
	// Parents is the number of parents with at least one child.
	Parents  int64
	Avg      float64
	P99, Max int64
}

// ReadFanout counts children per parent of table grouped by columns (the
// foreign key), in one GROUP BY query. Tables of more than sampleAbove
// estimated rows are read with TABLESAMPLE SYSTEM, so figures are
// estimates (max and p99 of the sample).
func ReadFanout(ctx context.Context, q Querier, table *mappings.Table, columns []string, sampleAbove int64) (Fanout, error) {
	refs := make([]string, len(columns))
	notNull := make([]string, len(columns))
	for i, c := range columns {
		refs[i] = pgx.Identifier{c}.Sanitize()
		notNull[i] = refs[i] + " IS NOT NULL"
	}
	from := tableRef(table)
	if sampleAbove > 0 && table.Estimate > sampleAbove {
		pct := max(100*float64(sampleAbove)/float64(table.Estimate), 0.01)
		from += fmt.Sprintf(" TABLESAMPLE SYSTEM (%g)", pct)
	}
	sql := fmt.Sprintf(`SELECT count(*), coalesce(avg(n), 0)::float8,
       coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY n), 0), coalesce(max(n), 0)
FROM (SELECT count(*) AS n FROM %s WHERE %s GROUP BY %s) g`, from, strings.Join(notNull, " AND "), strings.Join(refs, ", "))
	var f Fanout
	rows, err := q.Query(ctx, sql)
	if err == nil {
		_, err = pgx.ForEachRow(rows, []any{&f.Parents, &f.Avg, &f.P99, &f.Max}, func() error { return nil })
	}
	if err != nil {
		return f, fmt.Errorf("count children of %s by (%s): %w", table.Name, strings.Join(columns, ", "), err)
	}
	return f, nil
}

// CountRows counts table's rows exactly (for small tables, where the
// statistics' estimates are coarse).
func CountRows(ctx context.Context, q Querier, table *mappings.Table) (int64, error) {
	rows, err := q.Query(ctx, "SELECT count(*) FROM "+tableRef(table))
	if err != nil {
		return 0, fmt.Errorf("count rows of %s: %w", table.Name, err)
	}
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&n}, func() error { return nil }); err != nil {
		return 0, fmt.Errorf("count rows of %s: %w", table.Name, err)
	}
	return n, nil
}
