package pipeline

// A diff pass: every document of some collection entries is rebuilt from
// one snapshot (Produce, as migrate builds it) and compared with what the
// target holds, with verify's comparison (compare.go: both sides hashed,
// sorted on disk, merged); only the documents that differ or are missing
// are written, and those the source no longer gives are deleted. An
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
	c, err := newComparison(dir, s.opt.SortMemory)
	if err != nil {
		return err
	}
	defer c.close()

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
	if err := c.flush(); err != nil {
		return err
	}

	var (
		coll   string
		writes []transform.Document
		gone   []any
	)
	flush := func() error {
		if err := s.write(ctx, coll, writes, st); err != nil {
			return err
		}
		writes = writes[:0]
		if len(gone) > 0 {
			if err := s.delete(ctx, coll, load.Selection{IDs: gone}, st); err != nil {
				return err
			}
			gone = gone[:0]
		}
		return nil
	}
	err = c.merge(ctx, func(kind string, x, y *entry) error {
		e := x
		if e == nil {
			e = y
		}
		if name := e.collection(); name != coll {
			if err := flush(); err != nil {
				return err
			}
			coll = name
		}
		switch kind {
		case matchIdentical:
			st.unchanged(coll)
		case DiffMissing, DiffDifferent:
			raw, err := c.exp.read(x)
			if err != nil {
				return err
			}
			body, err := load.DecodeDocument(raw)
			if err != nil || len(body) == 0 {
				return fmt.Errorf("collection %q: read back a built document: %v", coll, err)
			}
			d := transform.Document{Collection: coll, ID: body[0].Value, Body: body, Source: x.source}
			if k := discKey[coll]; k != "" {
				if v, ok := body.Get(k); ok {
					d.Discriminator = &transform.Field{Key: k, Value: v}
				}
			}
			writes = append(writes, d)
			if len(writes) >= s.opt.BatchSize {
				return flush()
			}
		case DiffUnexpected:
			gone = append(gone, y.idValue())
			if len(gone) >= deleteBatch {
				return flush()
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// build adds the documents of entries, built from snap, to c's expected
// side; documents that cannot be built are rejects.
func (s *syncer) build(ctx context.Context, snap *extract.Snapshot, c *comparison, entries []int, st *PassStats) error {
	for _, e := range entries {
		cp := s.plan.Collections[e]
		err := Produce(ctx, snap, cp, ProduceOptions{BatchSize: s.opt.BatchSize}, func(b Built) error {
			s.rejects(b.Rejects, st)
			for _, d := range b.Docs {
				raw, err := load.AppendDocument(nil, d.Body)
				if err != nil {
					s.rejects([]transform.Reject{{Collection: cp.Name, Source: d.Source, ID: d.ID, Err: err}}, st)
					continue
				}
				if err := c.add(&c.exp, cp.Name, raw, d.Source); err != nil {
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
func (s *syncer) scanTarget(ctx context.Context, c *comparison, names []string, discKey map[string]string, types map[string][]any, whole map[string]bool) error {
	for _, name := range names {
		key, vals := discKey[name], types[name]
		err := load.Retry(ctx, s.retryPolicy(), func() error {
			// A retried scan starts the side over: documents are added
			// again, and the merge passes over the repeated keys.
			_, err := s.target.Scan(ctx, name, func(doc []byte) error {
				if key != "" && !whole[name] && !slices.ContainsFunc(vals, func(v any) bool { return load.FieldIs(doc, key, v) }) {
					return nil // another document type of the shared collection
				}
				return c.add(&c.found, name, doc, "")
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("read target collection %q: %w", name, err)
		}
	}
	return nil
}
