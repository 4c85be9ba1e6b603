package extract

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/mappings"
)

// Snapshot is one read-only REPEATABLE READ transaction: every query made
// through it sees the database as of the same instant, so documents built
// from several tables are consistent with each other. Source.Snapshot
// opens one, Source.Adopt another that sees the same data.
//
// A Snapshot is used by one goroutine at a time (a connection runs one
// query at a time).
type Snapshot struct {
	tx pgx.Tx
	// src connects more connections that adopt the snapshot (merge.go).
	src *Source
	// ID is the exported snapshot identifier (pg_export_snapshot), which
	// other connections can adopt to read the same data.
	ID string
	// Taken is when the snapshot was taken: for an adopted one, when the
	// snapshot it adopts was exported by a connection of the same Source,
	// else when it was adopted (the exporter, a replication slot, made it
	// just before). Its age is how far behind the source a reader is.
	Taken time.Time
}

// open starts on conn a snapshot: a new one when id is empty, else one
// that sees exactly what the exported snapshot id sees (SET TRANSACTION
// SNAPSHOT), which fails once the exporting transaction has ended. It
// never writes: the transaction is READ ONLY, so even a buggy query cannot
// modify the source.
func (src *Source) open(ctx context.Context, conn *pgx.Conn, id string) (*Snapshot, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin snapshot: %w", err)
	}
	s := &Snapshot{tx: tx, src: src, ID: id}
	if _, err = tx.Exec(ctx, readSettings); err != nil {
		_ = tx.Rollback(ctx)
		return nil, fmt.Errorf("snapshot settings: %w", err)
	}
	if id == "" {
		s.Taken = time.Now()
		err = tx.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&s.ID)
		if err != nil {
			err = fmt.Errorf("export snapshot: %w", err)
		} else {
			src.taken.Store(s.ID, s.Taken)
		}
	} else if _, err = tx.Exec(ctx, "SET TRANSACTION SNAPSHOT "+quoteLiteral(id)); err != nil {
		err = fmt.Errorf("adopt snapshot %s: %w", id, err)
	} else if t, ok := src.taken.Load(id); ok {
		s.Taken = t.(time.Time)
	} else {
		s.Taken = time.Now()
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return s, nil
}

// readSettings make every read of a snapshot deterministic, so that a
// rerun, plan and verify compute what migrate wrote: no parallel plans
// (a parallel aggregate adds the partial sums of floating point values
// in whichever order its workers finish), no synchronized sequential
// scans (a scan that joins another one mid-table reads the rows in
// another order), and floating point text that is exact (join keys of
// float columns are compared as text, see mappings.CanonSQL). They last
// as long as the transaction.
const readSettings = "SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL synchronize_seqscans = off; SET LOCAL extra_float_digits = 1"

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Source is the database the snapshot reads, to open more connections.
func (s *Snapshot) Source() *Source { return s.src }

// Query runs a query inside the snapshot.
func (s *Snapshot) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return s.tx.Query(ctx, sql, args...)
}

// Close ends the snapshot by closing its connection: the server rolls the
// read-only transaction back as the connection ends, and Close does not
// wait for that. Ending a transaction that exported a snapshot removes the
// snapshot's file (pg_snapshots), and on a filesystem busy writing back
// the documents just written that removal took up to 1.3 s (ext4; strace
// on the backend showed the unlink), which an explicit ROLLBACK made
// runs wait for at their very end.
//
// A statement in the simple protocol goes first: it drops the portal of
// the last query, so the server finishes that query's executor, where
// pg_stat_statements counts it, which a backend that exits in the middle
// of its transaction skips. Its error (an aborted transaction refuses it)
// does not matter: the connection ends either way.
func (s *Snapshot) Close(ctx context.Context) error {
	conn := s.tx.Conn()
	_ = conn.PgConn().Exec(ctx, "SELECT 1").Close()
	return conn.Close(ctx)
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
			if table, ok := RowSecurityBlocked(err); ok {
				// A table the query reads besides the mapped ones (a view's,
				// a filter's subquery) is filtered for the role.
				ps = append(ps, mappings.Problem{File: plan.File.Path, Pos: n.Pos,
					Msg: fmt.Sprintf("%s: row-level security would hide rows of table %q, which the query for table %q reads, from the source role: connect as a role that reads every row, or pass --row-security to read only what its policies show", n.Path, table, n.Table.Name)})
				return false
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
	return append(ps, checkSQLFunctions(ctx, s, plan)...)
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
	sql, _ := rootQuery(&c, after, 1, nil, nil)
	return sql
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// Sees reports whether the snapshot sees every one of the transactions
// xids (top-level transaction ids, as the change stream gives them), all
// of which committed. The change stream may deliver a transaction before
// its commit is visible to new snapshots: PostgreSQL makes a commit
// visible after its WAL is flushed, and a synchronous standby, or merely
// scheduling, can hold it in between. A rebuild must read a snapshot
// that sees the changes it rebuilds for: when this one does not, take
// another.
func (s *Snapshot) Sees(ctx context.Context, xids []uint32) (bool, error) {
	if len(xids) == 0 {
		return true, nil
	}
	var xmaxText string
	if err := s.tx.QueryRow(ctx, "SELECT pg_snapshot_xmax(pg_current_snapshot())::text").Scan(&xmaxText); err != nil {
		return false, fmt.Errorf("read the snapshot's horizon: %w", err)
	}
	xmax, err := strconv.ParseUint(xmaxText, 10, 64)
	if err != nil {
		return false, fmt.Errorf("read the snapshot's horizon %q: %w", xmaxText, err)
	}
	// A 32-bit xid names the newest full transaction id with those low
	// bits that is below xmax; one at or past xmax began after the
	// snapshot was taken.
	full := make([]string, 0, len(xids))
	for _, x := range xids {
		back := uint32(xmax) - x // how far below xmax, modulo 2^32
		if back == 0 || back > 1<<31 || uint64(back) > xmax {
			return false, nil
		}
		full = append(full, strconv.FormatUint(xmax-uint64(back), 10))
	}
	var all bool
	err = s.tx.QueryRow(ctx, "SELECT bool_and(pg_visible_in_snapshot(x::xid8, pg_current_snapshot())) FROM unnest($1::text[]) AS x", full).Scan(&all)
	if err != nil {
		return false, fmt.Errorf("check the snapshot sees the changes: %w", err)
	}
	return all, nil
}
