package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
)

// Row-level security: what a command that reads the source does when the
// role it connects as sees only some rows of a mapped table.
//
// Every source session sets row_security = off (as pg_dump does), so
// PostgreSQL raises an error rather than filter silently; before any read
// or write, the commands find from the catalog the mapped tables whose
// policies apply to the role (mappings.Table.RowSecurity) and refuse to run
// (exit 2), naming them and their policies. --row-security acknowledges
// it: sessions keep row_security on, the documents hold only the rows the
// policies show, and the run says so (stderr, plan's and verify's reports,
// migrate's summary file).

// rowSecurityFlag is the flag every command that reads the source takes.
const rowSecurityFlag = "row-security"

// addRowSecurityFlag adds --row-security to cmd.
func addRowSecurityFlag(cmd *cobra.Command, on *bool) {
	cmd.Flags().BoolVar(on, rowSecurityFlag, false,
		"read tables whose row-level security policies apply to the source role, getting only the rows they show (as pg_dump's --enable-row-security); without it such tables are refused")
}

// rowSecurityError refuses tables whose row-level security applies to the
// source role (exit 2: the user decides).
type rowSecurityError struct {
	role   string
	tables []*mappings.Table
}

func (e *rowSecurityError) Error() string {
	return fmt.Sprintf("row-level security would hide rows from the source role%s: %s; denorm would write documents of only the rows the policies show. "+
		"Connect as a role that reads every row (the tables' owner, or a role with BYPASSRLS), or pass --%s to read only what the policies show",
		roleSuffix(e.role), rowSecurityTables(e.tables), rowSecurityFlag)
}

func (e *rowSecurityError) ExitCode() int { return exitUsage }

func roleSuffix(role string) string {
	if role == "" {
		return ""
	}
	return fmt.Sprintf(" %q", role)
}

// rowSecurityTables names each table with the policies that let the role
// read its rows.
func rowSecurityTables(tables []*mappings.Table) string {
	parts := make([]string, len(tables))
	for i, t := range tables {
		if len(t.RowSecurity.Policies) == 0 {
			parts[i] = t.QualifiedName() + " (no policy lets the role read it: it sees no row)"
			continue
		}
		parts[i] = fmt.Sprintf("%s (%s %s)", t.QualifiedName(), plural(len(t.RowSecurity.Policies), "policy", "policies"), strings.Join(t.RowSecurity.Policies, ", "))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// filteredTables lists the tables whose row-level security applies to the
// source role, each once, in name order.
func filteredTables(tables []*mappings.Table) []*mappings.Table {
	var out []*mappings.Table
	for _, t := range tables {
		if t.RowSecurity != nil && !slices.ContainsFunc(out, func(o *mappings.Table) bool { return o.QualifiedName() == t.QualifiedName() }) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *mappings.Table) int { return strings.Compare(a.QualifiedName(), b.QualifiedName()) })
	return out
}

// checkRowSecurity refuses the tables of tables whose row-level security
// applies to the source role, unless acknowledged (--row-security); then
// it says on stderr that they were filtered. It returns those tables.
func checkRowSecurity(g *globals, role string, tables []*mappings.Table, acknowledged bool) ([]*mappings.Table, error) {
	filtered := filteredTables(tables)
	if len(filtered) == 0 {
		return nil, nil
	}
	if !acknowledged {
		return nil, &rowSecurityError{role: role, tables: filtered}
	}
	g.logger().Warn(fmt.Sprintf("--%s: row-level security filters what is read: %s; the documents hold only the rows the policies show the source role%s",
		rowSecurityFlag, rowSecurityTables(filtered), roleSuffix(role)))
	return filtered, nil
}

// rowSecurityBlockedError is PostgreSQL refusing, while row_security is
// off, a query row-level security would filter: a table the catalog check
// could not see coming (a view over such a table, policies created during
// the run, a filter or sql: field reading another table).
type rowSecurityBlockedError struct {
	table string
	err   error
}

func (e *rowSecurityBlockedError) Error() string {
	return fmt.Sprintf("row-level security would hide rows of table %q from the source role: denorm would write documents of only the rows its policies show. "+
		"Connect as a role that reads every row (the table's owner, or a role with BYPASSRLS), or pass --%s to read only what the policies show (%v)",
		e.table, rowSecurityFlag, e.err)
}

func (e *rowSecurityBlockedError) Unwrap() error { return e.err }
func (e *rowSecurityBlockedError) ExitCode() int { return exitUsage }

// explainRowSecurity puts PostgreSQL's refusal of a query row-level
// security would filter in the words of rowSecurityError; other errors
// are returned as they are.
func explainRowSecurity(err error) error {
	if table, ok := extract.RowSecurityBlocked(err); ok {
		return &rowSecurityBlockedError{table: table, err: err}
	}
	return err
}

// rowSecurityReport is how the reports (verify's, migrate's summary file)
// list the tables row-level security filtered.
type rowSecurityReport struct {
	Table    string   `json:"table"`
	Policies []string `json:"policies"`
}

func rowSecurityReports(tables []*mappings.Table) []rowSecurityReport {
	var out []rowSecurityReport
	for _, t := range tables {
		p := t.RowSecurity.Policies
		if p == nil {
			p = []string{}
		}
		out = append(out, rowSecurityReport{Table: t.QualifiedName(), Policies: p})
	}
	return out
}
