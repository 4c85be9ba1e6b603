package report

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Coverage in plan's report: for every table the mapping reads, the rows
// that reach a document and those that reach none (mappings.TableCoverage,
// counted by extract.Coverage in the plan's snapshot, on every row whatever
// --sample says).

// CoverageWarnings are the uncovered findings: one warning per table with
// rows that reach no document, told for the collection whose node reads
// it first, with the largest reason and a sample.
func CoverageWarnings(cov []mappings.TableCoverage) []Warning {
	var out []Warning
	for _, c := range cov {
		if c.Unreached == 0 {
			continue
		}
		r := c.Reasons[0]
		coll, _, _ := strings.Cut(r.Node, ".")
		msg := fmt.Sprintf("%d of %d rows of table %s %s: ", c.Unreached, c.Rows, c.Table, verb(c.Unreached, "reaches no document", "reach no document"))
		if len(c.Reasons) == 1 {
			msg += r.Message + samplesText(r)
		} else {
			msg += fmt.Sprintf("%s; %d more for other reasons (see coverage)", UncoveredText(r), c.Unreached-r.Rows)
		}
		out = append(out, Warning{Severity: "warning", Rule: "uncovered", Collection: coll, Path: r.Node, Message: msg,
			Suggestion: suggestion(r.Reason)})
	}
	return out
}

// UncoveredText is one reason in words with its count and samples:
// "7 rows: country.capital is NULL, ... (e.g. (code)=(ATA))".
func UncoveredText(r mappings.Uncovered) string {
	return Plural(r.Rows, "row", "rows") + ": " + r.Message + samplesText(r)
}

func samplesText(r mappings.Uncovered) string {
	if len(r.Samples) == 0 {
		return ""
	}
	return " (e.g. " + strings.Join(r.Samples, ", ") + ")"
}

func verb(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// suggestion says what to do about rows left out for reason.
func suggestion(reason string) string {
	switch reason {
	case mappings.ReasonNullKey, mappings.ReasonNullID, mappings.ReasonNoParent, mappings.ReasonParentUnreached, mappings.ReasonNotLinked, mappings.ReasonNoRelated:
		return "if these rows matter, make the table a collection of its own (embedding it elsewhere too if you like), or embed it under a parent every row has"
	case mappings.ReasonBeyondLimit, mappings.ReasonFilteredOrLimit, mappings.ReasonHeldBack:
		return "a subset keeps only the first rows per parent: keep every row in a bucket collection (pattern 2) if they matter"
	case mappings.ReasonFiltered:
		return "the filter leaves them out on purpose? then nothing to do; otherwise widen the filter"
	case mappings.ReasonInherited:
		return "denorm reads ONLY the named table: map each inheritance child as a collection entry of its own, or make the parent a partitioned table"
	}
	return ""
}

// coverageLines renders coverage as text lines: a line per table, then its
// reasons indented.
func coverageLines(cov []mappings.TableCoverage, indent string) []string {
	var out []string
	for _, c := range cov {
		line := fmt.Sprintf("%s%s: %d of %d rows reach a document", indent, c.Table, c.Reached, c.Rows)
		if c.Unreached > 0 {
			line += fmt.Sprintf(", %d reach none", c.Unreached)
		}
		out = append(out, line)
		for _, r := range c.Reasons {
			out = append(out, indent+"  "+UncoveredText(r))
		}
	}
	return out
}

// CoverageText is coverage as text, a table a line and its reasons below
// it, each line starting with indent.
func CoverageText(cov []mappings.TableCoverage, indent string) string {
	lines := coverageLines(cov, indent)
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
