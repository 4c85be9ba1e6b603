package pipeline

import (
	"fmt"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// TargetProblems checks plan against what a target can store, before
// anything is written: on a server without Decimal128 (FerretDB 1.24
// closes the connection on one, which would otherwise look like an
// outage) every field plan writes as Decimal128 is a problem, saying what
// to write instead.
func TargetProblems(plan *mappings.Plan, caps load.Caps) mappings.Problems {
	var ps mappings.Problems
	if !caps.NoDecimal128 {
		return nil
	}
	file := ""
	if plan.File != nil {
		file = plan.File.Path
	}
	for _, f := range plan.DecimalFields() {
		ps = append(ps, mappings.Problem{File: file, Pos: f.Pos, Msg: fmt.Sprintf(
			"%s.%s: NUMERIC is written as BSON Decimal128 (numeric: decimal, the default), which the target (%s) cannot store: it closes the connection on one; set `numeric: double` (may round) or `numeric: string` (exact text) at the top of the mapping file or on this field",
			f.Collection, f.Path, caps.Server)})
	}
	return ps
}
