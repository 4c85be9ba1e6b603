package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform/report"
)

type validateOptions struct {
	rowSecurity bool
	mapping     string
	source      string
	target      string
	sync        string
	libpq       bool // no --source: the PG* variables name the source
}

func newValidateCmd(g *globals) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:     "validate --mapping FILE [--source URL] [--target URI] [--sync logical]",
		Example: validateExamples,
		Short:   "Check a mapping file, and with --source check it against the live database",
		Long: `validate checks the mapping file's structure and meaning and prints every
problem as file:line:col: message. With a source (--source, DENORM_SOURCE, or
libpq's PG* variables: PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD,
PGSSLMODE, PGSERVICE, .pgpass, as the other commands read them) it also
checks the tables, columns, keys and joins against the database's catalog and
has PostgreSQL parse every query the mapping generates (filters included).
With --target (a server, or DENORM_TARGET) it also checks the mapping against
what that server can store: FerretDB 1.24 cannot store BSON Decimal128, so
NUMERIC fields in numeric mode decimal (the default) are problems there, each
saying to set numeric: double or string. With --sync logical it also checks
what 'denorm sync --method logical' needs: every filter can be followed from
change events (no subquery, no other table, no clock or session value), and
every table's replica identity gives the old values of the columns that place
a row in its documents (else it prints the ALTER TABLE statements a DBA must
run; denorm never alters the source). Nothing is written anywhere. Exit code
2 when the mapping has problems, 1 when the source is not ready for logical
sync.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source = fromEnv(cmd, "source", "DENORM_SOURCE")
			// Without a URL, the PG* variables name the source, as in
			// every other command (openSource; libpq's rules).
			o.libpq = o.source == "" && libpqSet()
			o.target = fromEnv(cmd, "target", "DENORM_TARGET")
			if o.target != "" {
				if err := checkTarget(o.target); err != nil {
					return err
				}
			}
			return runValidate(cmd, g, o)
		},
	}
	cmd.Flags().StringVarP(&o.mapping, "mapping", "m", "", "mapping file (YAML)")
	cmd.Flags().StringVar(&o.source, "source", "", sourceUsage)
	cmd.Flags().StringVar(&o.target, "target", "", "target server to check the mapping against, mongodb://host:port/db (env DENORM_TARGET); optional, needs --source")
	cmd.Flags().StringVar(&o.sync, "sync", "", "logical: also check what sync --method logical needs (filters, replica identity); needs --source")
	addRowSecurityFlag(cmd, &o.rowSecurity)
	return cmd
}

func runValidate(cmd *cobra.Command, g *globals, o *validateOptions) error {
	ctx := cmd.Context()
	hasSource := o.source != "" || o.libpq
	if o.sync != "" && (o.sync != job.SyncLogical || !hasSource) {
		return usageError{fmt.Errorf("--sync takes logical (diff needs nothing more than migrate), with --source")}
	}
	f, err := loadMapping(ctx, o.mapping)
	if err != nil {
		return err
	}
	if !hasSource && o.target != "" {
		return usageError{fmt.Errorf("--target needs --source: the fields' types come from the source's catalog")}
	}
	if !hasSource {
		fmt.Fprintf(g.stdout, "%s: valid (%s); give --source to check it against the database\n", o.mapping, report.Plural(len(f.Collections), "collection", "collections"))
		return nil
	}
	snap, closeSnap, err := openSnapshot(ctx, o.source, o.rowSecurity)
	if err != nil {
		return err
	}
	defer closeSnap()
	warnRole(ctx, g, snap)
	res, err := pipeline.Validate(ctx, pipeline.Validation{File: f, Snapshot: snap, Target: o.target, Logical: o.sync == job.SyncLogical,
		Catalog: func(cat *mappings.Catalog) error {
			// Before PostgreSQL checks the queries: with row_security off
			// it refuses to plan a query row-level security would filter.
			_, err := checkRowSecurity(g, cat.Role, slices.Collect(maps.Values(cat.Tables)), o.rowSecurity)
			return err
		}})
	if err != nil {
		return err
	}
	for _, w := range res.MayCollide {
		if g.logFormat == logJSON {
			g.logger().Warn(w.Msg, "file", w.File, "line", w.Pos.Line, "col", w.Pos.Col)
			continue
		}
		fmt.Fprintf(g.stderr, "%s:%d:%d: warning: %s\n", w.File, w.Pos.Line, w.Pos.Col, w.Msg)
	}
	if len(res.Problems) > 0 {
		return res.Problems.Sorted()
	}
	plan := res.Plan
	printNotices(g, plan.Notices)
	if o.sync == job.SyncLogical {
		var untrace *extract.UntraceableError
		if errors.As(res.Logical, &untrace) {
			var ps mappings.Problems
			for _, f := range untrace.Filters {
				ps = append(ps, mappings.Problem{File: plan.File.Path, Pos: f.Node.FilterPos,
					Msg: fmt.Sprintf("%s: logical sync cannot follow this filter: %s (use sync --method diff)", f.Node.Path, f.Why)})
			}
			return ps.Sorted()
		}
		if res.Logical != nil {
			return fmt.Errorf("%s: not ready for logical sync: %w", o.mapping, connstr.Parse(o.source).RedactError(res.Logical))
		}
		fmt.Fprintf(g.stdout, "%s: valid against the source database (%s), and ready for logical sync\n", o.mapping, report.Plural(len(plan.Collections), "collection", "collections"))
		return nil
	}
	fmt.Fprintf(g.stdout, "%s: valid against the source database (%s)\n", o.mapping, report.Plural(len(plan.Collections), "collection", "collections"))
	return nil
}

// printNotices writes what Resolve noticed about the source (tables whose
// inheritance children are not read, names other schemas also hold) as
// warnings on stderr, file:line:col first, or as JSON log records.
func printNotices(g *globals, notices []mappings.Notice) {
	for _, n := range notices {
		if n.Rule == "row-security" {
			continue // checkRowSecurity has told
		}
		if g.logFormat == logJSON {
			g.logger().Warn(n.Msg+"; "+n.Suggestion, "file", n.File, "line", n.Pos.Line, "col", n.Pos.Col, "rule", n.Rule, "table", n.Table)
			continue
		}
		fmt.Fprintln(g.stderr, n.String())
	}
}
