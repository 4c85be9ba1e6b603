package extract

// Merge streams: the fast path for reading a collection.
//
// Read batch by batch, a collection costs one keyset query for the root rows
// plus one set-wise query per relation per batch; PostgreSQL plans each of
// them and probes an index once per parent key, and the reader waits for
// every answer before it asks the next question. When a relation joins the
// root on the root's stream key, its rows can instead be read as one query
// ordered by that key - a merge join, the way pg_dump reads tables: each
// such relation, and the root itself, is one long query on its own
// connection that adopts the snapshot (SET TRANSACTION SNAPSHOT), decoded by
// its own goroutine and handed over in chunks through a channel of depth
// one. PostgreSQL scans each table once, the tables are read in parallel,
// and decoding is spread over the cores. Memory stays bounded: a stream is
// never more than a few chunks ahead of the batch being built.
//
// A relation is streamed when it joins the root on exactly the root's
// stream key, that key is ascending and made of integer columns (so Go
// compares keys exactly as PostgreSQL orders them, whatever the collation),
// and the relation takes every related row (no subset limit); when the
// root has a filter, a relation's stream keeps the rows of the parents it
// selects (a semi-join). At most maxStreams relations per collection are
// streamed, each taking a connection. Everything else - lookups, subsets,
// nested relations - is still read set-wise per batch on the snapshot's
// own connection.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/denorm/denorm/mappings"
)

// chunkRows is the number of rows a stream hands over at a time.
const chunkRows = 2048

// maxStreams caps the relations of one collection read as streams, so a
// root with many relations does not take many connections; the others are
// read set-wise.
const maxStreams = 6

// stream is one ordered query read by its own goroutine.
type stream struct {
	node *mappings.Node
	// keyCols are the positions in a row of the values compared with the
	// root's stream key.
	keyCols []int
	chunks  chan [][]any
	// err is set before chunks is closed when the query failed.
	err error
	// buf holds rows received but not yet used.
	buf [][]any
	eof bool
}

// fill makes sure buf holds a row, or returns io.EOF at the end of the
// stream.
func (s *stream) fill(ctx context.Context) error {
	for len(s.buf) == 0 {
		if s.eof {
			if s.err != nil {
				return s.err
			}
			return io.EOF
		}
		select {
		case c, ok := <-s.chunks:
			if !ok {
				s.eof = true
				continue
			}
			s.buf = c
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// merger holds a Reader's streams.
type merger struct {
	root     *stream
	children map[*mappings.Node]*stream
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// Streamable lists the root relations of plan that are read as merge
// streams (see the top of this file); nil when none are.
func Streamable(plan *mappings.CollectionPlan) []*mappings.Node {
	root := plan.Root
	key := plan.Key()
	for _, k := range key {
		if k.Desc || !intKeyType(root.Columns[k.Col].TypeName) || !root.Columns[k.Col].NotNull {
			return nil
		}
	}
	var out []*mappings.Node
	for _, c := range root.Children {
		if c.Kind == mappings.NodeLookup || c.Limit > 0 || len(c.ParentCols) != len(key) {
			continue
		}
		same := true
		for i, pc := range c.ParentCols {
			if pc != key[i].Col {
				same = false
			}
		}
		if same && len(out) < maxStreams {
			out = append(out, c)
		}
	}
	return out
}

// rootFilter is the query selecting the keys of the root rows the root's
// filter keeps, or "" when the root has no filter.
func rootFilter(plan *mappings.CollectionPlan) string {
	root := plan.Root
	if root.Filter == "" {
		return ""
	}
	cols := make([]string, 0, len(plan.Key()))
	for _, k := range plan.Key() {
		cols = append(cols, colRef(root.Columns[k.Col].Name))
	}
	return fmt.Sprintf("SELECT %s FROM %s AS t WHERE (%s)", strings.Join(cols, ", "), tableRef(root.Table), root.Filter)
}

func intKeyType(t string) bool { return t == "int2" || t == "int4" || t == "int8" }

// startStreams opens the root stream and one per streamable relation,
// each on a connection of its own that adopts the snapshot. When a
// connection cannot be had (connection limit, permissions), it returns the
// error and opens nothing: the caller reads set-wise instead.
func (r *Reader) startStreams(ctx context.Context, nodes []*mappings.Node) error {
	type job struct {
		s    *stream
		sql  string
		args []any
	}
	keyCols := make([]int, 0, len(r.plan.Key()))
	for _, k := range r.plan.Key() {
		keyCols = append(keyCols, k.Col)
	}
	sql, args := rootQuery(r.plan, r.after, 0, partPredicate(r.plan, r.part)...)
	jobs := []job{{&stream{node: r.plan.Root, keyCols: keyCols}, sql, args}}
	if r.part.N > 1 && r.plan.Bucket != nil {
		nodes = nil // parts hash the bucket's parent columns, which relations lack
	}
	for _, c := range nodes {
		sql, args := streamQuery(c, r.after, r.part, rootFilter(r.plan))
		jobs = append(jobs, job{&stream{node: c, keyCols: c.JoinCols}, sql, args})
	}
	conns := make([]*attached, 0, len(jobs))
	for range jobs {
		a, err := r.snap.attach(ctx)
		if err != nil {
			for _, a := range conns {
				a.release()
			}
			return err
		}
		conns = append(conns, a)
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &merger{children: map[*mappings.Node]*stream{}, cancel: cancel}
	for i, j := range jobs {
		j.s.chunks = make(chan [][]any, 1)
		if i == 0 {
			m.root = j.s
		} else {
			m.children[j.s.node] = j.s
		}
		r.Queries++
		r.pending++
		m.wg.Add(1)
		go runStream(ctx, m, conns[i], j.s, j.sql, j.args)
	}
	r.merge = m
	return nil
}

// runStream reads one stream's query to its end, in chunks, then releases
// its connection.
func runStream(ctx context.Context, m *merger, a *attached, s *stream, sql string, args []any) {
	defer m.wg.Done()
	defer close(s.chunks)
	defer a.release()
	send := func(chunk [][]any) error {
		select {
		case s.chunks <- chunk:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := func() error {
		rows, err := a.tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		chunk := make([][]any, 0, chunkRows)
		dec := newRowDecoder(s.node, rows)
		for rows.Next() {
			row, err := dec.decode(rows.RawValues())
			if err != nil {
				return err
			}
			chunk = append(chunk, row)
			if len(chunk) == chunkRows {
				if err := send(chunk); err != nil {
					return err
				}
				chunk = make([][]any, 0, chunkRows)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(chunk) > 0 {
			return send(chunk)
		}
		return nil
	}()
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled):
		s.err = err
	default:
		s.err = fmt.Errorf("extract %q (streamed): %w", s.node.Table.Name, err)
	}
}

// close stops every stream and waits for their goroutines (which select
// on the cancelled context, so none stays blocked sending).
func (m *merger) close() {
	m.cancel()
	m.wg.Wait()
}

// nextMerged is Next on merge streams.
func (r *Reader) nextMerged(ctx context.Context) (*Batch, error) {
	m := r.merge
	roots := make([][]any, 0, r.batchSize)
	for len(roots) < r.batchSize {
		err := m.root.fill(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		take := min(r.batchSize-len(roots), len(m.root.buf))
		roots = append(roots, m.root.buf[:take]...)
		m.root.buf = m.root.buf[take:]
	}
	if len(roots) == 0 {
		r.done = true
		return nil, io.EOF
	}
	b := &Batch{Roots: roots, related: map[*mappings.Node]*relation{}}
	last := roots[len(roots)-1]
	for _, c := range r.plan.Root.Children {
		s := m.children[c]
		if s == nil {
			continue
		}
		rel := newRelation(c)
		b.related[c] = rel
		for {
			err := s.fill(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			row := s.buf[0]
			if compareInts(row, s.keyCols, last, m.root.keyCols) > 0 {
				break
			}
			s.buf = s.buf[1:]
			rel.add(c, row)
		}
		if rows := rel.all(); c.Kind == mappings.NodeEmbed && len(rows) > 0 {
			n, err := r.children(ctx, b, c, rows)
			b.Queries += n
			if err != nil {
				return nil, err
			}
		}
	}
	n, err := r.children(ctx, b, r.plan.Root, roots)
	if err != nil {
		return nil, err
	}
	pending := r.pending
	b.Queries += n + pending
	r.pending = 0
	after, err := KeyOf(r.plan, last)
	if err != nil {
		return nil, fmt.Errorf("extract %q: %w", r.plan.Root.Table.Name, err)
	}
	r.after, b.After = after, after
	r.Queries += b.Queries - pending
	return b, nil
}

// compareInts compares the integer key of row a at colsA with that of row
// b at colsB.
func compareInts(a []any, colsA []int, b []any, colsB []int) int {
	for i := range colsA {
		x, _ := intOf(a[colsA[i]])
		y, _ := intOf(b[colsB[i]])
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}

// streamQuery reads every row of relation n joined to a root row after
// the key `after` (in part, when parted; of the parents selected by the
// query parents, when not empty), ordered by the join key and then n's
// order.
func streamQuery(n *mappings.Node, after Key, part Part, parents string) (string, []any) {
	keys := keyRefs(n)
	types := keyTypes(n)
	var where []string
	var args []any
	if n.Filter != "" {
		where = append(where, "("+n.Filter+")")
	}
	if parents != "" {
		// Only the rows of parents the root's filter keeps (a semi-join).
		where = append(where, fmt.Sprintf("(%s) IN (%s)", strings.Join(keys, ", "), parents))
	}
	if part.N > 1 {
		// The join key holds the root's key values: the same hash picks
		// the same parents as the root stream's part.
		where = append(where, partCondition(keys, part))
	}
	if len(after) == len(keys) {
		ps := make([]string, len(keys))
		for i := range keys {
			args = append(args, *after[i])
			ps[i] = fmt.Sprintf("$%d::text::%s", i+1, types[i])
		}
		where = append(where, fmt.Sprintf("(%s) > (%s)", strings.Join(keys, ", "), strings.Join(ps, ", ")))
	} else {
		for _, k := range keys {
			where = append(where, k+" IS NOT NULL")
		}
	}
	cond := " WHERE " + strings.Join(where, " AND ")
	if n.Kind == mappings.NodeAggregate {
		arg := "*"
		if n.Agg.Column != "" {
			arg = colRef(n.Agg.Column)
		}
		return fmt.Sprintf("SELECT %s(%s), %s FROM %s%s GROUP BY %s ORDER BY %s",
			n.Agg.Fn, arg, strings.Join(keys, ", "), fromClause(n), cond, strings.Join(keys, ", "), strings.Join(keys, ", ")), args
	}
	return fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s", selectList(n), fromClause(n), cond,
		strings.Join(append(keys, orderList(n)...), ", ")), args
}
