package syncer

// A diff pass: every document of some collection entries is rebuilt from
// one snapshot (Produce, as migrate builds it) and compared with what the
// target holds, with verify's comparison (pipeline/compare: both sides hashed,
// sorted on disk, merged); only the documents that differ or are missing
// are written, and those the source no longer gives are deleted (or
// tombstoned, or kept: the collection's onDelete). An
// unchanged target costs reads, not writes. sync --method diff runs it on
// every entry each pass; logical sync runs it on the entries a TRUNCATE
// or a huge transaction touched.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/pipeline/compare"
	"github.com/denorm/denorm/transform"
)

// diff makes the documents of entries (indexes in the plan) in the target
// equal to those snap gives.
func (s *syncer) diff(ctx context.Context, snap *extract.Snapshot, entries []int, st *PassStats) error {
	dir, err := os.MkdirTemp(s.opt.TempDir, "denorm-sync-*")
	if err != nil {
		return fmt.Errorf("sync temporary directory: %w (set --temp-dir)", err)
	}
	defer os.RemoveAll(dir)
	c, err := compare.New(dir, s.opt.SortMemory)
	if err != nil {
		return err
	}
	defer c.Close()

	// The target collections, with the document types of a shared one
	// that this pass rebuilds (all of its types: every document counts).
	var names []string
	types := map[string][]any{}
	whole := map[string]bool{}
	discKey := map[string]string{}
	for _, e := range entries {
		cp := s.plan.Collections[e]
		if !slices.Contains(names, cp.Name) {
			names = append(names, cp.Name)
			whole[cp.Name] = true
		}
		if cp.Discriminator != "" {
			discKey[cp.Name] = cp.Discriminator
			types[cp.Name] = append(types[cp.Name], cp.DiscriminatorValue)
		}
	}
	for e, cp := range s.plan.Collections {
		if whole[cp.Name] && !slices.Contains(entries, e) {
			whole[cp.Name] = false
		}
	}

	// The target is read by a goroutine of its own while the documents
	// are built, as verify does: each side keeps a core busy. The first
	// failure of either side stops the other.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	foundErr := make(chan error, 1)
	go func() {
		err := s.scanTarget(sctx, c, names, discKey, types, whole)
		if err != nil {
			cancel()
		}
		foundErr <- err
	}()
	expErr := s.build(sctx, snap, c, entries, st)
	if expErr != nil {
		cancel()
	}
	fErr := <-foundErr
	if expErr != nil && (fErr == nil || !errors.Is(expErr, context.Canceled)) {
		return expErr
	}
	if fErr != nil {
		return fErr
	}
	if err := c.Flush(); err != nil {
		return err
	}

	var (
		coll      string
		writes    []transform.Document
		gone      []any
		mode      mappings.OnDeleteMode
		tombstone string
	)
	flush := func() error {
		if err := s.write(ctx, coll, writes, st); err != nil {
			return err
		}
		writes = writes[:0]
		if len(gone) > 0 {
			if err := s.gone(ctx, coll, load.Selection{IDs: gone}, st); err != nil {
				return err
			}
			gone = gone[:0]
		}
		return nil
	}
	err = c.Merge(ctx, func(kind string, x, y *compare.Entry) error {
		e := x
		if e == nil {
			e = y
		}
		if name := e.Collection(); name != coll {
			if err := flush(); err != nil {
				return err
			}
			if coll != "" {
				s.opt.Debug(StepCollectionRebuilt, "collection", coll)
			}
			coll = name
			mode, tombstone = s.plan.OnDeleteOf(coll)
		}
		switch kind {
		case compare.Identical:
			st.unchanged(coll)
		case compare.Missing, compare.Different:
			// The bytes compared are the bytes written: the built
			// document's BSON, as the spill file keeps it.
			raw, err := c.Exp.Read(x)
			if err != nil {
				return err
			}
			d, err := load.RawDocument(coll, raw, x.Source, discKey[coll])
			if err != nil {
				return err
			}
			writes = append(writes, d)
			if len(writes) >= s.opt.BatchSize {
				return flush()
			}
		case compare.Unexpected:
			switch mode {
			case mappings.OnDeleteIgnore:
				return nil // kept as it was
			case mappings.OnDeleteTombstone:
				doc, err := c.Found.Read(y)
				if err != nil {
					return err
				}
				if load.IsTombstone(doc, tombstone) {
					return nil // tombstoned by an earlier pass
				}
			}
			gone = append(gone, y.IDValue())
			if len(gone) >= deleteBatch {
				return flush()
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if coll != "" {
		s.opt.Debug(StepCollectionRebuilt, "collection", coll)
	}
	return nil
}

// build adds the documents of entries, built from snap, to c's expected
// side; documents that cannot be built are rejects.
func (s *syncer) build(ctx context.Context, snap *extract.Snapshot, c *compare.Comparison, entries []int, st *PassStats) error {
	for _, e := range entries {
		cp := s.plan.Collections[e]
		err := pipeline.Produce(ctx, snap, cp, pipeline.ProduceOptions{BatchSize: s.opt.BatchSize}, func(b pipeline.Built) error {
			s.rejects(b.Rejects, st)
			for _, d := range b.Docs {
				// Checked as a target checks what it writes: the diff
				// writes these bytes (rawDocument).
				err := transform.CheckKeys(d.Body)
				var raw []byte
				if err == nil {
					raw, err = load.AppendDocument(nil, d.Body)
				}
				if err != nil {
					s.rejects([]transform.Reject{{Collection: cp.Name, Source: d.Source, ID: d.ID, Err: err}}, st)
					continue
				}
				if err := c.Add(&c.Exp, cp.Name, raw, d.Source); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("rebuild %q: %w", cp.Name, err)
		}
	}
	return nil
}

// scanTarget adds the target's documents of names to c's found side:
// of a shared collection, those of the document types in types unless
// the pass rebuilds the whole collection.
func (s *syncer) scanTarget(ctx context.Context, c *compare.Comparison, names []string, discKey map[string]string, types map[string][]any, whole map[string]bool) error {
	for _, name := range names {
		key, vals := discKey[name], types[name]
		err := load.Retry(ctx, s.retryPolicy(), func() error {
			// A retried scan starts the side over: documents are added
			// again, and the merge passes over the repeated keys.
			_, err := s.target.Scan(ctx, name, func(doc []byte) error {
				if key != "" && !whole[name] && !slices.ContainsFunc(vals, func(v any) bool { return load.FieldIs(doc, key, v) }) {
					return nil // another document type of the shared collection
				}
				return c.Add(&c.Found, name, doc, "")
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("read target collection %q: %w", name, err)
		}
	}
	return nil
}
