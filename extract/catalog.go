// Package extract reads the source PostgreSQL database: connections and
// one consistent read-only snapshot shared by them (Source, Snapshot),
// catalog introspection, the batched streams of rows a Plan needs (Reader),
// the rows of given keys only (NewKeyReader, for sync), watermark counts,
// and logical change capture for sync (logical.go). It never writes to the
// source's data - change capture creates only a sync job's own
// publication and replication slot - and it is the only package that uses
// the PostgreSQL driver: what it returns is document values and its own
// types.
//
// A root table and the relations joined to it on an ascending integer key
// are read as merge streams (one ordered query per table, each on its own
// connection adopting the snapshot: merge.go); other root tables by keyset
// pagination, and other relations set-wise for a whole batch of parents
// (one query per relation per batch, never one per parent row). Memory is
// bounded by the batch size and the embedded relations' fan-out, never by
// table size.
package extract

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/mappings"
)

// Querier is what catalog introspection needs: a *pgx.Conn or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// oneTrip runs each query in one round trip to the server (pgx's exec
// mode: the unnamed statement, parameters typed from their Go types,
// results as text) instead of the two of a statement prepared and cached
// for reuse: the catalog's queries run once or twice a run, and a new
// run's reading of the catalog was a third of its fixed cost, most of it
// waiting for the server twice a query.
type oneTrip struct{ q Querier }

func (o oneTrip) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return o.q.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}

// relKinds names the relation kinds that are not plain or partitioned
// tables (see mappings.Table.Kind).
var relKinds = map[string]string{"v": mappings.KindView, "m": mappings.KindMaterializedView, "f": mappings.KindForeignTable}

// ReadCatalog describes the tables a mapping names, each name as the
// mapping writes it (SQL's syntax: mappings.ParseTableName), resolved as
// PostgreSQL resolves it for the connected role: an unqualified name
// through the role's search_path. Catalog.Names says what each name
// resolved to, or why it did not (Resolve reports those); Tables holds
// the tables found, by qualified name.
func ReadCatalog(ctx context.Context, q Querier, tables []string) (*mappings.Catalog, error) {
	cat := &mappings.Catalog{Tables: map[string]*mappings.Table{}, Names: map[string]mappings.Resolved{}}
	if len(tables) == 0 {
		return cat, nil
	}
	q = oneTrip{q}
	found, err := resolveNames(ctx, q, cat, tables)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return cat, nil
	}
	schemas := make([]string, len(found))
	names := make([]string, len(found))
	for i, t := range found {
		schemas[i], names[i] = t.Schema, t.Name
	}
	// A domain column reads as its base type (PostgreSQL sends values of a
	// domain as its base type), an array of a domain as the array of the
	// base type; Domain keeps the domain's name for messages.
	rows, err := q.Query(ctx, `
WITH RECURSIVE dom(oid, base, mod) AS (
  SELECT t.oid, t.typbasetype, t.typtypmod FROM pg_type t WHERE t.typtype = 'd'
  UNION ALL
  SELECT d.oid, b.typbasetype, greatest(d.mod, b.typtypmod)
  FROM dom d JOIN pg_type b ON b.oid = d.base AND b.typtype = 'd'
), base AS (
  SELECT d.oid, d.base, d.mod FROM dom d JOIN pg_type b ON b.oid = d.base AND b.typtype <> 'd'
)
SELECT n.nspname, c.relname, c.oid::int8, c.relkind::text,
       -- Row estimate: the planner's; for a table never analyzed (-1), the
       -- statistics collector's live rows, or -2 for "small enough to count".
       CASE WHEN c.reltuples >= 0 THEN c.reltuples::int8
            WHEN c.relkind = 'r' AND c.relpages < 1280 THEN -2
            WHEN pg_stat_get_live_tuples(c.oid) > 0 THEN pg_stat_get_live_tuples(c.oid)
            ELSE -1 END,
       a.attname, format_type(eff.oid, eff.mod), t.typname, t.typcategory::text,
       coalesce(et.typname, ''), coalesce(et.typcategory::text, ''), a.attnotnull,
       CASE WHEN eff.oid <> a.atttypid THEN format_type(a.atttypid, a.atttypmod) ELSE '' END,
       CASE WHEN a.attcollation IN (0, 100) THEN '' ELSE coalesce(co.collname, '') END,
       NOT coalesce(co.collisdeterministic, true)
FROM unnest($1::text[], $2::text[]) AS want(nsp, rel)
JOIN pg_namespace n ON n.nspname = want.nsp
JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = want.rel AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type at ON at.oid = a.atttypid
LEFT JOIN base db ON db.oid = a.atttypid
LEFT JOIN base de ON de.oid = at.typelem AND at.typcategory = 'A'
CROSS JOIN LATERAL (SELECT CASE WHEN db.oid IS NOT NULL THEN db.base
                                WHEN de.oid IS NOT NULL THEN (SELECT x.typarray FROM pg_type x WHERE x.oid = de.base)
                                ELSE a.atttypid END AS oid,
                           CASE WHEN db.oid IS NOT NULL THEN db.mod
                                WHEN de.oid IS NOT NULL THEN de.mod
                                ELSE a.atttypmod END AS mod) AS eff
JOIN pg_type t ON t.oid = eff.oid
LEFT JOIN pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
LEFT JOIN pg_collation co ON co.oid = a.attcollation
ORDER BY n.nspname, c.relname, a.attnum`, schemas, names)
	if err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	oids := map[int64]*mappings.Table{}
	for rows.Next() {
		var (
			schema, name, kind string
			oid, tuples        int64
			col                mappings.Column
		)
		if err := rows.Scan(&schema, &name, &oid, &kind, &tuples, &col.Name, &col.Type, &col.TypeName, &col.Category,
			&col.ElemTypeName, &col.ElemCategory, &col.NotNull, &col.Domain, &col.Collation, &col.NonDeterministic); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read catalog: %w", err)
		}
		key := mappings.QualifiedTableName(schema, name)
		t := cat.Tables[key]
		if t == nil {
			t = &mappings.Table{Schema: schema, Name: name, Kind: relKinds[kind], Estimate: tuples, Partitioned: kind == "p"}
			cat.Tables[key] = t
			oids[oid] = t
		}
		t.Columns = append(t.Columns, col)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	if err := readInheritance(ctx, q, oids); err != nil {
		return nil, err
	}
	if err := readRowSecurity(ctx, q, oids); err != nil {
		return nil, err
	}
	for _, t := range oids {
		if t.Estimate != -2 {
			continue
		}
		if t.RowSecurity != nil {
			// Counting would fail (row_security is off) or count only
			// what the policies show.
			t.Estimate = -1
			continue
		}
		// Under 10 MiB and never analyzed: an exact count is cheap, and
		// progress can show a total.
		n, err := CountRows(ctx, q, t)
		if err != nil {
			return nil, err
		}
		t.Estimate = n
	}
	if len(oids) == 0 {
		return cat, nil
	}
	ids := make([]int64, 0, len(oids))
	for id := range oids {
		ids = append(ids, id)
	}
	// Keys: the primary key, and unique indexes (non-partial) whose
	// columns are all NOT NULL.
	rows, err = q.Query(ctx, `
SELECT i.indrelid::int8, i.indisprimary,
       array_agg(a.attname ORDER BY k.ord), bool_and(a.attnotnull)
FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = ANY($1::oid[]) AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
GROUP BY i.indexrelid, i.indrelid, i.indisprimary
ORDER BY i.indrelid, NOT i.indisprimary, i.indexrelid`, ids)
	if err != nil {
		return nil, fmt.Errorf("read catalog keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			oid     int64
			primary bool
			cols    []string
			notNull bool
		)
		if err := rows.Scan(&oid, &primary, &cols, &notNull); err != nil {
			return nil, fmt.Errorf("read catalog keys: %w", err)
		}
		t := oids[oid]
		switch {
		case primary:
			t.PrimaryKey = cols
		case notNull:
			t.Unique = append(t.Unique, cols)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read catalog keys: %w", err)
	}
	rows.Close()
	rows, err = q.Query(ctx, `
SELECT c.conrelid::int8, rn.nspname::text, rc.relname::text,
       array_agg(a.attname ORDER BY k.ord), array_agg(ra.attname ORDER BY k.ord)
FROM pg_constraint c
JOIN pg_class rc ON rc.oid = c.confrelid
JOIN pg_namespace rn ON rn.oid = rc.relnamespace
CROSS JOIN LATERAL unnest(c.conkey, c.confkey) WITH ORDINALITY AS k(attnum, refattnum, ord)
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = k.refattnum
WHERE c.contype = 'f' AND c.conrelid = ANY($1::oid[])
GROUP BY c.oid, c.conrelid, rn.nspname, rc.relname
ORDER BY c.conrelid, c.conname`, ids)
	if err != nil {
		return nil, fmt.Errorf("read catalog foreign keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			oid                 int64
			refSchema, refTable string
			fk                  mappings.ForeignKey
		)
		if err := rows.Scan(&oid, &refSchema, &refTable, &fk.Columns, &fk.RefColumns); err != nil {
			return nil, fmt.Errorf("read catalog foreign keys: %w", err)
		}
		fk.RefTable = mappings.QualifiedTableName(refSchema, refTable)
		oids[oid].ForeignKeys = append(oids[oid].ForeignKeys, fk)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read catalog foreign keys: %w", err)
	}
	return cat, nil
}
