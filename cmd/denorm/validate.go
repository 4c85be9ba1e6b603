package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
)

type validateOptions struct {
	mapping string
	source  string
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
Nothing is written anywhere. Exit code 2 when the mapping has problems.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source = fromEnv(cmd, "source", "DENORM_SOURCE")
			return runValidate(cmd, g, o)
		},
	}
	cmd.Flags().StringVarP(&o.mapping, "mapping", "m", "", "mapping file (YAML)")
	cmd.Flags().StringVar(&o.source, "source", "", "source PostgreSQL URL (env DENORM_SOURCE); optional")
	return cmd
}

func runValidate(cmd *cobra.Command, g *globals, o *validateOptions) error {
	ctx := cmd.Context()
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
	fmt.Fprintf(g.stdout, "%s: valid against the source database (%d collections)\n", o.mapping, len(plan.Collections))
	return nil
}
