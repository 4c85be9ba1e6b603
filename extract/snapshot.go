package extract

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/mappings"
)

// Snapshot is one read-only REPEATABLE READ transaction: every query made
// through it sees the database as of the same instant, so documents built
// from several tables are consistent with each other.
//
// A Snapshot is used by one goroutine at a time (a pgx connection runs one
// query at a time).
type Snapshot struct {
	tx pgx.Tx
	// cfg connects more connections that adopt the snapshot (merge.go).
	cfg *pgx.ConnConfig
	// ID is the exported snapshot identifier (pg_export_snapshot), which
	// other connections can adopt to read the same data.
	ID string
}

// Begin opens a snapshot on conn. It never writes: the transaction is READ
// ONLY, so even a buggy query cannot modify the source.
func Begin(ctx context.Context, conn *pgx.Conn) (*Snapshot, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin snapshot: %w", err)
	}
	s := &Snapshot{tx: tx, cfg: conn.Config()}
	if err := tx.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&s.ID); err != nil {
		_ = tx.Rollback(ctx)
		return nil, fmt.Errorf("export snapshot: %w", err)
	}
	return s, nil
}

// attached is another connection reading the snapshot.
type attached struct {
	conn *pgx.Conn
	tx   pgx.Tx
}

// attach opens a connection whose READ ONLY REPEATABLE READ transaction
// adopts the snapshot (SET TRANSACTION SNAPSHOT, as pg_dump's parallel
// workers do): it sees exactly what the snapshot's own connection sees.
// The snapshot must stay open while it is used.
func (s *Snapshot) attach(ctx context.Context) (*attached, error) {
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("connect for a parallel read: %w", err)
	}
	snap, err := BeginAt(ctx, conn, s.ID)
	if err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return &attached{conn: conn, tx: snap.tx}, nil
}

// release ends the transaction and closes the connection.
func (a *attached) release() {
	ctx := context.Background()
	_ = a.tx.Rollback(ctx)
	_ = a.conn.Close(ctx)
}

// Query runs a query inside the snapshot.
func (s *Snapshot) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return s.tx.Query(ctx, sql, args...)
}

// Close ends the snapshot (the transaction is rolled back: it wrote nothing).
func (s *Snapshot) Close(ctx context.Context) error {
	return s.tx.Rollback(ctx)
}

// CheckQueries has PostgreSQL parse and plan every query the plan will run
// (without running them), so errors in filters or types surface before a
// migration starts. Each failure is a problem at the node's declaration.
func CheckQueries(ctx context.Context, s *Snapshot, plan *mappings.Plan) mappings.Problems {
	var ps mappings.Problems
	prepare := func(sql string) error {
		// A failed statement aborts the transaction: check inside a savepoint.
		sp, err := s.tx.Begin(ctx)
		if err == nil {
			_, err = sp.Prepare(ctx, "", sql)
			if rerr := sp.Rollback(ctx); err == nil {
				err = rerr
			}
		}
		return err
	}
	for _, cp := range plan.Collections {
		mappings.Walk(cp.Root, func(n *mappings.Node) bool {
			err := prepare(nodeQuery(cp, n))
			if err == nil {
				return true
			}
			pos, what := n.Pos, "the query for table "+strconvQuote(n.Table.Name)
			if n.Filter != "" {
				// Blame the filter when the query passes without it.
				bare := *n
				bare.Filter = ""
				if prepare(nodeQuery(cp, &bare)) == nil {
					pos, what = n.FilterPos, "the filter"
				}
			}
			ps = append(ps, mappings.Problem{File: plan.File.Path, Pos: pos,
				Msg: fmt.Sprintf("%s: PostgreSQL rejects %s: %v", n.Path, what, err)})
			return false // one problem for the node, none for the relations below it
		})
	}
	return ps
}

// nodeQuery is the statement node n of cp runs (with dummy keys).
func nodeQuery(cp *mappings.CollectionPlan, n *mappings.Node) string {
	if n.Parent != nil {
		return relatedQuery(n)
	}
	after := make(Key, len(cp.StreamOrder()))
	for i := range after {
		after[i] = new(string)
	}
	c := *cp
	c.Root = n
	sql, _ := rootQuery(&c, after, 1)
	return sql
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }
