package pipeline

// Plan: build every document as migrate does, write none, and report what
// they would be (transform/report computes the figures).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform/report"
)

// PlanOptions tune Plan.
type PlanOptions struct {
	// Mapping is the mapping file's name, as the report shows it.
	Mapping string
	// BatchSize is the number of root rows read and built at a time.
	BatchSize int
	// MaxDocSize is the target's document size limit in bytes.
	MaxDocSize int
	// Sample, in (0, 100), reads about that percentage of the root rows
	// (a bucket collection keeps whole parents) and scales the counts;
	// 100 reads all.
	Sample float64
	// Analysed, when set, is told of each collection entry once its
	// figures are final.
	Analysed func(c *report.Collection, elapsed time.Duration)
}

// Plan builds the documents of every collection entry of plan from snap
// with Produce (the code migrate runs), writes nothing, and returns the
// report of what they are: counts, sizes, arrays, samples, documents over
// MaxDocSize, dangling references and modeling warnings. References and
// table activity are read on a second connection sharing snap's snapshot,
// as the first is busy streaming while batches are analysed.
func Plan(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan, opt PlanOptions) (*report.Report, error) {
	refSnap, err := snap.Source().Adopt(ctx, snap.ID)
	if err != nil {
		return nil, err
	}
	defer refSnap.Close(ctx)

	rep := &report.Report{SchemaVersion: report.SchemaVersion, Mapping: opt.Mapping, MaxDocSize: opt.MaxDocSize,
		SamplePercent: opt.Sample, Estimated: opt.Sample < 100, Generated: time.Now().UTC()}
	check := func(coll string, values []string) (map[string]bool, error) {
		target := plan.RefTarget(coll)
		if target == nil {
			return nil, report.SkipError{Reason: fmt.Sprintf("collection %q is not a document collection of this mapping", coll)}
		}
		if len(target.IDCols) != 1 {
			return nil, report.SkipError{Reason: fmt.Sprintf("collection %q has a composite _id", coll)}
		}
		missing, err := refSnap.MissingKeys(ctx, target.Root.Table, target.Root.Columns[target.IDCols[0]].Name, values)
		if errors.Is(err, extract.ErrKeyType) {
			return nil, report.SkipError{Reason: err.Error()}
		}
		return missing, err
	}
	var (
		buf   []byte
		sized []report.Sized
	)
	for _, cp := range plan.Collections {
		start := time.Now()
		col := report.NewCollector(cp, opt.MaxDocSize, load.AppendExtJSON)
		for _, rc := range col.RefCollections() {
			if t := plan.RefTarget(rc); t != nil {
				col.SetRefTable(rc, t.Root.Table.Name)
			}
		}
		run := cp
		if opt.Sample < 100 {
			run = sampled(cp, opt.Sample)
		}
		err := Produce(ctx, snap, run, ProduceOptions{BatchSize: opt.BatchSize}, func(b Built) error {
			rejected := len(b.Rejects)
			sized = sized[:0]
			for i := range b.Docs {
				var encErr error
				if buf, encErr = load.AppendDocument(buf[:0], b.Docs[i].Body); encErr != nil {
					rejected++ // migrate rejects it too; counted, not sized
					continue
				}
				sized = append(sized, report.Sized{Doc: &b.Docs[i], Size: len(buf)})
			}
			col.Add(b.Rows, sized, rejected)
			return col.CheckRefs(check)
		})
		if err != nil {
			return nil, err
		}
		c := col.Finish(100 / opt.Sample)
		rep.Collections = append(rep.Collections, c)
		if opt.Analysed != nil {
			opt.Analysed(c, time.Since(start))
		}
	}
	var tables []string
	for _, t := range plan.Tables() {
		tables = append(tables, t.QualifiedName())
	}
	act, err := extract.ReadActivity(ctx, refSnap, tables)
	if err != nil {
		return nil, err
	}
	rep.Warnings = report.Warnings(plan, rep.Collections, act, opt.MaxDocSize)
	// Document types of one collection whose _ids meet, or may.
	collisions, err := extract.CheckIDCollisions(ctx, refSnap, plan)
	if err != nil {
		return nil, err
	}
	for _, c := range collisions {
		severity := "warning"
		if c.Count > 0 {
			severity = "error"
		}
		rep.Warnings = append(rep.Warnings, report.Warning{Severity: severity, Rule: "id-collision", Collection: c.A.Name, Message: c.Message(), Suggestion: extract.IDCollisionSuggestion})
	}
	return rep, nil
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
		for _, i := range cp.IDCols {
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
