package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/mappings/advise"
	"github.com/denorm/denorm/pipeline"
)

type adviseOptions struct {
	rowSecurity bool
	source      string
	schema      string
	output      string
	report      string
	diagram     string
	numeric     string
	target      string
	maxFanout   int64
}

func newAdviseCmd(g *globals) *cobra.Command {
	o := &adviseOptions{}
	cmd := &cobra.Command{
		Use:     "advise --source URL [--target URI] [--schema S] [--output FILE] [--report FILE.md] [--diagram FILE.html|FILE.svg]",
		Example: adviseExamples,
		Short:   "Draft a mapping file from the database's schema and data statistics",
		Long: `advise reads the schema's catalog (primary keys, foreign keys, unique
constraints, join tables recognised by their shape) and statistics (row
counts, children per parent avg/p99/max through each foreign key, updates
and inserts from pg_stat_user_tables), applies the modeling rules, and writes
a complete, valid mapping file with a comment on each choice giving its
reason and numbers:

  embed     children owned by one parent, bounded (p99 <= 20, none over 100),
            not growing with time, rarely changing; line items too, with the
            name of the product they refer to copied beside the reference
            (name, title, product_name...) and an index on the reference
            (orderDetails.productId); a table without a key but with a
            parent (a history) is embedded, the only place it can go
  bucket    children that grow with time (an event time the parent lacks) or
            are too many to embed: pages of 100; the parent embeds the latest 3
  copy      a row referenced one-to-one (a customer's address): an object
  reference everything else: its own collection, each foreign key with ref:
            (an entity others hang off stays one, even when it points at
            another row by a nullable key: country.capital -> city)
  ids       id arrays with ref: instead of join tables, where they stay
            bounded; none through an empty join table
  lookups   small key/label tables copied into documents as values

Columns named like secrets (password, token, hash, secret, salt, api_key),
payment card data and personal identifiers (card_number, cvv, cvc, pan,
pin, iban, ssn) and tsvector columns are left out, each with a comment.
--report writes the choices as a Markdown table as well. --diagram draws
the drafted document model (collections, what they embed, references and
id arrays as arrows, indexed and shard key fields) as a self-contained HTML
page, or an SVG file when its name ends in .svg; plan --format html draws
it with sizes.

It drafts for the target: with --target (or DENORM_TARGET) it connects
and finds what the server is, as migrate does; on FerretDB, which cannot
store BSON Decimal128, NUMERIC columns are drafted as numeric: double
(--numeric string keeps exact text). Without a target it drafts the
format's default, decimal (exact on MongoDB), and says so in the header.

The draft's header says its fan-out, counted on the data: how many
documents one change of a row makes sync rewrite (p50/p99/max/mean), for
the tables over --max-fanout (default 1000; also warned on stderr) and the
worst others, each with the choice that causes it; --report has a fan-out
row for every table.

It reads only (one read-only snapshot); tables over 2 million rows are
sampled (TABLESAMPLE) for the children-per-parent figures.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source = fromEnv(cmd, "source", "DENORM_SOURCE")
			o.target = fromEnv(cmd, "target", "DENORM_TARGET")
			if o.target != "" {
				if err := checkTarget(o.target); err != nil {
					return err
				}
			}
			return runAdvise(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.source, "source", "", sourceUsage)
	f.StringVar(&o.schema, "schema", "public", "the schema to draft a mapping for")
	f.StringVarP(&o.output, "output", "o", "", "write the mapping to this file (default: stdout)")
	f.StringVar(&o.report, "report", "", "also write the choices as a Markdown table to this file")
	f.StringVar(&o.diagram, "diagram", "", "also draw the drafted document model to this file: an HTML page, or SVG when the name ends in .svg")
	f.Int64Var(&o.maxFanout, "max-fanout", mappings.DefaultMaxFanout, "flag a table one change of whose rows can make sync rewrite more documents than this, in the draft's fan-out comment, on stderr and in --report; 0 flags none")
	f.StringVar(&o.numeric, "numeric", "", "numeric mode to write in the file: decimal, double or string (default: what the target stores: double on FerretDB, else the format's decimal)")
	f.StringVar(&o.target, "target", "", "the target to draft for, mongodb://host:port/db or a directory (env DENORM_TARGET): advise connects to learn what it stores (FerretDB: no Decimal128); optional")
	addRowSecurityFlag(cmd, &o.rowSecurity)
	return cmd
}

func runAdvise(ctx context.Context, g *globals, o *adviseOptions) error {
	if o.schema == "" {
		return usageError{fmt.Errorf("--schema cannot be empty")}
	}
	if o.maxFanout < 0 {
		return usageError{fmt.Errorf("--max-fanout must be 0 (no limit) or positive")}
	}
	switch mappings.NumericMode(o.numeric) {
	case "", mappings.NumericDecimal, mappings.NumericDouble, mappings.NumericString:
	default:
		return usageError{fmt.Errorf("--numeric must be decimal, double or string")}
	}
	var target *advise.Target
	if o.target != "" {
		caps, err := targetCaps(ctx, o.target)
		if err != nil {
			return err
		}
		if caps.NoDecimal128 && mappings.NumericMode(o.numeric) == mappings.NumericDecimal {
			return usageError{fmt.Errorf("--numeric decimal: the target (%s) cannot store BSON Decimal128; give --numeric double or string, or leave --numeric out", caps.Server)}
		}
		target = &advise.Target{Server: caps.Server, NoDecimal128: caps.NoDecimal128}
	}
	snap, closeSnap, err := openSnapshot(ctx, o.source, o.rowSecurity)
	if err != nil {
		return err
	}
	defer closeSnap()
	var fan []mappings.TableFanout
	text, choices, err := pipeline.Advise(ctx, pipeline.Advice{Snapshot: snap, Schema: o.schema, Numeric: mappings.NumericMode(o.numeric), Target: target,
		MaxFanout: o.maxFanout, Fanout: func(f []mappings.TableFanout) { fan = f },
		Catalog: func(cat *mappings.Catalog) error {
			_, err := checkRowSecurity(g, cat.Role, slices.Collect(maps.Values(cat.Tables)), o.rowSecurity)
			return err
		}})
	if errors.Is(err, pipeline.ErrNoTables) {
		return usageError{fmt.Errorf("schema %q has no tables: give the schema holding your data with --schema", o.schema)}
	}
	if err != nil {
		return err
	}
	w, closeOut, err := openOutput(g, o.output, "mapping file")
	if err != nil {
		return err
	}
	defer closeOut()
	if _, err := io.WriteString(w, text); err != nil {
		return fmt.Errorf("write mapping: %w", err)
	}
	if o.report != "" {
		if err := os.WriteFile(o.report, []byte(advise.Report(o.schema, append(slices.Clip(choices), fanoutChoices(fan, o.maxFanout)...))), 0o644); err != nil {
			return fmt.Errorf("advise report: %w", err)
		}
	}
	if o.diagram != "" {
		if err := writeAdviseDiagram(ctx, snap, o.schema, text, o.diagram); err != nil {
			return err
		}
	}
	for _, t := range fan {
		if t.Over(o.maxFanout) {
			g.log.Warn("high fan-out: " + t.Summary() + fmt.Sprintf(" (over --max-fanout %d)", o.maxFanout))
		}
	}
	for _, c := range choices {
		g.log.Debug("advise", "table", c.Table, "action", c.Action, "target", c.Target, "reason", c.Reason)
	}
	if o.output != "" {
		g.log.Info("mapping drafted", "file", o.output, "tables", len(choices))
	}
	return nil
}

// targetCaps connects to the target once (no retries: advise writes
// nothing there) to learn what it stores, as validate --target does.
func targetCaps(ctx context.Context, uri string) (load.Caps, error) {
	t, err := load.Open(ctx, uri, load.Options{})
	if err != nil {
		return load.Caps{}, fmt.Errorf("--target: %w", err)
	}
	defer t.Close(ctx)
	return t.Caps(), nil
}

// fanoutChoices are the report's fan-out rows: one per table the draft
// reads, with the place that causes most of it.
func fanoutChoices(fan []mappings.TableFanout, limit int64) []advise.Choice {
	out := make([]advise.Choice, 0, len(fan))
	for _, t := range fan {
		c := advise.Choice{Table: t.Table, Action: "fan-out", Reason: t.Summary()}
		if w := t.Worst(); w != nil {
			c.Target = w.Node
		}
		if t.Over(limit) {
			c.Reason += fmt.Sprintf(": OVER --max-fanout %d", limit)
		}
		out = append(out, c)
	}
	return out
}
