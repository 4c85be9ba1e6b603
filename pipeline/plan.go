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
	// MaxFanout flags the tables one change of whose rows can rewrite
	// more documents than this (high-fanout); 0 flags none.
	MaxFanout int64
	// Sample, in (0, 100), reads about that percentage of the root rows
	// (a bucket collection keeps whole parents) and scales the counts;
	// 100 reads all.
	Sample float64
	// Analysed, when set, is told of each collection entry once its
	// figures are final.
	Analysed func(c *report.Collection, elapsed time.Duration)
	// Progress, when set, is called after each batch is analysed and
	// once an entry is done: Written counts the documents built.
	Progress func(Stats)
}

// Plan builds the documents of every collection entry of plan from snap
// with Produce (the code migrate runs), writes nothing, and returns the
// report of what they are: counts, sizes, arrays, samples, documents over
// MaxDocSize, dangling references and modeling warnings. References,
// table activity and _id collisions are read on a second connection
// sharing snap's snapshot (see planSide), as the first is busy streaming.
func Plan(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan, opt PlanOptions) (*report.Report, error) {
	side := startSide(ctx, snap, plan)
	defer side.close(ctx)

	rep := &report.Report{SchemaVersion: report.SchemaVersion, Mapping: opt.Mapping, MaxDocSize: opt.MaxDocSize,
		SamplePercent: opt.Sample, Estimated: opt.Sample < 100, Generated: time.Now().UTC(), Model: report.ModelOf(plan)}
	check := func(coll string, values []string) (map[string]bool, error) {
		target := plan.RefTarget(coll)
		if target == nil {
			return nil, report.SkipError{Reason: fmt.Sprintf("collection %q is not a document collection of this mapping", coll)}
		}
		if len(target.IDCols) != 1 {
			return nil, report.SkipError{Reason: fmt.Sprintf("collection %q has a composite _id", coll)}
		}
		refSnap, err := side.wait()
		if err != nil {
			return nil, err
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
		st := Stats{Collection: cp.Name, Table: cp.Root.Table.Name, Estimate: cp.Root.Table.Estimate, Bucket: cp.Bucket != nil}
		if st.Estimate > 0 && opt.Sample < 100 {
			st.Estimate = int64(float64(st.Estimate) * opt.Sample / 100)
		}
		err := Produce(ctx, snap, run, ProduceOptions{BatchSize: opt.BatchSize, Reuse: true}, func(b Built) error {
			if opt.Progress != nil {
				defer func() {
					st.Rows += int64(b.Rows)
					st.Written += int64(len(b.Docs))
					st.Elapsed = time.Since(start)
					opt.Progress(st)
				}()
			}
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
			if err := side.failed(); err != nil {
				return err
			}
			return col.CheckRefs(check)
		})
		if err != nil {
			return nil, err
		}
		if opt.Progress != nil {
			st.Done, st.Elapsed = true, time.Since(start)
			opt.Progress(st)
		}
		c := col.Finish(100 / opt.Sample)
		rep.Collections = append(rep.Collections, c)
		if opt.Analysed != nil {
			opt.Analysed(c, time.Since(start))
		}
	}
	if _, err := side.wait(); err != nil {
		return nil, err
	}
	rep.Warnings = report.Warnings(plan, rep.Collections, side.activity, opt.MaxDocSize)
	for _, n := range plan.Notices {
		rep.Warnings = append(rep.Warnings, report.Warning{Severity: "warning", Rule: n.Rule, Collection: n.Collection, Message: n.Msg, Suggestion: n.Suggestion})
	}
	for _, c := range side.collisions {
		severity := "warning"
		if c.Count > 0 {
			severity = "error"
		}
		rep.Warnings = append(rep.Warnings, report.Warning{Severity: severity, Rule: "id-collision", Collection: c.A.Name, Message: c.Message(), Suggestion: extract.IDCollisionSuggestion})
	}
	rep.Coverage = side.coverage
	rep.Warnings = append(rep.Warnings, report.CoverageWarnings(side.coverage)...)
	rep.Fanout, rep.MaxFanout = side.fanout, opt.MaxFanout
	rep.Warnings = append(rep.Warnings, report.FanoutWarnings(side.fanout, opt.MaxFanout)...)
	rep.Totals = report.TotalsOf(rep.Collections)
	rep.Totals.Uncovered, _ = mappings.UncoveredRows(side.coverage)
	rep.Indexes, rep.ShardKeys = report.Indexes(plan)
	return rep, nil
}

// streamKeyColumns are the root columns a collection's documents are
// counted by: a bucket collection's parent key (whole parents), else the
// _id columns.
func streamKeyColumns(cp *mappings.CollectionPlan) []string {
	idx := cp.IDCols
	if cp.Bucket != nil {
		idx = cp.Bucket.By
	}
	cols := make([]string, len(idx))
	for i, c := range idx {
		cols[i] = cp.Root.Columns[c].Name
	}
	return cols
}

// sampled returns a copy of cp whose root reads about percent % of the
// rows: a bucket collection keeps whole parents.
func sampled(cp *mappings.CollectionPlan, percent float64) *mappings.CollectionPlan {
	root := *cp.Root
	cond := extract.SampleFilter(streamKeyColumns(cp), percent)
	if root.Filter != "" {
		cond = "(" + root.Filter + ") AND " + cond
	}
	root.Filter = cond
	out := *cp
	out.Root = &root
	return &out
}

// planSide is Plan's second connection, sharing snap's snapshot: it reads the
// tables' activity, the _id collisions, the coverage and the fan-out while the first
// streams, and then serves the reference checks.
type planSide struct {
	done       chan struct{}
	snap       *extract.Snapshot
	err        error
	activity   map[string]mappings.TableActivity
	collisions []extract.IDCollision
	coverage   []mappings.TableCoverage
	fanout     []mappings.TableFanout
}

// startSide connects and runs the side's queries in the background.
func startSide(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan) *planSide {
	s := &planSide{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.snap, s.err = snap.Source().Adopt(ctx, snap.ID)
		if s.err != nil {
			return
		}
		var tables []string
		for _, t := range plan.Tables() {
			tables = append(tables, t.QualifiedName())
		}
		if s.activity, s.err = extract.ReadActivity(ctx, s.snap, tables); s.err != nil {
			return
		}
		// Document types of one collection whose _ids meet, or may.
		if s.collisions, s.err = extract.CheckIDCollisions(ctx, s.snap, plan); s.err != nil {
			return
		}
		// The rows that reach no document, on every row (whatever the
		// sample), in the same snapshot.
		if s.coverage, s.err = extract.Coverage(ctx, s.snap, plan); s.err != nil {
			return
		}
		// How many documents one change of each table's rows makes sync
		// rewrite, on every row too.
		s.fanout, s.err = extract.PredictFanout(ctx, s.snap, plan)
	}()
	return s
}

// wait returns the side's snapshot once its queries are done, or their
// error.
func (s *planSide) wait() (*extract.Snapshot, error) {
	<-s.done
	return s.snap, s.err
}

// failed is the side's error if it has ended with one, without waiting.
func (s *planSide) failed() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// close waits for the side's queries and closes its connection.
func (s *planSide) close(ctx context.Context) {
	if snap, _ := s.wait(); snap != nil {
		snap.Close(ctx)
	}
}
