package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/mappings"
)

// ReplicaIdentity tells which old values a table's updates and deletes
// carry in the change stream. PostgreSQL logs, for each update and delete,
// the old values of the replica identity's columns: the primary key
// (DEFAULT), a unique index's columns (USING INDEX), every column (FULL) or
// none (NOTHING, or DEFAULT without a primary key). Under DEFAULT and
// USING INDEX an update that leaves the key alone logs no old values: the
// old key is then the new one, and the other old values are unknown.
type ReplicaIdentity struct {
	// Table is the table asked for, as "schema.table".
	Table string
	// Mode is "default", "index", "full" or "nothing": the weakest among the
	// table and, for a partitioned or inherited table, the tables holding
	// its rows (their identities are what PostgreSQL logs).
	Mode string
	// Columns are the columns whose old values are known for every update
	// and delete (in table order; the intersection over the tables holding
	// the rows). Empty when there are none.
	Columns []string
	// NotFull lists the tables holding the rows whose identity is not FULL,
	// quoted for SQL.
	NotFull []string
	// Needs, when a caller sets it, are the columns whose old values it
	// needs; Indexes are the table's indexes that REPLICA IDENTITY USING
	// INDEX accepts (unique, immediate, valid, on NOT NULL columns, no
	// expression or predicate), for a plain table: one covering Needs is
	// a lighter way than FULL to give them.
	Needs   []string
	Indexes []IdentityIndex
	// quoted is Table quoted for SQL; published is how a publication
	// names it: ONLY a plain table, whose inheritance children denorm
	// does not read, a partitioned table with its partitions.
	quoted, published string
}

// IdentityIndex is an index REPLICA IDENTITY USING INDEX accepts.
type IdentityIndex struct {
	// Name is the index's name, quoted for SQL; Columns its columns.
	Name    string
	Columns []string
}

// Usable tells whether PostgreSQL can publish the table's updates and
// deletes: every table holding its rows has identity columns. Otherwise it
// refuses UPDATE and DELETE on a published table.
func (r ReplicaIdentity) Usable() bool { return len(r.Columns) > 0 }

// Covers tells whether the old values of every column in cols are known
// for every update and delete (the columns a document's join or filter
// reads: without their old values, a row that moves to another parent or
// stops matching a filter cannot be traced to the document it leaves).
func (r ReplicaIdentity) Covers(cols ...string) bool {
	for _, c := range cols {
		if !slices.Contains(r.Columns, c) {
			return false
		}
	}
	return true
}

// IndexStatement returns the statement that makes an index covering
// Needs the table's replica identity, "" when none does.
func (r ReplicaIdentity) IndexStatement() string {
	if len(r.Needs) == 0 || len(r.NotFull) != 1 {
		return ""
	}
	for _, ix := range r.Indexes {
		if !slices.ContainsFunc(r.Needs, func(c string) bool { return !slices.Contains(ix.Columns, c) }) {
			return "ALTER TABLE " + r.NotFull[0] + " REPLICA IDENTITY USING INDEX " + ix.Name
		}
	}
	return ""
}

// FullStatements returns the statements a DBA runs to make every old value
// known: `ALTER TABLE "schema"."table" REPLICA IDENTITY FULL` for each
// table in NotFull. FULL makes PostgreSQL log whole old rows (more WAL per
// update and delete); a unique index over the needed columns (REPLICA
// IDENTITY USING INDEX) is the lighter alternative when one exists.
func (r ReplicaIdentity) FullStatements() []string {
	out := make([]string, len(r.NotFull))
	for i, t := range r.NotFull {
		out[i] = "ALTER TABLE " + t + " REPLICA IDENTITY FULL"
	}
	return out
}

// identityModes names pg_class.relreplident.
var identityModes = map[string]string{"d": "default", "i": "index", "f": "full", "n": "nothing"}

// ReadReplicaIdentity reports the replica identity of each of tables
// (qualified names, mappings.QualifiedTableName; "t" means "public.t"),
// in the order given. A table that
// does not exist, or is a view, materialized view or foreign table (whose
// changes cannot be captured), is an error naming it.
func ReadReplicaIdentity(ctx context.Context, q Querier, tables []string) ([]ReplicaIdentity, error) {
	schemas := make([]string, len(tables))
	names := make([]string, len(tables))
	for i, t := range tables {
		schemas[i], names[i] = qualify(t)
	}
	// One row per table asked for (depth 0) and per partition below it
	// (inheritance children hold rows denorm does not read: see
	// mappings.Table.OwnRowsOnly).
	rows, err := q.Query(ctx, `
WITH RECURSIVE tree(ord, relid, depth) AS (
  SELECT w.ord, c.oid, 0
  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS w(nsp, rel, ord)
  JOIN pg_namespace n ON n.nspname = w.nsp
  JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = w.rel
  UNION ALL
  SELECT t.ord, i.inhrelid, t.depth + 1
  FROM tree t JOIN pg_inherits i ON i.inhparent = t.relid JOIN pg_class pc ON pc.oid = t.relid AND pc.relkind = 'p'
)
SELECT t.ord::int, t.depth, n.nspname, c.relname, c.relkind::text, c.relreplident::text,
       ARRAY(SELECT a.attname::text FROM pg_attribute a
             WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum),
       ARRAY(SELECT a.attname::text
             FROM pg_index i
             CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, o)
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
             WHERE i.indrelid = c.oid
               AND (c.relreplident = 'd' AND i.indisprimary OR c.relreplident = 'i' AND i.indisreplident)
             ORDER BY k.o),
       (SELECT json_agg(json_build_object('name', quote_ident(ic.relname),
                'columns', (SELECT json_agg(a.attname ORDER BY k.o) FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, o)
                            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)) ORDER BY ic.relname)::text
        FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
        WHERE i.indrelid = c.oid AND i.indisunique AND i.indimmediate AND i.indisvalid
          AND i.indexprs IS NULL AND i.indpred IS NULL
          AND NOT EXISTS (SELECT 1 FROM unnest(i.indkey) AS k(attnum)
                          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum WHERE NOT a.attnotnull))
FROM tree t
JOIN pg_class c ON c.oid = t.relid
JOIN pg_namespace n ON n.oid = c.relnamespace
ORDER BY t.ord, t.depth, n.nspname, c.relname`, schemas, names)
	if err != nil {
		return nil, fmt.Errorf("read replica identity: %w", err)
	}
	defer rows.Close()
	out := make([]ReplicaIdentity, len(tables))
	found := make([]bool, len(tables))
	type member struct {
		mode string
		cols []string
	}
	members := make([][]member, len(tables))
	var problems []string
	for rows.Next() {
		var (
			ord, depth                int
			schema, name, kind, ident string
			columns, keys             []string
			indexes                   *string
		)
		if err := rows.Scan(&ord, &depth, &schema, &name, &kind, &ident, &columns, &keys, &indexes); err != nil {
			return nil, fmt.Errorf("read replica identity: %w", err)
		}
		i := ord - 1
		quoted := pgx.Identifier{schema, name}.Sanitize()
		if depth == 0 {
			found[i] = true
			out[i] = ReplicaIdentity{Table: mappings.QualifiedTableName(schema, name), quoted: quoted, published: quoted, Columns: columns}
			if kind == "r" {
				out[i].published = "ONLY " + quoted
				if indexes != nil {
					if err := json.Unmarshal([]byte(*indexes), &out[i].Indexes); err != nil {
						return nil, fmt.Errorf("read replica identity: indexes of %s: %w", out[i].Table, err)
					}
				}
			}
			if kind != "r" && kind != "p" {
				problems = append(problems, fmt.Sprintf("%s is not a table (relkind %s): its changes cannot be captured (use --method diff)", out[i].Table, kind))
			}
		}
		if kind != "r" {
			continue // no rows of its own
		}
		m := member{mode: identityModes[ident], cols: keys}
		if ident == "f" {
			m.cols = columns
		} else {
			out[i].NotFull = append(out[i].NotFull, quoted)
		}
		members[i] = append(members[i], m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read replica identity: %w", err)
	}
	for i, ok := range found {
		if !ok {
			problems = append(problems, fmt.Sprintf("table %s does not exist", mappings.QualifiedTableName(schemas[i], names[i])))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	rank := func(m member) int {
		switch {
		case len(m.cols) == 0:
			return 0
		case m.mode == "full":
			return 2
		}
		return 1
	}
	for i := range out {
		r := &out[i]
		r.Mode = "full"
		weakest := 3
		for _, m := range members[i] {
			if k := rank(m); k < weakest {
				weakest, r.Mode = k, m.mode
			}
			r.Columns = slices.DeleteFunc(r.Columns, func(c string) bool { return !slices.Contains(m.cols, c) })
		}
	}
	return out, nil
}

// ReplicaIdentityError names tables whose replica identity does not give
// what is needed, and the statements a DBA must run.
type ReplicaIdentityError struct {
	Tables []ReplicaIdentity
	// Why says what the identity is needed for.
	Why string
}

func (e *ReplicaIdentityError) Error() string {
	var b strings.Builder
	b.WriteString("replica identity: ")
	for i, t := range e.Tables {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s", t.Table, t.Mode)
		if len(t.Columns) > 0 {
			fmt.Fprintf(&b, ": old values of %s only", strings.Join(t.Columns, ", "))
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ": %s; a DBA must run (denorm never alters the source):", e.Why)
	for _, t := range e.Tables {
		if ix := t.IndexStatement(); ix != "" {
			fmt.Fprintf(&b, "\n  %s;\n    (a unique index over the columns sync needs: lighter than FULL, which logs whole old rows; or:)", ix)
		}
		for _, s := range t.FullStatements() {
			b.WriteString("\n  " + s + ";")
		}
	}
	return b.String()
}
