package pipeline

// Indexes and shard keys of a plan's collections: migrate sets the shard
// keys before the first write and creates the indexes before or after
// loading; verify checks that the target holds them as declared. Also the
// plan variants a run may ask for: a subset of its collections, the first
// rows of each.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform/report"
)

// When migrate creates the indexes (--indexes).
const (
	IndexesBefore = "before"
	IndexesAfter  = "after"
	IndexesNone   = "none"
)

// ShardResult is what became of one collection's shard key.
type ShardResult struct {
	Collection string
	Key        string
	load.ShardOutcome
}

// ShardCollections sets the declared shard key of every collection of
// plan that has one, before anything is written to it. A target without
// sharding leaves them unset: the results say so, and so does notice.
func ShardCollections(ctx context.Context, t load.Target, plan *mappings.Plan, retry load.RetryPolicy, notice func(string)) ([]ShardResult, error) {
	var out []ShardResult
	for _, set := range plan.Indexes {
		if set.ShardKey == nil {
			continue
		}
		var res load.ShardOutcome
		err := load.Retry(ctx, retry, func() error {
			var err error
			res, err = t.Shard(ctx, set.Collection, set.ShardKey)
			return err
		})
		if err != nil {
			return out, err
		}
		r := ShardResult{Collection: set.Collection, Key: set.ShardKeyText(), ShardOutcome: res}
		out = append(out, r)
		if notice != nil {
			if res.Applied {
				notice(fmt.Sprintf("collection %s is sharded on (%s) (%s)", r.Collection, r.Key, res.How))
			} else {
				notice(fmt.Sprintf("shard key (%s) of collection %s not applied: %s", r.Key, r.Collection, res.Note))
			}
		}
	}
	return out, nil
}

// IndexesCreated counts the indexes CreateIndexes made sure of.
type IndexesCreated struct {
	Collection string
	Indexes    []string
	// Missing are those of Indexes the target does not hold as declared
	// after creating them (the index phase of Run checks; CreateIndexes
	// leaves it empty and returns the refusals).
	Missing []string
	Elapsed time.Duration
}

// CreateIndexes creates every index of plan's collections on t (each
// collection's set at once; transient failures retried). Indexes that
// exist as declared are left alone. It goes on after an index the target
// refuses and returns those refusals (*load.IndexError) joined at the end.
func CreateIndexes(ctx context.Context, t load.Target, plan *mappings.Plan, retry load.RetryPolicy, notice func(string)) ([]IndexesCreated, error) {
	var (
		out  []IndexesCreated
		errs []error
	)
	for _, set := range plan.Indexes {
		if len(set.Indexes) == 0 {
			continue
		}
		start := time.Now()
		names := make([]string, len(set.Indexes))
		for i, ix := range set.Indexes {
			names[i] = ix.Name
		}
		if notice != nil {
			notice(fmt.Sprintf("creating %s on %s: %s", report.Plural(len(names), "index", "indexes"), set.Collection, strings.Join(names, ", ")))
		}
		err := load.Retry(ctx, retry, func() error { return t.CreateIndexes(ctx, set.Collection, set.Indexes) })
		var ie *load.IndexError
		if err != nil && !errors.As(err, &ie) {
			return out, err
		}
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, IndexesCreated{Collection: set.Collection, Indexes: names, Elapsed: time.Since(start)})
	}
	return out, errors.Join(errs...)
}

// Index check states.
const (
	IndexOK        = "ok"
	IndexMissing   = "missing"
	IndexDifferent = "different"
)

// IndexCheck is one declared (or default) index as the target holds it.
type IndexCheck struct {
	Collection string `json:"collection"`
	Index      string `json:"index"`
	Keys       string `json:"keys"`
	// State is IndexOK, IndexMissing or IndexDifferent; Detail says what
	// differs.
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
}

// CheckIndexes compares the indexes of plan's collections with those the
// target holds: each must exist with its keys (in order), name, unique
// flag and partial filter. Indexes the target holds besides are not
// differences. A collection the target lacks has every index missing.
func CheckIndexes(ctx context.Context, t load.Target, plan *mappings.Plan) ([]IndexCheck, error) {
	var out []IndexCheck
	for _, set := range plan.Indexes {
		if len(set.Indexes) == 0 {
			continue
		}
		checks, err := checkIndexSet(ctx, t, set)
		if err != nil {
			return out, err
		}
		out = append(out, checks...)
	}
	return out, nil
}

// checkIndexSet compares one collection's indexes with the target's (see
// CheckIndexes).
func checkIndexSet(ctx context.Context, t load.Target, set mappings.IndexSet) ([]IndexCheck, error) {
	var out []IndexCheck
	have, _, err := t.Indexes(ctx, set.Collection)
	if err != nil {
		return nil, err
	}
	for _, want := range set.Indexes {
		c := IndexCheck{Collection: set.Collection, Index: want.Name, Keys: want.KeyText(), State: IndexMissing}
		for _, h := range have {
			sameKeys := mappings.SameKeys(h.Keys, want.Keys)
			if !sameKeys && h.Name != want.Name {
				continue
			}
			c.State = IndexDifferent
			var d []string
			if !sameKeys {
				d = append(d, fmt.Sprintf("keys (%s), found (%s)", want.KeyText(), h.KeyText()))
			}
			if h.Name != want.Name {
				d = append(d, fmt.Sprintf("name %s, found %s", want.Name, h.Name))
			}
			if h.Unique != want.Unique {
				d = append(d, fmt.Sprintf("unique %v, found %v", want.Unique, h.Unique))
			}
			if !load.SamePartial(h.Partial, want.Partial) {
				d = append(d, fmt.Sprintf("partial filter %s, found %s", partialText(want.Partial), partialText(h.Partial)))
			}
			if len(d) == 0 {
				c.State = IndexOK
			}
			c.Detail = strings.Join(d, "; ")
			if sameKeys {
				break
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// CheckSubset is an error naming the names that are not among known, and
// the known ones; nil when every name is known.
func CheckSubset(known, names []string) error {
	var unknown []string
	for _, n := range names {
		if !slices.Contains(known, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("the mapping has no collection %s (it has %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return nil
}

func partialText(p mappings.Partial) string {
	if p == nil {
		return "none"
	}
	return p.String()
}

// Subset returns a copy of plan holding only the named target collections
// (every entry of each), in plan order. An unknown name is an error
// listing the known ones (CheckSubset).
func Subset(plan *mappings.Plan, names []string) (*mappings.Plan, error) {
	if err := CheckSubset(plan.CollectionNames(), names); err != nil {
		return nil, err
	}
	out := *plan
	out.Collections, out.Indexes = nil, nil
	for _, cp := range plan.Collections {
		if slices.Contains(names, cp.Name) {
			out.Collections = append(out.Collections, cp)
		}
	}
	for _, set := range plan.Indexes {
		if slices.Contains(names, set.Collection) {
			out.Indexes = append(out.Indexes, set)
		}
	}
	return &out, nil
}

// Limit returns a copy of plan whose collections hold only their first n
// documents in stream order: the first n root rows of a document
// collection, the pages of the first n parents of a bucket collection.
// Related rows are read for those only.
func Limit(plan *mappings.Plan, n int) *mappings.Plan {
	out := *plan
	out.Collections = make([]*mappings.CollectionPlan, len(plan.Collections))
	for i, cp := range plan.Collections {
		root := *cp.Root
		root.Filter = extract.FirstKeysFilter(cp.Root.Table, streamKeyColumns(cp), cp.Root.Filter, n)
		c := *cp
		c.Root = &root
		out.Collections[i] = &c
	}
	return &out
}
