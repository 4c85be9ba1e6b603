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
// stream key (ascending, NOT NULL). A subset (the first few rows per
// parent) streams when its key is ordered (below): one lateral query over
// the root rows the stream reads, in their order (subsetStreamQuery), in
// place of a set-wise query per batch. Go must then find, for each batch of root rows, the related
// rows that belong to it, which it does in one of two ways:
//
//   - ordered: when every key column pair is integers or uuids on both
//     sides, Go compares keys exactly as PostgreSQL orders them (numbers;
//     uuids byte by byte), and takes the related rows up to the batch's
//     last key, skipping rows of parents the root stream does not have;
//   - by equality, for every other key (text under any deterministic
//     collation, numeric, char(n), citext, dates, composites of them...):
//     the relation's stream keeps only the rows of parents the root
//     stream reads (a semi-join on the root table with the root's filter,
//     part and resume position), ordered by its key cast to the root key's
//     type and collation, so its rows come in the root stream's order;
//     Go then only tests equality - of the values PostgreSQL compares (see
//     mappings/joinkey.go) - root row by root row. Aggregates keyed this
//     way are read set-wise (their groups are computed keys).
//
// When the root has a filter, an ordered relation's stream also keeps the
// rows of the parents it selects (a semi-join). At most maxStreams
// relations per collection are streamed, each taking a connection.
// Everything else - lookups, subsets keyed by equality, nested relations -
// is still read set-wise per batch on the snapshot's own connection.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// chunkRows is the number of rows a stream hands over at a time. A
// stream holds up to three chunks (one filling, one in its channel, one
// being merged), which are most of a run's live heap, and the collector
// lets the heap grow to five times that (GOGC=400): at 2,048 rows the
// heap of a short run grew to 100 MB, page faults were a sixth of its
// CPU. 512 rows keep the hand-over cheap (one channel send per 512 rows).
const chunkRows = 512

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
	// equal: the stream is merged by equality (see the top of the file).
	equal  bool
	chunks chan [][]any
	// err is set before chunks is closed when the query failed.
	err error
	// buf holds rows received but not yet used.
	buf [][]any
	eof bool
	// rows and keys are the size of the last batch's relation, the room
	// the next one is given (at most maxRoomRows: one batch of a parent
	// with a million children does not make every later one that big).
	rows, keys int
}

const maxRoomRows = 1 << 16

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

// takeWhile hands the stream's rows to take as long as belongs says so,
// stopping at the first that does not (left in buf) or at the end.
func (s *stream) takeWhile(ctx context.Context, belongs func(row []any) bool, take func(row []any)) error {
	for {
		err := s.fill(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if !belongs(s.buf[0]) {
			return nil
		}
		take(s.buf[0])
	}
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
	key := plan.StreamOrder()
	for _, k := range key {
		if k.Desc || !root.Columns[k.Col].NotNull {
			return nil
		}
	}
	var out []*mappings.Node
	for _, c := range root.Children {
		if c.Kind == mappings.NodeLookup || len(c.ParentCols) != len(key) || len(out) == maxStreams {
			continue
		}
		if c.Limit > 0 && (c.Kind == mappings.NodeAggregate || !ordered(plan, c)) {
			continue // subsets stream only by order (subsetStreamQuery)
		}
		same := true
		for i, pc := range c.ParentCols {
			if p := root.Columns[pc]; pc != key[i].Col && (p.Canon == "" || p.Name != root.Columns[key[i].Col].Name) {
				same = false
			}
		}
		if same && (ordered(plan, c) || c.Kind != mappings.NodeAggregate) {
			out = append(out, c)
		}
	}
	return out
}

// ordered reports whether relation c of plan's root is merged by order:
// every pair of key columns integers, or uuids, on both sides.
func ordered(plan *mappings.CollectionPlan, c *mappings.Node) bool {
	for i, k := range plan.StreamOrder() {
		a, _ := keyColumn(c, c.JoinCols[i])
		b := plan.Root.Columns[k.Col]
		if !mappings.IntKey(a, b) && (a.TypeName != "uuid" || b.TypeName != "uuid") {
			return false
		}
	}
	return true
}

// rootFilter is the query selecting the keys of the root rows the root's
// filter keeps, or "" when the root has no filter.
func rootFilter(plan *mappings.CollectionPlan) string {
	root := plan.Root
	if root.Filter == "" {
		return ""
	}
	cols := make([]string, 0, len(plan.StreamOrder()))
	for _, k := range plan.StreamOrder() {
		cols = append(cols, colRef(root.Columns[k.Col].Name))
	}
	return fmt.Sprintf("SELECT %s FROM %s AS t WHERE (%s)", strings.Join(cols, ", "), tableRef(root.Table), root.Filter)
}

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
	keyCols := make([]int, 0, len(r.plan.StreamOrder()))
	for _, k := range r.plan.StreamOrder() {
		keyCols = append(keyCols, k.Col)
	}
	sql, args := rootQuery(r.plan, r.after, 0, partPredicate(r.plan, r.part), nil)
	jobs := []job{{&stream{node: r.plan.Root, keyCols: keyCols}, sql, args}}
	if r.part.N > 1 && r.plan.Bucket != nil {
		nodes = nil // parts hash the bucket's parent columns, which relations lack
	}
	for _, c := range nodes {
		if c.Limit > 0 {
			sql, args := subsetStreamQuery(r.plan, c, r.after, r.part)
			jobs = append(jobs, job{&stream{node: c, keyCols: c.JoinCols}, sql, args})
			continue
		}
		if ordered(r.plan, c) {
			sql, args := streamQuery(c, r.after, r.part, rootFilter(r.plan))
			jobs = append(jobs, job{&stream{node: c, keyCols: c.JoinCols}, sql, args})
			continue
		}
		sql, args := equalStreamQuery(r.plan, c, r.after, r.part)
		jobs = append(jobs, job{&stream{node: c, keyCols: c.JoinCols, equal: true}, sql, args})
	}
	// The connections are opened at once: each costs a few round trips
	// (connect, authenticate, begin, adopt the snapshot), which one after
	// another were a tenth of a short run's fixed cost.
	conns := make([]*Snapshot, len(jobs))
	var g errgroup.Group
	for i := range jobs {
		g.Go(func() error {
			a, err := r.snap.src.Adopt(ctx, r.snap.ID)
			conns[i] = a
			return err
		})
	}
	if err := g.Wait(); err != nil {
		for _, a := range conns {
			if a != nil {
				a.release()
			}
		}
		return err
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

// runStream reads one stream's query to its end, in chunks, on a, then
// releases a.
func runStream(ctx context.Context, m *merger, a *Snapshot, s *stream, sql string, args []any) {
	defer m.wg.Done()
	// The stream's end is told before its connection is closed, which
	// takes a round trip (Snapshot.Close): the merge goes on meanwhile.
	defer a.release()
	defer close(s.chunks)
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
		if err := m.checkEnd(ctx); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	b := &Batch{Roots: roots, related: map[*mappings.Node]*relation{}}
	last := roots[len(roots)-1]
	for _, c := range r.plan.Root.Children {
		s := m.children[c]
		if s == nil {
			continue
		}
		rel := newRelation(c, s.rows, s.keys)
		b.related[c] = rel
		take := func(row []any) {
			s.buf = s.buf[1:]
			rel.add(c, row)
		}
		var err error
		if s.equal {
			// The stream holds only rows of the root stream's parents,
			// in its order: each belongs to the next root row it equals.
			for _, root := range roots {
				err = s.takeWhile(ctx, func(row []any) bool { return keyEqual(row, s.keyCols, root, c.ParentCols) }, take)
				if err != nil {
					break
				}
			}
		} else {
			err = s.takeWhile(ctx, func(row []any) bool { return compareKeys(row, s.keyCols, last, m.root.keyCols) <= 0 }, take)
		}
		if err != nil {
			return nil, err
		}
		nRows, nKeys := rel.size()
		s.rows, s.keys = min(nRows, maxRoomRows), min(nKeys, maxRoomRows)
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
	r.Queries += b.Queries - pending
	return b, nil
}

// checkEnd makes sure, once the root stream has ended, that every stream
// merged by equality has too: each of its rows belongs to a root row, so
// one left over means the two orders disagree, which would lose rows.
func (m *merger) checkEnd(ctx context.Context) error {
	for _, s := range m.children {
		if !s.equal {
			continue
		}
		err := s.fill(ctx)
		if errors.Is(err, io.EOF) {
			continue
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("extract %q (streamed): rows remain after the last root row: the merge streams disagree on their order", s.node.Table.Name)
	}
	return nil
}

// compareKeys compares the key of row a at colsA with that of row b at
// colsB, value by value: integers as numbers, uuids byte by byte (as
// PostgreSQL orders them).
func compareKeys(a []any, colsA []int, b []any, colsB []int) int {
	for i := range colsA {
		if x, ok := a[colsA[i]].(transform.UUID); ok {
			y, _ := b[colsB[i]].(transform.UUID)
			if c := bytes.Compare(x[:], y[:]); c != 0 {
				return c
			}
			continue
		}
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

// equalStreamQuery reads the rows of relation n of plan's root that join
// the root rows its stream reads - those after the key `after`, in part,
// passing the root's filter (a semi-join, by PostgreSQL's =) - in the
// root stream's order: by n's key values cast to the root key columns'
// types and collations, then n's order.
func equalStreamQuery(plan *mappings.CollectionPlan, n *mappings.Node, after Key, part Part) (string, []any) {
	root := plan.Root
	key := plan.StreamOrder()
	keys := keyRefs(n)
	rootCols := make([]string, len(key))
	order := make([]string, len(key))
	for i, k := range key {
		rc := root.Columns[k.Col]
		rootCols[i] = colRef(rc.Name)
		child, _ := keyColumn(n, n.JoinCols[i])
		order[i] = keys[i]
		if child.TypeName != rc.TypeName || child.Collation != rc.Collation {
			order[i] = fmt.Sprintf("(%s)::%s", keys[i], rc.Type)
			if rc.Category == "S" {
				order[i] += " COLLATE " + collationRef(rc)
			}
		}
	}
	sub, args := streamedRoots(plan, after, part)
	subWhere := ""
	if len(sub) > 0 {
		subWhere = " WHERE " + strings.Join(sub, " AND ")
	}
	where := fmt.Sprintf("(%s) IN (SELECT %s FROM %s AS t%s)", strings.Join(keys, ", "), strings.Join(rootCols, ", "), tableRef(root.Table), subWhere)
	if n.Filter != "" {
		where = "(" + n.Filter + ") AND " + where
	}
	return fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s", selectList(n), fromClause(n), where,
		strings.Join(append(order, orderList(n)...), ", ")), args
}

// streamedRoots are the conditions on plan's root table (alias t) that
// select the root rows its stream reads: those after the key `after`, in
// part, passing the root's filter; args are their parameters, from $1.
func streamedRoots(plan *mappings.CollectionPlan, after Key, part Part) (where []string, args []any) {
	where = partPredicate(plan, part)
	if plan.Root.Filter != "" {
		where = append(where, "("+plan.Root.Filter+")")
	}
	if key := plan.StreamOrder(); len(after) == len(key) {
		pred, a := keysetPredicate(plan.Root, key, after, 0)
		where = append(where, pred)
		args = a
	}
	return where, args
}

// subsetStreamQuery reads subset n of plan's root (the first Limit rows
// per parent, in n's order) for every root row the root stream reads -
// those after the key `after`, in part, passing the root's filter - in
// the root stream's order: a lateral query per root key, on the index of
// n's join columns, as relatedQuery's set-wise read does per batch. Only
// ordered relations (integer or uuid keys) stream this way, so the root
// key's order is the order compareKeys merges by.
func subsetStreamQuery(plan *mappings.CollectionPlan, n *mappings.Node, after Key, part Part) (string, []any) {
	root := plan.Root
	key := plan.StreamOrder()
	where, args := streamedRoots(plan, after, part)
	parents := make([]string, len(key))
	names := make([]string, len(key))
	for i, k := range key {
		names[i] = fmt.Sprintf("p.denorm_k%d", i)
		parents[i] = fmt.Sprintf("%s AS denorm_k%d", colRef(root.Columns[k.Col].Name), i)
	}
	sub := fmt.Sprintf("SELECT %s FROM %s AS t", strings.Join(parents, ", "), tableRef(root.Table))
	if len(where) > 0 {
		sub += " WHERE " + strings.Join(where, " AND ")
	}
	keys := keyRefs(n)
	cond := make([]string, len(keys))
	for i := range keys {
		cond[i] = keys[i] + " = " + names[i]
	}
	if n.Filter != "" {
		cond = append(cond, "("+n.Filter+")")
	}
	order := strings.Join(orderList(n), ", ")
	return fmt.Sprintf("SELECT x.* FROM (%s) AS p CROSS JOIN LATERAL (SELECT %s, row_number() OVER (ORDER BY %s) AS denorm_rn FROM %s WHERE %s ORDER BY %s LIMIT %d) AS x ORDER BY %s, x.denorm_rn",
		sub, selectList(n), order, fromClause(n), strings.Join(cond, " AND "), order, n.Limit, strings.Join(names, ", ")), args
}

// collationRef names column c's collation in SQL.
func collationRef(c mappings.Column) string {
	if c.Collation == "" {
		return `pg_catalog."default"`
	}
	return pgx.Identifier{c.Collation}.Sanitize()
}

// streamQuery reads every row of relation n joined to a root row after
// the key `after` (in part, when parted; of the parents selected by the
// query parents, when not empty), ordered by the join key and then n's
// order.
func streamQuery(n *mappings.Node, after Key, part Part, parents string) (string, []any) {
	keys := keyRefs(n)
	types := n.ParamTypes
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
		exprs, pos := keySelects(n)
		return fmt.Sprintf("SELECT %s, %s FROM %s%s GROUP BY %s ORDER BY %s",
			aggregateExpr(n), strings.Join(exprs, ", "), fromClause(n), cond, strings.Join(pos, ", "), strings.Join(pos, ", ")), args
	}
	return fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s", selectList(n), fromClause(n), cond,
		strings.Join(append(keys, orderList(n)...), ", ")), args
}

// release closes a snapshot a stream read (whatever the stream's context).
func (s *Snapshot) release() { _ = s.Close(context.Background()) }
