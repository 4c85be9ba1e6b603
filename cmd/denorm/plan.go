package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/load"
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
		Use:   "plan --mapping FILE --source URL [--format text|json|markdown|html] [--output FILE] [--sample PERCENT]",
		Short: "Dry run: report the documents a migration would write, their sizes and modeling risks",
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

--sample PERCENT reads about that share of the root rows (chosen by a hash of
the key; a bucket collection's parents are kept whole) and scales the counts:
figures are then estimates, and the report says so.

Formats: text (default), json (stable schema: transform/report/report.schema.json),
markdown, html (one self-contained file with diagrams and histograms).

The report also lists the indexes migrate creates (declared and defaults)
and the shard keys. Progress goes to stderr as for migrate (--progress).

--fail-on error|warning gates a pipeline: after writing the report, plan
exits with code 1 when it has findings of that severity or worse (warning:
errors and warnings; info findings never fail).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source = fromEnv(cmd, "source", "DENORM_SOURCE")
			return runPlan(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.mapping, "mapping", "m", "", "mapping file (YAML)")
	f.StringVar(&o.source, "source", "", "source PostgreSQL URL (env DENORM_SOURCE)")
	f.StringVar(&o.format, "format", "text", "report format: text, json, markdown or html")
	f.StringVarP(&o.output, "output", "o", "", "write the report to this file (default: stdout)")
	f.Float64Var(&o.sample, "sample", 100, "read about this percentage of the root rows (0 < PERCENT <= 100); figures become estimates")
	f.IntVar(&o.batchSize, "batch-size", 1000, "root rows read and built at a time")
	f.IntVar(&o.maxDocSize, "max-doc-size", load.DefaultMaxDocSize, "the target's document size limit in bytes (16 MiB for MongoDB, 2 MiB for Cosmos DB)")
	f.StringVar(&o.failOn, "fail-on", "", "exit 1 when the report has findings of this severity or worse: error or warning")
	f.StringVar(&o.progress, "progress", "auto", "progress display: auto (bars on a terminal, status lines otherwise), bar, lines, none")
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
	prog := newProgress(g, o.progress)
	rep, err := pipeline.Plan(ctx, snap, plan, pipeline.PlanOptions{
		Progress: prog.update,
		Mapping:  o.mapping, BatchSize: o.batchSize, MaxDocSize: o.maxDocSize, Sample: o.sample,
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
