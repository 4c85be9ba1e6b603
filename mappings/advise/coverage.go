package advise

import (
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Coverage: a draft never leaves rows out without saying so. The caller
// (cmd/denorm, which can query) counts the rows of every table a draft
// reads that reach no document (extract.Coverage) and drafts again:
//
//   - a table drafted into another's documents (embedded, or stored in
//     pages under its parent) whose rows have no parent row to be stored
//     under (a NULL or dangling foreign key) is drafted as a collection of
//     its own instead (Promotions, Input.Promote), so its rows reach
//     documents whatever their parent;
//   - what is still left out after that (a lookup table's rows nothing
//     references, children of such rows, ...) is said at the table's
//     comment with the count and why (Input.Coverage), and counted in the
//     header; tables the draft does not migrate at all (no key, a join
//     table between tables that are not collections) say so with their
//     row count.

// Promotions returns the tables the draft of in would store under a
// parent (embedded, or in bucket pages) whose rows reach no document
// because they have no parent row (a NULL or dangling foreign key,
// according to cov, the coverage of that draft), each with the reason to
// draft it as a collection of its own. Tables already in in.Promote are
// left out: an empty result means the draft is final.
func Promotions(in Input, cov []mappings.TableCoverage) map[string]string {
	a := newAdvisor(in)
	a.classify()
	out := map[string]string{}
	for _, c := range cov {
		r := a.roles[c.Table]
		if r == nil || r.owner == nil || r.keyless || r.action != "embed" && r.action != "bucket" || in.Promote[c.Table] != "" {
			continue
		}
		var rows int64
		var why []string
		for _, u := range c.Reasons {
			if u.Reason == mappings.ReasonNullKey || u.Reason == mappings.ReasonNoParent {
				rows += u.Rows
				why = append(why, uncoveredText(u))
			}
		}
		if rows == 0 {
			continue
		}
		how := "embedded in"
		if r.action == "bucket" {
			how = "stored in pages under"
		}
		out[c.Table] = fmt.Sprintf("it would be %s %s (%s -> %s), but %d of its %d rows have no %s row to be stored under (%s): its own collection, so that every row reaches a document",
			how, a.tname(r.owner.RefTable), strings.Join(r.owner.Columns, ", "), strings.Join(r.owner.RefColumns, ", "), rows, c.Rows, a.tname(r.owner.RefTable), strings.Join(why, "; "))
	}
	return out
}

// uncoveredText is one reason with its count and samples.
func uncoveredText(u mappings.Uncovered) string {
	s := fmt.Sprintf("%d %s: %s", u.Rows, plural1(u.Rows, "row", "rows"), u.Message)
	if len(u.Samples) > 0 {
		s += " (e.g. " + strings.Join(u.Samples, ", ") + ")"
	}
	return s
}

func plural1(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// coverageNote is what a table's comment adds when rows of it reach no
// document: how many and why.
func coverageNote(c mappings.TableCoverage) string {
	var why []string
	for _, u := range c.Reasons {
		why = append(why, uncoveredText(u))
	}
	return fmt.Sprintf("NOTE: %d of its %d rows %s no document in this draft: %s", c.Unreached, c.Rows, plural1(c.Unreached, "reaches", "reach"), strings.Join(why, "; "))
}

// annotate adds the coverage of the draft (in.Coverage) to the reasons of
// the tables whose rows reach no document, and the row counts to the
// tables the draft does not read at all.
func (a *advisor) annotate() {
	if a.in.Coverage == nil {
		return
	}
	for _, q := range a.names {
		r := a.roles[q]
		if c, ok := a.in.Coverage[q]; ok && c.Unreached > 0 {
			r.reason += "; " + coverageNote(c)
		}
		if !a.reads(r) {
			r.reason += fmt.Sprintf("; NOTE: none of its %d rows is migrated", a.rows(r.t))
		}
	}
}

// reads reports whether the draft reads r's table.
func (a *advisor) reads(r *role) bool {
	switch r.action {
	case "skip":
		return false
	case "link":
		sides, _ := a.linkSides(r)
		return len(sides) > 0
	}
	return true
}

// coverageHeader is the header's sentence on coverage.
func (a *advisor) coverageHeader() string {
	if a.in.Coverage == nil {
		return ""
	}
	var rows int64
	var tables, read []string
	for _, q := range a.names {
		r := a.roles[q]
		if !a.reads(r) {
			continue
		}
		read = append(read, q)
		if c := a.in.Coverage[q]; c.Unreached > 0 {
			rows += c.Unreached
			tables = append(tables, r.t.Name)
		}
	}
	s := fmt.Sprintf("Coverage, counted on the data: every row of the %d tables this draft reads reaches a document.", len(read))
	if rows > 0 {
		s = fmt.Sprintf("Coverage, counted on the data: %d %s of %s (%s) %s no document in this draft; each of these tables says how many and why (NOTE), and `denorm plan` lists them.", rows, plural1(rows, "row", "rows"), plural1(int64(len(tables)), "1 table", fmt.Sprintf("%d tables", len(tables))), strings.Join(tables, ", "), plural1(rows, "reaches", "reach"))
	}
	var unread []string
	for _, q := range a.names {
		if r := a.roles[q]; !a.reads(r) && !slices.Contains(read, q) {
			unread = append(unread, fmt.Sprintf("%s (%d rows)", r.t.Name, a.rows(r.t)))
		}
	}
	if len(unread) > 0 {
		s += " Not migrated at all: " + strings.Join(unread, ", ") + "."
	}
	return s
}
