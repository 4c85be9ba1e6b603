package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
)

// seedWriter makes random writes to the seed schema's blog and person
// tables, from one goroutine, until stopped: comments inserted in the
// middle of their post's order, moved to another post, edited and
// deleted; posts added, and deleted with their comments; contact-detail
// types renamed (a lookup every person's document reads); addresses
// moved to another person; contact details added and deleted. Each
// transaction holds 1 to maxOps of them. A write that fails (the server
// restarting) is counted and retried with the next transaction.
type seedWriter struct {
	db     string
	rng    *rand.Rand
	pause  time.Duration
	maxOps int
	background
	txs    atomic.Int64
	failed atomic.Int64
	nextID int64
	mu     sync.Mutex
	last   error
}

// addSyncData adds n posts with 10 comments each and n persons with 2
// contact details and an address each to the seed schema.
func addSyncData(t testing.TB, db string, n int) {
	t.Helper()
	testenv.Exec(t, db, fmt.Sprintf(`
INSERT INTO post SELECT 100 + g, 'post ' || g, 'summary ' || g FROM generate_series(1, %[1]d) g;
INSERT INTO comment SELECT 10000 + g, 100 + (g %% %[1]d) + 1, 'author' || (g %% 7), 'text ' || g,
  '2024-01-01'::timestamptz + (g * 7919 %% 100000) * interval '1 minute' FROM generate_series(1, 10 * %[1]d) g;
INSERT INTO person SELECT 1000 + g, 'First' || g, 'Last' || g FROM generate_series(1, %[1]d) g;
INSERT INTO contact_detail SELECT 1000 + g, 1000 + (g + 1) / 2, 1 + g %% 3, 'detail-' || g, NULLIF(g %% 4, 0) FROM generate_series(1, 2 * %[1]d) g;
INSERT INTO address SELECT 1000 + g, 1000 + g, 1, g || ' Main Street', 'Springfield', NULL, NULL, 10000 + g FROM generate_series(1, %[1]d) g;
ANALYZE;`, n))
}

// startSeedWriter starts a writer of transactions of 1 to maxOps writes,
// pause apart.
func startSeedWriter(t testing.TB, db string, seed uint64, pause time.Duration, maxOps int) *seedWriter {
	t.Helper()
	w := &seedWriter{db: db, rng: rand.New(rand.NewPCG(seed, 7)), pause: pause, maxOps: maxOps,
		background: newBackground(), nextID: 1_000_000}
	go w.run()
	t.Cleanup(w.halt)
	return w
}

// background is a test's goroutine that runs until halted: it watches
// stop and closes done when it returns (the writers of the sync tests).
type background struct {
	stop, done chan struct{}
}

func newBackground() background {
	return background{stop: make(chan struct{}), done: make(chan struct{})}
}

// halt stops the goroutine and waits for it to return (its last
// transaction ended); a second halt only waits.
func (b *background) halt() {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
}

func (w *seedWriter) run() {
	defer close(w.done)
	ctx := context.Background()
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(ctx)
		}
	}()
	for {
		select {
		case <-w.stop:
			return
		case <-time.After(w.pause):
		}
		if conn == nil || conn.IsClosed() {
			c, err := pgx.Connect(ctx, w.db)
			if err != nil {
				w.fail(err)
				continue
			}
			conn = c
		}
		if err := pgx.BeginFunc(ctx, conn, w.transaction); err != nil {
			w.fail(err)
			conn.Close(ctx)
			conn = nil
			continue
		}
		w.txs.Add(1)
	}
}

func (w *seedWriter) fail(err error) {
	w.failed.Add(1)
	w.mu.Lock()
	w.last = err
	w.mu.Unlock()
}

// pick is an SQL expression choosing a row of table by its id: the first
// id at or after a random one, from the initial rows or those the writer
// added (NULL, a no-op, past the last).
func (w *seedWriter) pick(table string) string {
	from := w.rng.Int64N(20_000)
	if w.rng.IntN(10) < 3 {
		from = 1_000_000 + w.rng.Int64N(max(w.nextID-1_000_000, 1))
	}
	return fmt.Sprintf("(SELECT id FROM %s WHERE id >= %d ORDER BY id LIMIT 1)", table, from)
}

// transaction makes 1 to maxOps random writes.
func (w *seedWriter) transaction(tx pgx.Tx) error {
	ctx := context.Background()
	n := 1 + w.rng.IntN(w.maxOps)
	for range n {
		w.nextID++
		id := w.nextID
		minute := w.rng.IntN(100000)
		var sql string
		switch op := w.rng.IntN(100); {
		case op < 30:
			sql = fmt.Sprintf(`INSERT INTO comment SELECT %d, id, 'w', 'written', '2024-01-01'::timestamptz + %d * interval '1 minute' FROM post WHERE id = coalesce(%s, 1)`,
				id, minute, w.pick("post"))
		case op < 45:
			sql = fmt.Sprintf(`UPDATE comment SET post_id = coalesce(%s, 1) WHERE id = %s`, w.pick("post"), w.pick("comment"))
		case op < 55:
			sql = fmt.Sprintf(`DELETE FROM comment WHERE id = %s`, w.pick("comment"))
		case op < 65:
			sql = fmt.Sprintf(`UPDATE comment SET comment = 'edited %d', created_at = created_at + interval '1 second' WHERE id = %s`, id, w.pick("comment"))
		case op < 70:
			sql = fmt.Sprintf(`INSERT INTO post VALUES (%d, 'new post', NULL)`, id)
		case op < 73:
			p := w.pick("post")
			sql = fmt.Sprintf(`DELETE FROM comment WHERE post_id = %s AND post_id > 3; DELETE FROM post WHERE id = %s AND id > 3`, p, p)
		case op < 76:
			sql = fmt.Sprintf(`UPDATE contact_detail_type SET name = 'type' || id || '-%d' WHERE id = %d`, id, 1+minute%3)
		case op < 85:
			sql = fmt.Sprintf(`UPDATE address SET person_id = coalesce(%s, 1) WHERE id = %s`, w.pick("person"), w.pick("address"))
		case op < 93:
			sql = fmt.Sprintf(`INSERT INTO contact_detail SELECT %d, id, %d, 'd%d', NULL FROM person WHERE id = coalesce(%s, 1)`, id, 1+minute%3, id, w.pick("person"))
		default:
			sql = fmt.Sprintf(`DELETE FROM contact_detail WHERE id = %s`, w.pick("contact_detail"))
		}
		for _, stmt := range strings.Split(sql, "; ") {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", strings.Join(strings.Fields(stmt), " "), err)
			}
		}
	}
	return nil
}

// report logs what the writer did.
func (w *seedWriter) report(t testing.TB) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("writer: %d transactions committed, %d failed (last: %v)", w.txs.Load(), w.failed.Load(), w.last)
}
