package pipeline

// verify --repair: the documents verify finds missing or different are
// written as the source gives them - the very BSON it compared - and
// those the source does not give are deleted, a batch at a time, while
// the comparison is merged. A collection whose onDelete keeps the
// documents of deleted roots loses none: in a tombstone collection, one
// the source does not give and that lacks the tombstone field gets it
// (dated now), as sync would have done; in an ignore collection, verify
// does not report them.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// repairBatch is the number of documents (or _ids) of one repair write.
const repairBatch = 1000

// ErrRepairNeedsDelete is a repair of a target that cannot replace and
// delete chosen documents (a directory of files).
var ErrRepairNeedsDelete = errors.New("--repair needs a target that replaces and deletes chosen documents (a server): rerun migrate into a directory")

// repairer writes the repairs of one Verify.
type repairer struct {
	target load.Target
	retry  load.RetryPolicy
	stats  map[string]*VerifyStats
	// discKey is, per shared collection, its discriminator key.
	discKey map[string]string
	coll    string
	writes  []transform.Document
	gone    []any
	plan    *mappings.Plan
}

func newRepairer(t load.Target, plan *mappings.Plan, stats map[string]*VerifyStats, retry load.RetryPolicy) (*repairer, error) {
	if !t.Caps().Delete {
		return nil, ErrRepairNeedsDelete
	}
	if retry.For <= 0 {
		retry = load.DefaultRetry
	}
	r := &repairer{target: t, retry: retry, stats: stats, discKey: map[string]string{}, plan: plan}
	for _, cp := range plan.Collections {
		if cp.Discriminator != "" {
			r.discKey[cp.Name] = cp.Discriminator
		}
	}
	return r, nil
}

// rewrite queues the expected document raw (its source row source) of
// coll.
func (r *repairer) rewrite(ctx context.Context, coll string, raw []byte, source string) error {
	if err := r.switchTo(ctx, coll); err != nil {
		return err
	}
	d, err := load.RawDocument(coll, raw, source, r.discKey[coll])
	if err != nil {
		return err
	}
	r.writes = append(r.writes, d)
	if len(r.writes) >= repairBatch {
		return r.flush(ctx)
	}
	return nil
}

// remove queues the deletion of the document of coll with _id id.
func (r *repairer) remove(ctx context.Context, coll string, id any) error {
	if err := r.switchTo(ctx, coll); err != nil {
		return err
	}
	r.gone = append(r.gone, id)
	if len(r.gone) >= repairBatch {
		return r.flush(ctx)
	}
	return nil
}

func (r *repairer) switchTo(ctx context.Context, coll string) error {
	if coll == r.coll {
		return nil
	}
	if err := r.flush(ctx); err != nil {
		return err
	}
	r.coll = coll
	return nil
}

// flush writes what is queued, retrying transient failures.
func (r *repairer) flush(ctx context.Context) error {
	st := r.stats[r.coll]
	if len(r.writes) > 0 {
		var rejects []transform.Reject
		err := load.Retry(ctx, r.retry, func() error {
			var err error
			rejects, err = r.target.Write(ctx, r.coll, r.writes)
			return err
		})
		if err != nil {
			return fmt.Errorf("repair %q: %w", r.coll, err)
		}
		if len(rejects) > 0 {
			return fmt.Errorf("repair %q: the target refused %d documents (%v)", r.coll, len(rejects), rejects[0])
		}
		st.Rewritten += int64(len(r.writes))
		r.writes = r.writes[:0]
	}
	if len(r.gone) > 0 {
		mode, field := r.plan.OnDeleteOf(r.coll)
		at := time.Now()
		var n int64
		err := load.Retry(ctx, r.retry, func() error {
			var err error
			if mode == mappings.OnDeleteTombstone {
				n, err = r.target.Tombstone(ctx, r.coll, load.Selection{IDs: r.gone}, field, at)
			} else {
				_, err = r.target.Delete(ctx, r.coll, load.Selection{IDs: r.gone})
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("repair %q: %w", r.coll, err)
		}
		if mode == mappings.OnDeleteTombstone {
			st.Tombstoned += n
		} else {
			st.Removed += int64(len(r.gone))
		}
		r.gone = r.gone[:0]
	}
	return nil
}
