package syncer

// Fan-out: from a changed row to every document it affects. For each
// place a collection entry reads the changed table (mappings.Dependents)
// a rule names where the row sits in the entry's documents: which of its
// columns, old and new, tell the rows of the enclosing node that hold it.
// Those are traced up to the root rows (extract.Trace, one statement per
// rule and batch, reading the current state), whose documents - or a
// bucket collection's parents, whose pages are rebuilt whole - are then
// rebuilt with ProduceKeys, the one document-building path, and replaced
// or deleted.
//
// Why the old values and the current state are enough: take the chain of
// rows root <- a1 <- ... <- x that held x when its document was last
// built, and let a_j be the row of that chain closest to the root that
// changed since (x itself when nothing above it changed). a_j's change
// event carries its old join values, which name a_(j-1), unchanged since,
// so the trace from there with the current state reaches the old root; the
// new tuple and the current state reach the new one. Rows that change
// again after the trace read are handled by their own, later, events.
//
// So updates and deletes must carry the old values of every column a rule
// reads: the replica identity must cover them (extract.IdentityNeeds), else
// a row moved to another parent, or deleted, could not be traced to the
// document that held it. Filters are not traced: a row that a filter
// leaves out only names documents whose rebuild changes nothing.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform"
)

// fanout holds the trace rules of a plan (extract.RulesOf).
type fanout struct {
	plan *mappings.Plan
	// rules are, by table ("schema.table"), the rules of its rows.
	rules map[string][]extract.TraceRule
	// used are, by table, the columns the plan reads (nodes' columns, join
	// and link columns): a change of their definition stops sync, and an
	// update that changes none of them changes no document.
	used map[string][]string
	// opaque are the tables read with a filter or an sql: field: every
	// update of theirs may matter.
	opaque map[string]bool
}

func newFanout(plan *mappings.Plan) *fanout {
	r := extract.RulesOf(plan)
	return &fanout{plan: plan, rules: r.Rules, used: r.Used, opaque: r.Opaque}
}

// irrelevant reports whether update c of table t changes no column the
// plan reads, so that no document changes: every old value is known
// (REPLICA IDENTITY FULL) and equal to the new one for the columns read,
// or the update kept the replica identity's columns (no old values sent)
// and the plan reads no other column of t.
func (f *fanout) irrelevant(t string, c *extract.Change) bool {
	if c.Op != extract.OpUpdate || f.opaque[t] {
		return false
	}
	used := f.used[t]
	switch c.OldKind {
	case extract.OldFull:
		for _, col := range used {
			i := c.Rel.Index(col)
			if i < 0 || i >= len(c.New) || i >= len(c.Old) {
				return false
			}
			nv, ov := c.New[i], c.Old[i]
			if nv.Kind == extract.ValueUnchanged {
				continue // stored out of line, not changed
			}
			if ov.Kind != nv.Kind || (nv.Kind != extract.ValueNull && nv.Kind != extract.ValueText) || ov.Text != nv.Text {
				return false
			}
		}
		return true
	case extract.OldNone:
		for _, col := range used {
			i := c.Rel.Index(col)
			if i < 0 || !c.Rel.Columns[i].Key {
				return false
			}
		}
		return true
	}
	return false
}

// seeds are a batch's starting tuples of one rule of table, each once.
type seeds struct {
	rule   extract.TraceRule
	table  string
	tuples map[string]extract.Key
}

// affected is what a batch of changes affects: per collection entry, the
// seeds to trace, or the reason the entry is rebuilt whole (TRUNCATE,
// more than maxKeys rows, values the stream did not carry).
type affected struct {
	f       *fanout
	maxKeys int
	seeds   map[string]*seeds
	count   map[int]int
	full    map[int]string
	// touched are, by entry, the tables whose changed rows reach it;
	// traced the keys each table's seeds were traced to, by entry (the
	// fan-out counted in stats.go).
	touched map[int]map[string]bool
	traced  map[string]map[int]map[string]struct{}
}

func newAffected(f *fanout, maxKeys int) *affected {
	return &affected{f: f, maxKeys: maxKeys, seeds: map[string]*seeds{}, count: map[int]int{}, full: map[int]string{},
		touched: map[int]map[string]bool{}, traced: map[string]map[int]map[string]struct{}{}}
}

func (a *affected) empty() bool { return len(a.seeds) == 0 && len(a.full) == 0 }

// rebuild marks entry e to be rebuilt whole, for why.
func (a *affected) rebuild(e int, why string) {
	if _, ok := a.full[e]; ok {
		return
	}
	a.full[e] = why
	for id, s := range a.seeds {
		if s.rule.Entry == e {
			delete(a.seeds, id)
		}
	}
	delete(a.count, e)
}

// truncated marks every entry reading table to be rebuilt whole.
func (a *affected) truncated(table string) {
	for _, r := range a.f.rules[table] {
		a.rebuild(r.Entry, "TRUNCATE of "+table)
	}
}

// row adds the seeds of one changed row of table: from its new values
// (insert, update) and its old ones (update, delete). value returns a
// column's text (nil for NULL) and whether it is known.
func (a *affected) row(table string, newValue, oldValue func(col string) (*string, bool)) {
	for _, r := range a.f.rules[table] {
		if a.touched[r.Entry] == nil {
			a.touched[r.Entry] = map[string]bool{}
		}
		a.touched[r.Entry][table] = true
		if _, ok := a.full[r.Entry]; ok {
			continue
		}
		for _, get := range []func(string) (*string, bool){newValue, oldValue} {
			if get == nil {
				continue
			}
			k := make(extract.Key, len(r.Cols))
			known := true
			for i, c := range r.Cols {
				k[i], known = get(c)
				if !known {
					break
				}
			}
			if !known {
				a.rebuild(r.Entry, fmt.Sprintf("a change of %s without the values of %s", table, strings.Join(r.Cols, ", ")))
				break
			}
			a.add(table, r, k)
			if _, ok := a.full[r.Entry]; ok {
				break
			}
		}
	}
}

func (a *affected) add(table string, r extract.TraceRule, k extract.Key) {
	if slices.Contains(k, nil) {
		return // NULL joins nothing
	}
	s := a.seeds[r.ID]
	if s == nil {
		s = &seeds{rule: r, table: table, tuples: map[string]extract.Key{}}
		a.seeds[r.ID] = s
	}
	ks := k.String()
	if _, ok := s.tuples[ks]; ok {
		return
	}
	s.tuples[ks] = k
	if a.count[r.Entry]++; a.count[r.Entry] > a.maxKeys {
		a.rebuild(r.Entry, fmt.Sprintf("more than %d changed rows", a.maxKeys))
	}
}

// keys traces the seeds in snap up to the keys of the documents they
// affect, per entry; entries with more than maxKeys keys are marked to be
// rebuilt whole instead.
func (a *affected) keys(ctx context.Context, snap *extract.Snapshot) (map[int]map[string]extract.Key, error) {
	ids := make([]string, 0, len(a.seeds))
	for id := range a.seeds {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := map[int]map[string]extract.Key{}
	for _, id := range ids {
		s, ok := a.seeds[id]
		if !ok {
			continue // its entry went over maxKeys at an earlier rule: rebuild dropped its seeds
		}
		e := s.rule.Entry
		if _, ok := a.full[e]; ok {
			continue
		}
		tuples := make([]extract.Key, 0, len(s.tuples))
		for _, k := range s.tuples {
			tuples = append(tuples, k)
		}
		cp := a.f.plan.Collections[e]
		over := false
		mine := a.tracedBy(s.table, e)
		err := extract.Trace(ctx, snap, cp, s.rule.From, tuples, func(k extract.Key) error {
			m := out[e]
			if m == nil {
				m = map[string]extract.Key{}
				out[e] = m
			}
			ks := k.String()
			m[ks] = k
			mine[ks] = struct{}{}
			if len(m) > a.maxKeys {
				over = true
				return errOverKeys
			}
			return nil
		})
		if over {
			a.rebuild(e, fmt.Sprintf("more than %d documents affected", a.maxKeys))
			delete(out, e)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("collection %q: %w", cp.Name, err)
		}
	}
	return out, nil
}

var errOverKeys = fmt.Errorf("too many keys")

// tracedBy is the set of keys of entry e that table's changed rows were
// traced to in this batch.
func (a *affected) tracedBy(table string, e int) map[string]struct{} {
	byEntry := a.traced[table]
	if byEntry == nil {
		byEntry = map[int]map[string]struct{}{}
		a.traced[table] = byEntry
	}
	m := byEntry[e]
	if m == nil {
		m = map[string]struct{}{}
		byEntry[e] = m
	}
	return m
}

// rebuildKeys rebuilds the documents of entry e for keys from snap and
// writes them; documents whose root row is gone (or no longer passes the
// root filter) are deleted, tombstoned or kept as the collection's
// onDelete says (syncer.gone), and a bucket parent's pages past its new
// count are deleted.
func (s *syncer) rebuildKeys(ctx context.Context, held *heldSnap, e int, keys map[string]extract.Key, st *PassStats) error {
	cp := s.plan.Collections[e]
	list := make([]extract.Key, 0, len(keys))
	for _, k := range keys {
		list = append(list, k)
	}
	slices.SortFunc(list, func(a, b extract.Key) int { return strings.Compare(a.String(), b.String()) })
	var (
		gone  []any
		pages []load.Selection
	)
	var disc []transform.Field
	if cp.Discriminator != "" {
		disc = []transform.Field{{Key: cp.Discriminator, Value: cp.DiscriminatorValue}}
	}
	// The documents built are written WriteBatch at a time: on a server
	// whose every delete scans its collection (FerretDB), a rewrite of
	// more documents at once costs fewer scans.
	var docs []transform.Document
	flush := func() error {
		if err := s.write(ctx, cp.Name, docs, st); err != nil {
			return err
		}
		docs = docs[:0]
		if len(gone) > 0 {
			if err := s.gone(ctx, cp.Name, load.Selection{IDs: gone, Match: disc}, st); err != nil {
				return err
			}
		}
		if len(pages) > 0 {
			if err := s.delete(ctx, cp.Name, load.Selection{Any: pages}, st); err != nil {
				return err
			}
		}
		gone, pages = gone[:0], pages[:0]
		return nil
	}
	build := func(b pipeline.Built) error {
		s.rejects(b.Rejects, st)
		docs = append(docs, b.Docs...)
		for _, r := range b.Keys {
			switch {
			case cp.Bucket == nil && !r.Found:
				gone = append(gone, r.ID)
			case cp.Bucket != nil && r.ParentKey != "":
				match := slices.Clone(disc)
				for i, name := range cp.Bucket.ByNames {
					// As the pages hold it (timestamp: string).
					v := transform.DocValue(&cp.Root.Columns[cp.Bucket.By[i]], r.Values[i])
					match = append(match, transform.Field{Key: name, Value: v})
				}
				pages = append(pages, load.Selection{Match: match, Min: &transform.Field{Key: cp.Bucket.Page, Value: int32(r.Pages)}})
			}
		}
		if len(docs) >= s.opt.WriteBatch || len(gone)+len(pages) >= deleteBatch {
			return flush()
		}
		return nil
	}
	// In groups, each from a snapshot at most SnapshotAge old when the
	// group starts (heldSnap).
	for group := range slices.Chunk(list, snapshotKeys*s.opt.BatchSize) {
		snap, err := held.fresh(ctx)
		if err != nil {
			return err
		}
		if err := pipeline.ProduceKeys(ctx, snap, cp, group, s.opt.BatchSize, build); err != nil {
			return err
		}
	}
	return flush()
}

// snapshotKeys is how many BatchSize of keys one snapshot is asked for at
// a time (Options.SnapshotAge): enough that reading, building and writing
// overlap within a group.
const snapshotKeys = 4

// deleteBatch caps the documents (or bucket parents) of one delete.
const deleteBatch = 1000
