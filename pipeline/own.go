package pipeline

// Which documents of a server target are the job's, before denorm
// deletes any without --drop: a fresh run on FerretDB (which deletes the
// job's documents first, as replacing them in place is quadratic there)
// and --restart (on every server).
//
// The rule: the documents of a collection (in a shared collection, of one
// document type) are the job's when the collection holds none of them,
// or when denorm's owner record for it (load.Owner, in _denorm) names the
// run's mapping file and says a run of it is writing them, or says how
// many documents the last completed run left there and the collection
// holds exactly that many. Anything else - no record (documents denorm
// did not write, or wrote before it kept records), another mapping file's
// record, or another count (documents written or deleted by someone else
// since) - and none of them are deleted: a fresh run keeps them and
// replaces documents by _id (slow on FerretDB, a scan per batch), and
// --restart refuses, naming --drop. A run that finds the documents its
// own (or deletes them) records that it writes them (count -1), and
// records the count when it completes: the documents it wrote, where it
// started from none (FerretDB's fresh runs), else the count the server
// gives. Runs of one partition of several leave the records alone. A
// directory target has no records: its files are denorm's output,
// rewritten by every run.
//
// The counts cost a pass over each collection on FerretDB (one per
// shared collection, grouping by the discriminator); a shared collection
// holding only the job's types is then emptied whole, like a collection
// of its own (a drop on FerretDB), instead of type by type.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
	"github.com/denorm/denorm/transform/report"
)

// ownedSet is one collection, or one document type of a shared
// collection, that a run writes, with what the target holds of it.
type ownedSet struct {
	coll string
	typ  *transform.Field
	// docs is how many documents of it the target holds; rec its owner
	// record, nil when there is none; mapping the run's mapping file
	// (mappingID), which must be the record's.
	docs    int64
	rec     *load.Owner
	mapping string
}

// mappingID names the mapping a run writes as owner records keep it: its
// file's absolute path. Documents another mapping file wrote are not the
// job's, even where a record says denorm wrote them.
func mappingID(plan *mappings.Plan) string {
	if plan.File == nil || plan.File.Path == "" {
		return ""
	}
	if abs, err := filepath.Abs(plan.File.Path); err == nil {
		return abs
	}
	return plan.File.Path
}

func (o ownedSet) sel() load.Selection {
	if o.typ == nil {
		return load.Selection{}
	}
	return load.Selection{Match: []transform.Field{*o.typ}}
}

// what names the documents for messages.
func (o ownedSet) what() string {
	if o.typ == nil {
		return "collection " + o.coll
	}
	return fmt.Sprintf("collection %s (documents of type %s=%v)", o.coll, o.typ.Key, o.typ.Value)
}

// owned: every document the target holds of it is the job's (see the
// top of this file).
func (o ownedSet) owned() bool {
	return o.docs == 0 || o.rec != nil && o.rec.Mapping == o.mapping && (o.rec.Docs < 0 || o.rec.Docs == o.docs)
}

// why says how the documents are known to be the job's, or not.
func (o ownedSet) why() string {
	switch {
	case o.docs == 0:
		return "there are none"
	case o.rec != nil && o.rec.Mapping != o.mapping:
		return fmt.Sprintf("denorm's record in %s says another mapping file wrote them, %s", load.RecordCollection, o.rec.Mapping)
	case o.rec != nil && o.rec.Docs < 0:
		return "denorm's record in " + load.RecordCollection + " says a run of it writes them and has not completed"
	case o.rec != nil && o.rec.Docs == o.docs:
		return fmt.Sprintf("denorm's last run left %d there, as its record in %s says", o.rec.Docs, load.RecordCollection)
	case o.rec != nil:
		return fmt.Sprintf("denorm's last run left %d there, so documents were written or deleted there by something else since", o.rec.Docs)
	}
	return "denorm has no record of writing them: they were there before denorm wrote there, or written by a denorm that kept no records"
}

// ownership reads what the target holds of every collection (document
// type) plan writes, and denorm's records of them. In a shared
// collection the types are counted in one pass, which also counts the
// documents of no type of plan's (others, by collection).
func ownership(ctx context.Context, owners load.Owners, plan *mappings.Plan) ([]ownedSet, map[string]int64, error) {
	var out []ownedSet
	others := map[string]int64{}
	for _, c := range TargetCollections(plan) {
		if len(c.Types) == 0 {
			o := ownedSet{coll: c.Name, mapping: mappingID(plan)}
			var err error
			if o.docs, err = owners.Count(ctx, c.Name, o.sel()); err != nil {
				return nil, nil, err
			}
			if o.rec, err = owners.Load(ctx, c.Name, nil); err != nil {
				return nil, nil, err
			}
			out = append(out, o)
			continue
		}
		counts, n, err := owners.CountTypes(ctx, c.Name, c.Types)
		if err != nil {
			return nil, nil, err
		}
		others[c.Name] = n
		for i := range c.Types {
			o := ownedSet{coll: c.Name, typ: &c.Types[i], docs: counts[i], mapping: mappingID(plan)}
			if o.rec, err = owners.Load(ctx, c.Name, o.typ); err != nil {
				return nil, nil, err
			}
			out = append(out, o)
		}
	}
	return out, others, nil
}

// deleteOwned deletes the documents of sets, all the job's: a shared
// collection that holds no other documents is emptied whole (on FerretDB
// that drops it and makes its indexes again: no scan), any other set by
// itself. It tells notice of each set it deleted, with why.
func deleteOwned(ctx context.Context, t load.Target, sets []ownedSet, others map[string]int64, notice func(ownedSet)) error {
	whole := map[string]bool{}
	for _, o := range sets {
		if n, shared := others[o.coll]; shared && n == 0 {
			whole[o.coll] = true
		}
	}
	emptied := map[string]bool{}
	for _, o := range sets {
		if o.docs == 0 {
			continue
		}
		switch {
		case whole[o.coll] && !emptied[o.coll]:
			if _, err := t.Delete(ctx, o.coll, load.Selection{}); err != nil {
				return err
			}
			emptied[o.coll] = true
		case whole[o.coll]:
		default:
			if _, err := t.Delete(ctx, o.coll, o.sel()); err != nil {
				return err
			}
		}
		notice(o)
	}
	return nil
}

// ForeignDocumentsError is a --restart refused because collections hold
// documents that are not the job's (see the top of this file): deleting
// every document of them would delete those too. Nothing was deleted.
type ForeignDocumentsError struct {
	Sets []string // each collection (type), with how many it holds and why they are not the job's
}

func (e *ForeignDocumentsError) Error() string {
	return fmt.Sprintf("--restart deletes the job's documents, and these are not all known to be the job's:\n  %s\nnothing was deleted. Start over with --restart --drop, which drops the job's collections (in a shared collection, deletes every document of the job's types) with everything in them; or delete the documents that are not the job's yourself and restart again",
		strings.Join(e.Sets, "\n  "))
}

// clearOwned deletes the documents of every collection (type) plan
// writes when all of them are the job's, saying what it deleted, after
// calling forget (which deletes the job's checkpoint); else it deletes
// nothing, does not call forget, and returns a *ForeignDocumentsError
// (--restart on a server target).
func clearOwned(ctx context.Context, t load.Target, plan *mappings.Plan, notice func(string), forget func() error) error {
	sets, others, err := ownership(ctx, t.Owners(), plan)
	if err != nil {
		return err
	}
	var foreign []string
	for _, o := range sets {
		if !o.owned() {
			foreign = append(foreign, fmt.Sprintf("%s holds %s (%s)", o.what(), report.Plural(o.docs, "document", "documents"), o.why()))
		}
	}
	if len(foreign) > 0 {
		return &ForeignDocumentsError{Sets: foreign}
	}
	if err := forget(); err != nil {
		return err
	}
	return deleteOwned(ctx, t, sets, others, func(o ownedSet) {
		if notice != nil {
			notice(fmt.Sprintf("--restart: deleted the %s of %s (the job's: %s)", report.Plural(o.docs, "document", "documents"), o.what(), o.why()))
		}
	})
}

// claim is a fresh run's look at what the target holds of the plan's
// collections (not one partition of several): on a server whose fresh
// runs delete first (Caps.EmptyFirst), the job's documents are deleted,
// saying how many and why; documents that are not the job's are kept,
// saying so; the records then say which the run writes.
func (r *runner) claim(ctx context.Context) error {
	owners := r.target.Owners()
	if owners == nil {
		return nil
	}
	caps := r.target.Caps()
	sets, others, err := ownership(ctx, owners, r.plan)
	if err != nil {
		return err
	}
	var mine []ownedSet
	for _, o := range sets {
		switch {
		case o.docs == 0:
		case o.owned() && caps.EmptyFirst:
			mine = append(mine, o)
		case !o.owned() && caps.EmptyFirst:
			r.notice(fmt.Sprintf("%s holds %s, not all known to be the job's (%s): none is deleted; the documents this run writes replace those with the same _id, a batch at a time, which is slow on %s (a scan of the collection per batch). To start it afresh and fast instead, migrate once with --drop, which deletes every one of them",
				o.what(), report.Plural(o.docs, "document", "documents"), o.why(), caps.Server))
		case !o.owned():
			r.notice(fmt.Sprintf("%s holds %s, not all known to be the job's (%s): none is deleted, the documents this run writes replace those with the same _id, and --restart will not delete them (--drop does)",
				o.what(), report.Plural(o.docs, "document", "documents"), o.why()))
		}
	}
	// A shared collection is emptied whole only when every type in it
	// is the job's (the others count 0) and all of them are owned.
	for _, o := range sets {
		if _, shared := others[o.coll]; shared && !o.owned() {
			others[o.coll] = -1
		}
	}
	err = deleteOwned(ctx, r.target, mine, others, func(o ownedSet) {
		r.notice(fmt.Sprintf("%s: deleted the %s of %s before writing them again (they are the job's: %s); on this server a fresh run deletes the job's documents first, because replacing them in place is quadratic there (see docs/migrate.md, \"Targets\")",
			caps.Server, report.Plural(o.docs, "document", "documents"), o.what(), o.why()))
	})
	if err != nil {
		return err
	}
	for _, o := range sets {
		if o.owned() {
			err = owners.Save(ctx, &load.Owner{Collection: o.coll, Type: o.typ, Docs: -1, Job: r.job.Record().Job, Mapping: o.mapping, Updated: time.Now().UTC()})
		} else {
			err = owners.Delete(ctx, o.coll, o.typ)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recordWritten records, once every collection is loaded, how many
// documents the run left in each collection (type) whose record says a
// run writes it: the documents the job wrote, where its fresh run started
// from none (Caps.EmptyFirst), else the server's count.
func (r *runner) recordWritten(ctx context.Context) error {
	owners := r.target.Owners()
	if owners == nil || r.opt.Partitions > 1 {
		return nil
	}
	for _, c := range TargetCollections(r.plan) {
		types := []*transform.Field{nil}
		if len(c.Types) > 0 {
			types = types[:0]
			for i := range c.Types {
				types = append(types, &c.Types[i])
			}
		}
		for _, typ := range types {
			rec, err := owners.Load(ctx, c.Name, typ)
			if err != nil || rec == nil || rec.Docs >= 0 || rec.Mapping != mappingID(r.plan) {
				if err != nil {
					return err
				}
				continue
			}
			o := ownedSet{coll: c.Name, typ: typ}
			if r.target.Caps().EmptyFirst {
				rec.Docs = r.written(c.Name, typ)
			} else if rec.Docs, err = owners.Count(ctx, c.Name, o.sel()); err != nil {
				return err
			}
			rec.Job, rec.Updated = r.job.Record().Job, time.Now().UTC()
			if err := owners.Save(ctx, rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// written sums the documents the job wrote into collection (of type typ).
func (r *runner) written(collection string, typ *transform.Field) int64 {
	var n int64
	for _, s := range r.job.Record().Streams {
		cp := r.plan.Collections[s.Entry]
		if cp.Name == collection && (typ == nil || cp.DiscriminatorValue == typ.Value) {
			n += s.Written
		}
	}
	return n
}

// IsForeignDocuments reports whether err is a *ForeignDocumentsError.
func IsForeignDocuments(err error) bool {
	var fe *ForeignDocumentsError
	return errors.As(err, &fe)
}
