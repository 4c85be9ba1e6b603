package pipeline

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// TargetProblems checks plan against what a target can store, before
// anything is written: on a server without Decimal128 (FerretDB 1.24
// closes the connection on one, which would otherwise look like an
// outage) every field plan writes as Decimal128 is a problem, saying what
// to write instead; on a server that cannot hold a double quote in a
// top-level field name (FerretDB 1.24 fails the whole write), every such
// name the mapping gives.
func TargetProblems(plan *mappings.Plan, caps load.Caps) mappings.Problems {
	var ps mappings.Problems
	file := ""
	if plan.File != nil {
		file = plan.File.Path
	}
	if caps.NoQuoteInNames {
		for _, cp := range plan.Collections {
			for _, n := range topLevelNames(cp) {
				if strings.Contains(n.name, `"`) {
					ps = append(ps, mappings.Problem{File: file, Pos: n.pos, Msg: fmt.Sprintf(
						"%s: field name %q holds a double quote, which the target (%s) cannot store in a document's top-level field names (it fails the whole write with \"malformed JSON\"); name the field without one",
						cp.Name, n.name, caps.Server)})
				}
			}
		}
	}
	if !caps.NoDecimal128 {
		return ps
	}
	for _, f := range plan.DecimalFields() {
		ps = append(ps, mappings.Problem{File: file, Pos: f.Pos, Msg: fmt.Sprintf(
			"%s.%s: NUMERIC is written as BSON Decimal128 (numeric: decimal, the default), which the target (%s) cannot store: it closes the connection on one; set `numeric: double` (may round) or `numeric: string` (exact text) at the top of the mapping file or on this field",
			f.Collection, f.Path, caps.Server)})
	}
	return ps
}

type namePos struct {
	name string
	pos  mappings.Pos
}

// topLevelNames are the top-level field names of cp's documents the
// mapping gives (a pivot's come from the data): a bucket page's parent
// key, page and items fields; a document's fields.
func topLevelNames(cp *mappings.CollectionPlan) []namePos {
	var out []namePos
	if b := cp.Bucket; b != nil {
		for _, n := range append(append([]string{}, b.ByNames...), b.Page, b.Items) {
			out = append(out, namePos{n, cp.Pos})
		}
		return out
	}
	for _, f := range cp.Root.Fields {
		if f.Pivot == nil {
			out = append(out, namePos{f.Name, f.Pos})
		}
	}
	return out
}
