package syncer

// A changed mapping, applied in place (job.PrepareSync compares it with
// the job's: mappings.ComparePrints). Only the collections the change
// touches are rebuilt, by a diff (diff.go) against a new snapshot, which
// writes only the documents that differ - a new field is written to every
// document of its collection, and nothing to the others - and deletes
// those the mapping no longer gives; the other collections are not read
// or written. A logical job then streams on from its position under the
// new mapping, for every collection: each change since that position is
// applied again, rebuilding its documents from the current state, which
// is harmless (the documents the rebuild wrote are rebuilt from a newer
// state still), and every change after the rebuild's snapshot reaches the
// rebuilt collections too. The job's record names the collections while
// they are rebuilt (job.Job.Rebuilding), saved before the first write,
// and takes the new mapping only once they are (AdoptMapping): a run
// killed in between rebuilds them again, whatever its mapping.
//
// Collections the mapping no longer has are left as they are, with a
// notice: sync never deletes a whole collection on its own.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/mappings"
)

// remapNotices says what the run's mapping change does.
func (s *syncer) remapNotices() {
	r := s.remap
	for _, name := range r.Removed {
		s.opt.Notice(fmt.Sprintf("collection %s is no longer in the mapping: sync stops writing it and leaves its documents; drop it when no reader needs it", name))
	}
	if len(r.Rebuild) > 0 {
		var what []string
		for _, b := range r.Rebuild {
			what = append(what, fmt.Sprintf("%s (%s)", b.Collection, b.Why))
		}
		s.opt.Info(fmt.Sprintf("the mapping changed: rebuilding %s by a diff (only the documents that differ are written); the other collections are untouched", strings.Join(what, ", ")))
	}
	if len(r.Indexes) > 0 {
		s.opt.Info(fmt.Sprintf("the mapping changed the indexes of %s: creating those missing (indexes no longer declared stay)", strings.Join(r.Indexes, ", ")))
	}
}

// remapReasons are the collections to rebuild, each with why.
func (s *syncer) remapReasons() []string {
	var out []string
	for _, b := range s.remap.Rebuild {
		out = append(out, fmt.Sprintf("%s: the mapping changed (%s)", b.Collection, b.Why))
	}
	return out
}

// rebuilds reports whether a mapping change rebuilds collection name.
func (s *syncer) rebuilds(name string) bool {
	return s.remap != nil && slices.Contains(s.remap.Collections(), name)
}

// remapEntries are the plan's entries a mapping change rebuilds.
func (s *syncer) remapEntries() []int {
	var out []int
	for e, cp := range s.plan.Collections {
		for _, b := range s.remap.Rebuild {
			if b.Collection == cp.Name && (b.Types == nil || slices.Contains(b.Types, mappings.TypeOf(cp))) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// rebuild applies a mapping change to a logical job that streams (see
// the file comment): the publication set to the tables the mapping
// reads, the collections to rebuild recorded, rebuilt by a diff against
// a new snapshot, their indexes made, and the new mapping recorded. The
// stream then goes on from the job's position, which the rebuild leaves.
func (s *syncer) rebuild(ctx context.Context) error {
	var tables []string
	for _, t := range s.plan.Tables() {
		tables = append(tables, t.QualifiedName())
	}
	// Before the snapshot: a change of a table the mapping now reads is
	// in the snapshot or in the stream after the publication's change.
	if err := s.lg.Publish(ctx, tables); err != nil {
		return err
	}
	if len(s.remap.Rebuild) == 0 {
		if err := s.remapDone(ctx); err != nil {
			return err
		}
		return s.job.Save(ctx)
	}
	s.job.Rebuilding(s.remap.Collections())
	if err := s.job.Save(ctx); err != nil {
		return err
	}
	s.opt.Debug(StepRebuildRecorded, "collections", strings.Join(s.remap.Collections(), ","))
	return s.retrying(ctx, func() (bool, error) {
		st := newPassStats(s.opt.Method)
		st.Rebuilt = s.remapReasons()
		snap, err := s.src.Snapshot(ctx)
		if err != nil {
			return false, err
		}
		defer closeSnap(snap)
		if err := s.diff(ctx, snap, s.remapEntries(), &st); err != nil {
			return false, err
		}
		if err := s.remapDone(ctx); err != nil {
			return false, err
		}
		return true, s.passDone(ctx, &st, nil, nil)
	})
}

// remapDone ends a mapping change once what it rebuilds is written (by a
// rebuild, a copy or a diff pass): the indexes of the rebuilt collections
// are made, and the job takes the run's mapping (saved by the caller).
func (s *syncer) remapDone(ctx context.Context) error {
	if s.remap == nil {
		return nil
	}
	if err := s.createIndexes(ctx, s.rebuilds); err != nil {
		return err
	}
	s.job.AdoptMapping()
	s.remap = nil
	s.opt.Debug(StepMappingRecorded)
	return nil
}

// diffRemapped marks a diff pass that applies a mapping change (every
// collection is diffed anyway): its stats name the collections the change
// touches.
func (s *syncer) diffRemapped(st *PassStats) {
	if s.remap != nil && s.opt.Method == job.SyncDiff {
		st.Rebuilt = append(st.Rebuilt, s.remapReasons()...)
	}
}
