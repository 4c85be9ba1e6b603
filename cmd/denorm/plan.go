package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/pipeline/report"
)

type planOptions struct {
	mapping    string
	source     string
	format     string
	output     string
	sample     float64
	batchSize  int
	maxDocSize int
}

func newPlanCmd(g *globals) *cobra.Command {
	o := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan --mapping FILE --source URL [--format text|json|markdown|html] [--output FILE] [--sample PERCENT]",
		Short: "Dry run: report the documents a migration would write, their sizes and modeling risks",
		Long: `plan builds every document exactly as migrate does (the same code path) from
one consistent snapshot of the source, and writes nothing to any target: it
takes no --target and opens no sink.

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

Formats: text (default), json (stable schema: pipeline/report/report.schema.json),
markdown, html (one self-contained file with diagrams and histograms).`,
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
	return cmd
}

func runPlan(ctx context.Context, g *globals, o *planOptions) error {
	if !slices.Contains(report.Formats, o.format) {
		return usageError{fmt.Errorf("--format must be one of text, json, markdown, html")}
	}
	if o.sample <= 0 || o.sample > 100 {
		return usageError{fmt.Errorf("--sample must be a percentage in (0, 100]")}
	}
	if o.batchSize <= 0 || o.maxDocSize <= 0 {
		return usageError{fmt.Errorf("--batch-size and --max-doc-size must be positive")}
	}
	snap, closeSnap, err := openSnapshot(ctx, o.source)
	if err != nil {
		return err
	}
	defer closeSnap()
	plan, err := loadPlan(ctx, snap, o.mapping)
	if err != nil {
		return err
	}
	// References are checked on a second connection sharing the snapshot:
	// the first is busy streaming while batches are analysed.
	conn2, err := connectSource(ctx, o.source)
	if err != nil {
		return err
	}
	defer conn2.Close(ctx)
	refSnap, err := extract.BeginAt(ctx, conn2, snap.ID)
	if err != nil {
		return err
	}
	defer refSnap.Close(ctx)

	rep, err := buildReport(ctx, g, snap, refSnap, plan, o)
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
	return nil
}

// buildReport runs every collection entry through pipeline.Produce and
// collects the figures.
func buildReport(ctx context.Context, g *globals, snap, refSnap *extract.Snapshot, plan *mappings.Plan, o *planOptions) (*report.Report, error) {
	rep := &report.Report{SchemaVersion: report.SchemaVersion, Mapping: o.mapping, MaxDocSize: o.maxDocSize,
		SamplePercent: o.sample, Estimated: o.sample < 100, Generated: time.Now().UTC()}
	check := func(coll string, values []string) (map[string]bool, error) {
		var target *mappings.CollectionPlan
		for _, cp := range plan.Collections {
			if cp.Name == coll && cp.Bucket == nil {
				target = cp
				break
			}
		}
		if target == nil {
			return nil, report.SkipError{Reason: fmt.Sprintf("collection %q is not a document collection of this mapping", coll)}
		}
		if len(target.ID) != 1 {
			return nil, report.SkipError{Reason: fmt.Sprintf("collection %q has a composite _id", coll)}
		}
		missing, err := refSnap.MissingKeys(ctx, target.Root.Table, target.Root.Columns[target.ID[0]].Name, values)
		if errors.Is(err, extract.ErrKeyType) {
			return nil, report.SkipError{Reason: err.Error()}
		}
		return missing, err
	}
	var tables []string
	for _, cp := range plan.Collections {
		start := time.Now()
		col := report.NewCollector(cp, o.maxDocSize)
		for _, rc := range col.RefCollections() {
			for _, t := range plan.Collections {
				if t.Name == rc && t.Bucket == nil {
					col.SetRefTable(rc, t.Root.Table.Name)
					break
				}
			}
		}
		run := cp
		if o.sample < 100 {
			run = sampled(cp, o.sample)
		}
		err := pipeline.Produce(ctx, snap, run, pipeline.ProduceOptions{BatchSize: o.batchSize, Reuse: true}, func(b pipeline.Built) error {
			if err := col.Add(b.Rows, b.Docs, len(b.Errors)); err != nil {
				return err
			}
			return col.CheckRefs(check)
		})
		if err != nil {
			return nil, err
		}
		c := col.Finish(100 / o.sample)
		rep.Collections = append(rep.Collections, c)
		g.log.Debug("collection analysed", "collection", cp.Name, "documents", c.Seen, "elapsed", time.Since(start))
		walkTables(cp.Root, func(t *mappings.Table) {
			if q := t.Schema + "." + t.Name; !slices.Contains(tables, q) {
				tables = append(tables, q)
			}
		})
	}
	act, err := extract.ReadActivity(ctx, refSnap, tables)
	if err != nil {
		return nil, err
	}
	stats := map[string]report.TableStats{}
	for k, a := range act {
		stats[k] = report.TableStats{Rows: a.Rows, Inserts: a.Inserts, Updates: a.Updates, Deletes: a.Deletes}
	}
	rep.Warnings = report.Warnings(plan, rep.Collections, stats, o.maxDocSize)
	return rep, nil
}

func walkTables(n *mappings.Node, fn func(*mappings.Table)) {
	fn(n.Table)
	for _, c := range n.Children {
		walkTables(c, fn)
	}
}

// sampled returns a copy of cp whose root reads about percent % of the
// rows: a bucket collection keeps whole parents.
func sampled(cp *mappings.CollectionPlan, percent float64) *mappings.CollectionPlan {
	var cols []string
	if cp.Bucket != nil {
		for _, i := range cp.Bucket.By {
			cols = append(cols, cp.Root.Columns[i].Name)
		}
	} else {
		for _, i := range cp.ID {
			cols = append(cols, cp.Root.Columns[i].Name)
		}
	}
	root := *cp.Root
	cond := extract.SampleFilter(cols, percent)
	if root.Filter != "" {
		cond = "(" + root.Filter + ") AND " + cond
	}
	root.Filter = cond
	out := *cp
	out.Root = &root
	return &out
}
