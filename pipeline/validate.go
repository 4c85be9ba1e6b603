package pipeline

import (
	"context"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// Validation checks a mapping file against a live source (and, when
// Target is set, a target): the validate command's work. Nothing is
// written anywhere.
type Validation struct {
	File     *mappings.File
	Snapshot *extract.Snapshot
	// Target, when set, is a target's address to check the plan against
	// what it can store (TargetProblems); it is opened only to ask.
	Target string
	// Logical also checks what sync --method logical needs
	// (CheckLogical): ValidateResult.Logical.
	Logical bool
	// Catalog, when set, is called with the catalog read, before
	// PostgreSQL plans the mapping's queries; an error stops there.
	Catalog func(*mappings.Catalog) error
}

// ValidateResult is what Validate found.
type ValidateResult struct {
	// Plan is the resolved plan (nil when the file does not resolve).
	Plan *mappings.Plan
	// Problems are the mapping's problems against the source (catalog,
	// queries, target, _ids two entries give now); none: it is valid.
	Problems mappings.Problems
	// MayCollide are entries of one collection that may give one _id
	// but give none now: warnings, worded as problems.
	MayCollide []mappings.Problem
	// Logical is why logical sync cannot follow the plan (an
	// *UntraceableError names the filters); checked only for a valid
	// plan and Validation.Logical.
	Logical error
}

// Validate resolves v.File against the source's catalog and checks the
// plan: PostgreSQL parses every query, the target can store the fields,
// no two entries of a collection give one _id, and logical sync can
// follow it. The error is a failure to check, not a problem found.
func Validate(ctx context.Context, v Validation) (*ValidateResult, error) {
	snap := v.Snapshot
	cat, err := extract.ReadCatalog(ctx, snap, v.File.Tables())
	if err != nil {
		return nil, err
	}
	if v.Catalog != nil {
		if err := v.Catalog(cat); err != nil {
			return nil, err
		}
	}
	res := &ValidateResult{}
	plan, ps := mappings.ResolveAll(v.File, cat)
	res.Plan = plan
	ps = append(ps, extract.CheckQueries(ctx, snap, plan)...)
	if v.Target != "" && plan != nil {
		t, err := load.Open(ctx, v.Target, load.Options{})
		if err != nil {
			return nil, err
		}
		defer t.Close(ctx)
		ps = append(ps, TargetProblems(plan, t.Caps())...)
	}
	if len(ps) == 0 {
		// Document types of one collection that give one _id: refused
		// when the source has such _ids, a warning when it may.
		collisions, err := extract.CheckIDCollisions(ctx, snap, plan)
		if err != nil {
			return nil, err
		}
		for _, c := range collisions {
			p := mappings.Problem{File: v.File.Path, Pos: c.B.Pos, Msg: c.Message() + "; " + extract.IDCollisionSuggestion}
			if c.Count > 0 {
				ps = append(ps, p)
			} else {
				res.MayCollide = append(res.MayCollide, p)
			}
		}
	}
	res.Problems = ps
	if len(ps) > 0 || !v.Logical {
		return res, nil
	}
	lg, err := snap.Source().Logical("validate")
	if err == nil {
		err = extract.CheckLogical(ctx, snap, lg, plan)
	}
	res.Logical = err
	return res, nil
}
