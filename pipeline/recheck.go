package pipeline

// Rechecks: verify against a target that a sync job writes as it reads.
//
// The first comparison reads the target while the job writes it, and
// builds the expected documents from a snapshot the job may not have
// applied yet: a document the job is behind on, or already ahead on,
// differs without being wrong. So its differences (up to Recheck.Max)
// are held back and compared again, in rounds, the documents of those
// _ids alone:
//
//  1. a new snapshot S is taken, and L, a WAL position past every commit
//     it sees (extract.Source.CommittedWAL);
//  2. verify waits until the job has applied everything before L
//     (Recheck.Wait: its saved position);
//  3. the target's documents are read (after 2) and compared with those
//     S gives.
//
// A document identical in a round is cleared. Otherwise, read after the
// job applied L_i, the target's document is one the source gave at some
// moment between L_i and the next round's snapshot, or drift. It is
// cleared when it equals the document the next round's snapshot gives
// (the source gave it); when the source gives the same document at both
// ends (the next round's expected document hashes as this round's), a
// legitimate document read in between would equal it: the difference is
// confirmed. Documents the source kept changing stay in the rounds, up to
// Recheck.Rounds; those left are reported as differences too
// ("unsettled"), as nothing shows they are not.
//
// Repair (with Recheck.Pause): the job is asked to pause between two of
// its batches (job/pause.go), one more round compares the confirmed and
// unsettled documents at a fresh snapshot and writes those that still
// differ, then the job goes on. Nothing the job writes races a repair,
// and everything it writes after it is built from a newer snapshot.

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline/compare"
)

// Recheck tunes the rechecks of a Verify against a running job.
type Recheck struct {
	// Wait returns once the job writing the target has applied every
	// change committed before lsn (an error past a bound).
	Wait func(ctx context.Context, lsn extract.LSN) error
	// Pause, with VerifyOptions.Repair, pauses the job and returns the
	// function that lets it go on.
	Pause func(ctx context.Context) (resume func(), err error)
	// Rounds is the number of rounds (0: 4); Max the number of
	// differences rechecked (0: 10,000), the others reported unchecked.
	Rounds, Max int
	// Debug, when set, is told of every round.
	Debug func(msg string, args ...any)
}

// RecheckStats says what the rechecks did.
type RecheckStats struct {
	// Rechecked differences of the first comparison, of which Cleared
	// were identical in a round, Confirmed different at both ends of one
	// and Unsettled neither within Rounds; NotRechecked past Max.
	Rechecked    int64 `json:"rechecked"`
	Cleared      int64 `json:"cleared"`
	Confirmed    int64 `json:"confirmed"`
	Unsettled    int64 `json:"unsettled"`
	NotRechecked int64 `json:"notRechecked"`
	// Rounds is the number of rounds run (the repair's included).
	Rounds int `json:"rounds"`
}

// pendingDoc is a difference being rechecked.
type pendingDoc struct {
	coll  string
	first string // its kind in the first comparison
	// differed: it differed in the last round, whose expected and found
	// documents hashed to exp and found (nil: none); last is that
	// round's difference.
	differed   bool
	exp, found []byte
	last       Difference
	// confirmed: by two rounds (else unsettled).
	confirmed bool
}

// rechecker holds the differences of a Verify's first comparison.
type rechecker struct {
	opt     *Recheck
	pending map[string]*pendingDoc
	over    int64 // differences past Max, reported at once
}

func newRechecker(opt *Recheck) *rechecker {
	return &rechecker{opt: opt, pending: map[string]*pendingDoc{}}
}

// held takes a difference the merge found: the first comparison's goes
// to the rechecks (true, while there is room); a recheck's is recorded.
func (v *verifier) held(key, exp, found []byte, d Difference) bool {
	if v.pass != nil {
		v.pass.seen(key, d.Kind, exp, found, &d)
		return false
	}
	if v.rc == nil {
		return false
	}
	if len(v.rc.pending) >= v.rc.max() {
		v.rc.over++
		return false
	}
	v.rc.pending[string(key)] = &pendingDoc{coll: d.Collection, first: d.Kind, last: d}
	return true
}

func (r *rechecker) max() int {
	if r.opt.Max > 0 {
		return r.opt.Max
	}
	return 10_000
}

// recheckPass is one round's comparison of the pending documents.
type recheckPass struct {
	keys map[string]*pendingDoc
	got  map[string]roundResult
}

type roundResult struct {
	kind       string
	exp, found []byte
	d          *Difference
}

func (p *recheckPass) seen(key []byte, kind string, exp, found []byte, d *Difference) {
	p.got[string(key)] = roundResult{kind: kind, exp: slices.Clone(exp), found: slices.Clone(found), d: d}
}

// run rechecks the pending differences, reports those that remain through
// opt.Difference (in collection and _id order) and sets the counts of
// stats, from the first comparison's, to the outcome.
func (r *rechecker) run(ctx context.Context, src *extract.Source, plan *mappings.Plan, target load.Target, opt VerifyOptions, stats map[string]*VerifyStats) (*RecheckStats, error) {
	debug := r.opt.Debug
	if debug == nil {
		debug = func(string, ...any) {}
	}
	rs := &RecheckStats{Rechecked: int64(len(r.pending)), NotRechecked: r.over}
	rounds := r.opt.Rounds
	if rounds <= 0 {
		rounds = 4
	}
	for _, p := range r.pending {
		st := stats[p.coll]
		switch p.first {
		case DiffMissing:
			st.Missing--
		case DiffUnexpected:
			st.Unexpected--
		case DiffDifferent:
			st.Different--
		}
	}
	todo := maps.Clone(r.pending)
	remain := map[string]*pendingDoc{}
	for round := 1; round <= rounds && len(todo) > 0; round++ {
		got, _, err := r.round(ctx, src, plan, target, opt, todo, false)
		if err != nil {
			return nil, err
		}
		rs.Rounds++
		for k, p := range todo {
			g, ok := got[k]
			switch {
			case !ok || g.kind == compare.Identical || p.differed && bytes.Equal(p.found, g.exp):
				// Identical, or neither side holds it any more, or what
				// the target held in the last round is what the
				// source gives now.
				rs.Cleared++
				stats[p.coll].Identical++
				stats[p.coll].Cleared++
				delete(todo, k)
			case p.differed && bytes.Equal(p.exp, g.exp):
				rs.Confirmed++
				p.last, p.confirmed = *g.d, true
				remain[k] = p
				delete(todo, k)
			default:
				p.differed, p.exp, p.found, p.last = true, g.exp, g.found, *g.d
			}
		}
		debug("recheck round", "round", round, "cleared", rs.Cleared, "confirmed", rs.Confirmed, "left", len(todo))
	}
	rs.Unsettled = int64(len(todo))
	maps.Copy(remain, todo)

	if opt.Repair && len(remain) > 0 {
		if r.opt.Pause == nil {
			return nil, fmt.Errorf("a repair of a target a job writes needs the job paused")
		}
		resume, err := r.opt.Pause(ctx)
		if err != nil {
			return nil, err
		}
		got, res, err := r.round(ctx, src, plan, target, opt, remain, true)
		resume()
		if err != nil {
			return nil, err
		}
		rs.Rounds++
		for k, p := range remain {
			if g, ok := got[k]; !ok || g.kind == compare.Identical {
				// The job wrote it meanwhile: nothing to repair.
				if p.confirmed {
					rs.Confirmed--
				} else {
					rs.Unsettled--
				}
				rs.Cleared++
				stats[p.coll].Identical++
				stats[p.coll].Cleared++
				delete(remain, k)
			}
		}
		for _, c := range res.Collections {
			stats[c.Collection].Rewritten += c.Rewritten
			stats[c.Collection].Removed += c.Removed
		}
	}

	for _, k := range slices.Sorted(maps.Keys(remain)) {
		p := remain[k]
		st := stats[p.coll]
		switch p.last.Kind {
		case DiffMissing:
			st.Missing++
		case DiffUnexpected:
			st.Unexpected++
		case DiffDifferent:
			st.Different++
		}
		if err := opt.Difference(p.last); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// round compares the documents of keys at a new snapshot: after the job
// applied it, or, repairing (the job paused), at once, writing those that
// differ.
func (r *rechecker) round(ctx context.Context, src *extract.Source, plan *mappings.Plan, target load.Target, opt VerifyOptions, keys map[string]*pendingDoc, repair bool) (map[string]roundResult, *VerifyResult, error) {
	snap, err := src.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer snap.Close(context.WithoutCancel(ctx))
	if !repair {
		lsn, err := src.CommittedWAL(ctx)
		if err != nil {
			return nil, nil, err
		}
		if err := r.opt.Wait(ctx, lsn); err != nil {
			return nil, nil, err
		}
	}
	var names []string
	for _, p := range keys {
		if !slices.Contains(names, p.coll) {
			names = append(names, p.coll)
		}
	}
	sub := *plan
	sub.Collections = nil
	for _, cp := range plan.Collections {
		if slices.Contains(names, cp.Name) {
			sub.Collections = append(sub.Collections, cp)
		}
	}
	pass := &recheckPass{keys: keys, got: map[string]roundResult{}}
	ropt := VerifyOptions{
		BatchSize: opt.BatchSize, TempDir: opt.TempDir, SortMemory: opt.SortMemory,
		MaxFieldDiffs: opt.MaxFieldDiffs, Repair: repair,
	}
	res, err := compareDocuments(ctx, snap, &sub, target, ropt, pass)
	if err != nil {
		return nil, nil, err
	}
	return pass.got, res, nil
}
