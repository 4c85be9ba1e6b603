package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
)

type validateOptions struct {
	mapping string
	source  string
	sync    string
}

func newValidateCmd(g *globals) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate --mapping FILE [--source URL]",
		Short: "Check a mapping file, and with --source check it against the live database",
		Long: `validate checks the mapping file's structure and meaning and prints every
problem as file:line:col: message. With --source (or DENORM_SOURCE) it also
checks the tables, columns, keys and joins against the database's catalog and
has PostgreSQL parse every query the mapping generates (filters included).
With --sync logical it also checks what 'denorm sync --method logical' needs:
every filter can be followed from change events (no subquery, no other
table, no clock or session value), and every table's replica identity gives
the old values of the columns that place a row in its documents (else it
prints the ALTER TABLE statements a DBA must run; denorm never alters the
source). Nothing is written anywhere. Exit code 2 when the mapping has
problems, 1 when the source is not ready for logical sync.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source = fromEnv(cmd, "source", "DENORM_SOURCE")
			return runValidate(cmd, g, o)
		},
	}
	cmd.Flags().StringVarP(&o.mapping, "mapping", "m", "", "mapping file (YAML)")
	cmd.Flags().StringVar(&o.source, "source", "", "source PostgreSQL URL (env DENORM_SOURCE); optional")
	cmd.Flags().StringVar(&o.sync, "sync", "", "logical: also check what sync --method logical needs (filters, replica identity); needs --source")
	return cmd
}

func runValidate(cmd *cobra.Command, g *globals, o *validateOptions) error {
	ctx := cmd.Context()
	if o.sync != "" && (o.sync != load.SyncLogical || o.source == "") {
		return usageError{fmt.Errorf("--sync takes logical (diff needs nothing more than migrate), with --source")}
	}
	f, err := loadMapping(ctx, o.mapping)
	if err != nil {
		return err
	}
	if o.source == "" {
		fmt.Fprintf(g.stdout, "%s: valid (%d collections); give --source to check it against the database\n", o.mapping, len(f.Collections))
		return nil
	}
	snap, closeSnap, err := openSnapshot(ctx, o.source)
	if err != nil {
		return err
	}
	defer closeSnap()
	warnRole(ctx, g, snap)
	cat, err := extract.ReadCatalog(ctx, snap, f.Tables())
	if err != nil {
		return err
	}
	plan, ps := mappings.ResolveAll(f, cat)
	ps = append(ps, extract.CheckQueries(ctx, snap, plan)...)
	if len(ps) == 0 {
		// Document types of one collection that give one _id: refused
		// when the source has such _ids, a warning when it may.
		collisions, err := extract.CheckIDCollisions(ctx, snap, plan)
		if err != nil {
			return err
		}
		for _, c := range collisions {
			if c.Count > 0 {
				ps = append(ps, mappings.Problem{File: f.Path, Pos: c.B.Pos, Msg: c.Message() + "; " + extract.IDCollisionSuggestion})
				continue
			}
			fmt.Fprintf(g.stderr, "%s:%d:%d: warning: %s; %s\n", f.Path, c.B.Pos.Line, c.B.Pos.Col, c.Message(), extract.IDCollisionSuggestion)
		}
	}
	if len(ps) > 0 {
		return ps.Sorted()
	}
	if o.sync == load.SyncLogical {
		lg, err := snap.Source().Logical("validate")
		if err == nil {
			err = pipeline.CheckLogical(ctx, snap, lg, plan)
		}
		var untrace *pipeline.UntraceableError
		if errors.As(err, &untrace) {
			for _, f := range untrace.Filters {
				ps = append(ps, mappings.Problem{File: plan.File.Path, Pos: f.Node.FilterPos,
					Msg: fmt.Sprintf("%s: logical sync cannot follow this filter: %s (use sync --method diff)", f.Node.Path, f.Why)})
			}
			return ps.Sorted()
		}
		if err != nil {
			return fmt.Errorf("%s: not ready for logical sync: %w", o.mapping, connstr.Parse(o.source).RedactError(err))
		}
		fmt.Fprintf(g.stdout, "%s: valid against the source database (%d collections), and ready for logical sync\n", o.mapping, len(plan.Collections))
		return nil
	}
	fmt.Fprintf(g.stdout, "%s: valid against the source database (%d collections)\n", o.mapping, len(plan.Collections))
	return nil
}
