package syncer

// What a pass (or, following, a batch of changes) did: rows changed by
// table, documents by collection, lags.

import (
	"cmp"
	"slices"
	"time"

	"github.com/denorm/denorm/mappings"
)

// TableChanges counts one table's changed rows in a pass.
type TableChanges struct {
	Inserts, Updates, Deletes, Truncates int64
	// Skipped counts the updates that changed no column the plan reads:
	// they rebuilt nothing.
	Skipped int64
	// Documents counts the documents (of a bucket collection: the
	// parents, whose pages are rebuilt whole) the table's changed rows
	// made sync rebuild (logical), batch by batch: the distinct documents
	// they were traced to, and for a collection rebuilt whole by a diff
	// that they reach, every document the diff compared. A document two
	// tables' rows reach counts for both; two rows of one table, once.
	Documents int64
}

// Rows is the number of rows changed.
func (t TableChanges) Rows() int64 { return t.Inserts + t.Updates + t.Deletes }

// PerChange is the fan-out: the documents rebuilt per changed row (0
// when no row changed).
func (t TableChanges) PerChange() float64 {
	if t.Rows() == 0 {
		return 0
	}
	return float64(t.Documents) / float64(t.Rows())
}

// TableFanout is one table's fan-out in a pass.
type TableFanout struct {
	Table string
	TableChanges
}

// WorstFanout lists the tables whose changed rows rebuilt the most
// documents per change, worst first (ties by name), at most n.
func (p *PassStats) WorstFanout(n int) []TableFanout {
	var out []TableFanout
	for t, c := range p.Tables {
		if c.Rows() > 0 {
			out = append(out, TableFanout{Table: t, TableChanges: *c})
		}
	}
	slices.SortFunc(out, func(a, b TableFanout) int {
		if c := cmp.Compare(b.PerChange(), a.PerChange()); c != 0 {
			return c
		}
		return cmp.Compare(a.Table, b.Table)
	})
	return out[:min(n, len(out))]
}

// DocCounts counts one collection's documents in a pass: written
// (inserted or replaced), deleted, and found unchanged (diff); and
// Tombstoned, those whose root row is gone that got their tombstone
// field (onDelete: tombstone) instead of being deleted.
type DocCounts struct {
	Written, Deleted, Unchanged int64
	Tombstoned                  int64
}

// PassStats is what one pass (or, following, one batch) did.
type PassStats struct {
	Method     string
	Start, End time.Time
	// Copy: the pass was the job's initial copy.
	Copy bool
	// Transactions counts the source transactions applied (logical).
	Transactions int
	// Tables counts the changed rows by table ("schema.table").
	Tables map[string]*TableChanges
	// Collections counts the documents by collection.
	Collections map[string]*DocCounts
	// Rebuilt lists the collections rebuilt whole by a diff, each with
	// why ("comments: TRUNCATE of public.comment").
	Rebuilt []string
	// Position is the job's position after the pass (logical).
	Position string
	// Lag is how long after its commit on the source the newest change
	// applied was acknowledged by the target (0 when nothing was
	// pending); TxLags is that time for every transaction applied (at most
	// 10,000 per batch).
	Lag    time.Duration
	TxLags []time.Duration
	// Rejected counts the documents that could not be built or written.
	Rejected int64
	// Spent is where the time of applying went (logical).
	Spent Spent
	// Snapshots counts the source snapshots a logical pass read its
	// batches' documents from (SnapshotAge).
	Snapshots int
}

// Spent splits the time a batch took to apply: waiting for a snapshot
// that sees its transactions, tracing changed rows to document keys,
// reading and building the documents (less the writes), and writing
// them (the target's acknowledgements).
type Spent struct {
	Snapshot, Trace, Build, Write time.Duration
}

func newPassStats(method string) PassStats {
	return PassStats{Method: method, Start: time.Now(), Tables: map[string]*TableChanges{}, Collections: map[string]*DocCounts{}}
}

func (p *PassStats) coll(name string) *DocCounts {
	c := p.Collections[name]
	if c == nil {
		c = &DocCounts{}
		p.Collections[name] = c
	}
	return c
}

func (p *PassStats) table(name string) *TableChanges {
	t := p.Tables[name]
	if t == nil {
		t = &TableChanges{}
		p.Tables[name] = t
	}
	return t
}

func (p *PassStats) unchanged(coll string) { p.coll(coll).Unchanged++ }

// Totals returns the rows changed and the documents written, deleted and
// unchanged, over all tables and collections.
func (p *PassStats) Totals() (changes, written, deleted, unchanged int64) {
	for _, t := range p.Tables {
		changes += t.Rows()
	}
	for _, c := range p.Collections {
		written, deleted, unchanged = written+c.Written, deleted+c.Deleted, unchanged+c.Unchanged
	}
	return
}

// add merges q into p (a --once pass made of several batches).
func (p *PassStats) add(q PassStats) {
	for k, v := range q.Tables {
		t := p.table(k)
		t.Inserts, t.Updates, t.Deletes, t.Truncates = t.Inserts+v.Inserts, t.Updates+v.Updates, t.Deletes+v.Deletes, t.Truncates+v.Truncates
		t.Skipped += v.Skipped
		t.Documents += v.Documents
	}
	for k, v := range q.Collections {
		c := p.coll(k)
		c.Written, c.Deleted, c.Unchanged = c.Written+v.Written, c.Deleted+v.Deleted, c.Unchanged+v.Unchanged
		c.Tombstoned += v.Tombstoned
	}
	p.Transactions += q.Transactions
	p.Rebuilt = append(p.Rebuilt, q.Rebuilt...)
	p.Rejected += q.Rejected
	p.Snapshots += q.Snapshots
	p.Spent.Snapshot, p.Spent.Trace = p.Spent.Snapshot+q.Spent.Snapshot, p.Spent.Trace+q.Spent.Trace
	p.Spent.Build, p.Spent.Write = p.Spent.Build+q.Spent.Build, p.Spent.Write+q.Spent.Write
	p.Copy = p.Copy || q.Copy
	if q.Position != "" {
		p.Position = q.Position
	}
	p.Lag = q.Lag
	p.End = q.End
}

// countFanout adds to each changed table's Documents what batch a made
// sync rebuild for its rows: the keys they were traced to in the entries
// rebuilt by key, and, for each entry rebuilt whole they reach, the
// documents the diff compared in its collection (p.Collections: called
// after the batch's diff, before its rebuilds by key).
func (p *PassStats) countFanout(a *affected, plan *mappings.Plan) {
	for t, byEntry := range a.traced {
		tc := p.Tables[t]
		if tc == nil {
			continue
		}
		for e, keys := range byEntry {
			if _, whole := a.full[e]; !whole {
				tc.Documents += int64(len(keys))
			}
		}
	}
	counted := map[[2]string]bool{}
	for e := range a.full {
		name := plan.Collections[e].Name
		c := p.Collections[name]
		if c == nil {
			continue
		}
		for t := range a.touched[e] {
			tc := p.Tables[t]
			if tc == nil || counted[[2]string{t, name}] {
				continue
			}
			counted[[2]string{t, name}] = true
			tc.Documents += c.Written + c.Deleted + c.Unchanged
		}
	}
}
