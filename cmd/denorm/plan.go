package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/oracle"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform/report"
)

type planOptions struct {
	rowSecurity bool
	mapping     string
	source      string
	format      string
	output      string
	sample      float64
	batchSize   int
	maxDocSize  int
	failOn      string
	progress    string
	sql         bool
	maxFanout   int64
}

// findingsError is plan --fail-on's verdict: findings of that severity
// exist (exit 1, like verify's "different").
type findingsError struct {
	n        int
	severity string
}

func (e findingsError) Error() string {
	what := "errors"
	if e.severity == "warning" {
		what = "errors or warnings"
	}
	return fmt.Sprintf("--fail-on %s: the plan has %d %s (listed in the report)", e.severity, e.n, what)
}

func (findingsError) ExitCode() int { return exitRuntime }

func newPlanCmd(g *globals) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:     "plan --mapping FILE --source URL [--format text|json|markdown|html] [--output FILE] [--sample PERCENT]",
		Example: planExamples,
		Short:   "Dry run: report the documents a migration would write, their sizes and modeling risks",
		Long: `plan builds every document exactly as migrate does (the same code path) from
one consistent snapshot of the source, and writes nothing to any target: it
takes no --target and opens none.

Per collection it reports the document count, the encoded BSON size
distribution (p50/p95/p99/max), the largest arrays, a typical and the largest
document, the documents over the size limit (--max-doc-size: 16 MiB for
MongoDB, 2 MiB for Cosmos DB) with their source keys, the dangling references
(fields declared with ref:), the inferred shape, and warnings where the
mapping contradicts the modeling rules (unbounded or fast-changing embedded
relations, unbounded id arrays, join tables copied as collections).

Fan-out: for every table the mapping reads, how many documents one change
of a row makes sync rewrite (p50/p99/max/mean over its rows, counted in
PostgreSQL over the join path sync traces a change by), per place the
mapping reads it (with the columns read there), so the mapping choice
behind a high figure is named ("country.country copied into
customers.address.city.country"); a table one change of whose rows can
rewrite more than --max-fanout documents (default 1000; 0: none) is a
high-fanout warning.

Coverage: for every table the mapping reads, how many of its rows reach at
least one document and how many reach none, with why (a NULL or dangling
join key, a parent that reaches no document, a filter, a limit, an
inheritance child) and a few keys, counted in PostgreSQL on every row (also
with --sample); rows in no document are an "uncovered" warning.

--sample PERCENT reads about that share of the root rows (chosen by a hash of
the key; a bucket collection's parents are kept whole) and scales the counts:
figures are then estimates, and the report says so.

Formats: text (default), json (stable schema: transform/report/report.schema.json),
markdown, html (one self-contained file, no script: first the whole document
model as one diagram - collections as boxes with their embedded arrays and
objects nested inside and their items per document p50/p99/max, buckets with
their page size, references and id arrays as arrows, indexed fields with a
key, shard keys with a diamond - then each collection's tables and size
histogram).

The report also lists the indexes migrate creates (declared and defaults)
and the shard keys. Progress goes to stderr as for migrate (--progress).

--fail-on error|warning gates a pipeline: after writing the report, plan
exits with code 1 when it has findings of that severity or worse (warning:
errors and warnings; info findings never fail).

--sql prints, instead of the report, the SQL that verify --oracle sql runs:
per collection entry one statement that has PostgreSQL build the documents
as JSON arrays of their field values, in document order, each value named in
a comment (a bucket collection: its items in page order), written from the
mapping apart from migrate's code. Run it with psql to read the documents as
the oracle sees them; the fields it does not check independently are listed
as comments.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source = fromEnv(cmd, "source", "DENORM_SOURCE")
			return runPlan(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.mapping, "mapping", "m", "", "mapping file (YAML)")
	f.StringVar(&o.source, "source", "", sourceUsage)
	f.StringVar(&o.format, "format", "text", "report format: text, json, markdown or html")
	f.StringVarP(&o.output, "output", "o", "", "write the report to this file (default: stdout)")
	f.Float64Var(&o.sample, "sample", 100, "read about this percentage of the root rows (0 < PERCENT <= 100); figures become estimates")
	f.IntVar(&o.batchSize, "batch-size", 1000, "root rows read and built at a time")
	f.IntVar(&o.maxDocSize, "max-doc-size", load.DefaultMaxDocSize, "the target's document size limit in bytes (16 MiB for MongoDB, 2 MiB for Cosmos DB)")
	f.StringVar(&o.failOn, "fail-on", "", "exit 1 when the report has findings of this severity or worse: error or warning")
	f.StringVar(&o.progress, "progress", "auto", "progress display: auto (bars on a terminal, status lines otherwise), bar, lines, none")
	f.Int64Var(&o.maxFanout, "max-fanout", mappings.DefaultMaxFanout, "flag (high-fanout warning) a table one change of whose rows can make sync rewrite more documents than this; 0 flags none")
	f.BoolVar(&o.sql, "sql", false, "print the SQL of verify's oracle (verify --oracle sql) instead of the report")
	addRowSecurityFlag(cmd, &o.rowSecurity)
	return cmd
}

func runPlan(ctx context.Context, g *globals, o *planOptions) error {
	if !slices.Contains(report.Formats, o.format) {
		return usageError{fmt.Errorf("--format must be one of text, json, markdown, html")}
	}
	if !(o.sample > 0 && o.sample <= 100) { // NaN too
		return usageError{fmt.Errorf("--sample must be a percentage in (0, 100]")}
	}
	if o.batchSize <= 0 {
		return usageError{fmt.Errorf("--batch-size must be positive")}
	}
	if err := checkRange("--max-doc-size", o.maxDocSize, 1, maxDocSizeLimit); err != nil {
		return err
	}
	if o.maxFanout < 0 {
		return usageError{fmt.Errorf("--max-fanout must be 0 (no limit) or positive")}
	}
	switch o.failOn {
	case "", "error", "warning":
	default:
		return usageError{fmt.Errorf("--fail-on must be error or warning")}
	}
	switch o.progress {
	case "auto", "bar", "lines", "none":
	default:
		return usageError{fmt.Errorf("--progress must be auto, bar, lines or none")}
	}
	snap, plan, closeSnap, err := openPlan(ctx, g, o.source, o.mapping, nil, o.rowSecurity)
	if err != nil {
		return err
	}
	defer closeSnap()
	if o.sql {
		return printOracleSQL(g, o.output, plan)
	}
	prog := newProgress(g, o.progress)
	prog.expect(plan, 0)
	rep, err := pipeline.Plan(ctx, snap, plan, pipeline.PlanOptions{
		Progress: prog.update,
		Mapping:  o.mapping, BatchSize: o.batchSize, MaxDocSize: o.maxDocSize, Sample: o.sample, MaxFanout: o.maxFanout,
		Analysed: func(c *report.Collection, elapsed time.Duration) {
			g.log.Debug("collection analysed", "collection", c.Name, "documents", c.Seen, "elapsed", elapsed)
		},
	})
	prog.finish()
	if err != nil {
		return err
	}
	w, closeOut, err := openOutput(g, o.output, "report file")
	if err != nil {
		return err
	}
	defer closeOut()
	if err := report.Write(w, rep, o.format); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if o.output != "" {
		g.log.Info("report written", "file", o.output, "format", o.format)
	}
	if o.failOn != "" {
		if n := report.Count(rep.Warnings, o.failOn); n > 0 {
			return findingsError{n: n, severity: o.failOn}
		}
	}
	return nil
}

// printOracleSQL writes the oracle's statements, one per collection entry.
func printOracleSQL(g *globals, output string, plan *mappings.Plan) error {
	queries, err := oracle.Compile(plan, oracle.Options{})
	if err != nil {
		return err
	}
	w, closeOut, err := openOutput(g, output, "SQL file")
	if err != nil {
		return err
	}
	defer closeOut()
	for i, q := range queries {
		if i > 0 {
			fmt.Fprintln(w)
		}
		e := q.Entry
		what := "one row per document: the source row, the document as a JSON array of its field values"
		if e.Bucket != nil {
			what = fmt.Sprintf("one row per item in page order (the oracle cuts pages of %d): the source row, the parent key's text, the parent's key values, the item as a JSON array of its field values", e.Bucket.Size)
		}
		fmt.Fprintf(w, "-- collection %s (table %s.%s): %s\n", e.Name, e.Root.Table.Schema, e.Root.Table.Name, what)
		for _, u := range q.Unchecked {
			fmt.Fprintf(w, "-- not checked independently: %s: %s\n", u.Path, u.Why)
		}
		fmt.Fprintf(w, "%s;\n", q.SQL)
	}
	return nil
}
