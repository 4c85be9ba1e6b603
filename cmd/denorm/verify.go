package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/oracle"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform/report"
)

type verifyOptions struct {
	mapping    string
	source     string
	target     string
	sample     float64
	report     string
	show       int
	batchSize  int
	tempDir    string
	sortMemMiB int
	since      string
	watermarks string
	failRefs   bool
	// failUncovered makes source rows that reach no document a
	// difference (exit 1).
	failUncovered bool
	// collections and limit pick what a migrate with the same flags wrote.
	collections []string
	limit       int
	retryFor    time.Duration
	oracle      string
	sampleRoots int
	oracleConns int
	rowSecurity bool
	// repair writes the documents found missing or different and deletes
	// the unexpected ones; job is the job whose lease it holds meanwhile.
	repair bool
	job    string
	// percent is --sample's other name; recheck* tune the rechecks of a
	// target a running job writes (--job).
	percent       float64
	recheckRounds int
	recheckMax    int
	recheckWait   time.Duration
}

// differentError is verify's verdict "the target differs" (exit 1).
type differentError struct{ docs, refs, indexes, uncovered int64 }

func (e differentError) Error() string {
	if e.uncovered > 0 {
		uncovered := report.Plural(e.uncovered, "source row reaches", "source rows reach") + " no document (listed under coverage)"
		if e.docs == 0 && e.indexes == 0 {
			return "--fail-on-uncovered: " + uncovered
		}
		e.uncovered = 0
		return e.Error() + "; and " + uncovered
	}
	if e.indexes > 0 {
		msg := fmt.Sprintf("the target lacks %d of the mapping's indexes (or holds them with other options)", e.indexes)
		if e.docs > 0 {
			msg += ", and " + report.Plural(e.docs, "document differs", "documents differ")
		}
		return msg
	}
	switch {
	case e.docs > 0 && e.refs > 0:
		return fmt.Sprintf("the target differs from the source: %s, and %s", report.Plural(e.docs, "document", "documents"), report.Plural(e.refs, "dangling reference", "dangling references"))
	case e.docs > 0:
		return "the target differs from the source: " + report.Plural(e.docs, "document", "documents")
	}
	return report.Plural(e.refs, "dangling reference", "dangling references")
}

func (differentError) ExitCode() int { return exitRuntime }

// incompleteError is a verify run that could not reach a verdict (exit 4).
type incompleteError struct{ err error }

func (e incompleteError) Error() string {
	return fmt.Sprintf("verify could not complete: %v", e.err)
}
func (e incompleteError) Unwrap() error { return e.err }
func (incompleteError) ExitCode() int   { return exitIncomplete }

func newVerifyCmd(g *globals) *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:     "verify --mapping FILE --source URL --target TARGET",
		Example: verifyExamples,
		Short:   "Prove that the target holds exactly the documents the source gives",
		Long: `verify rebuilds the documents from one consistent snapshot of the source, with
the same code as migrate, and compares them with what the target holds:
documents missing from the target, documents the source does not give, and
documents whose contents differ (with every differing field: path, expected,
found). References declared with ref: that point to no document are listed
separately. Memory is bounded: both sides are sorted on disk (--temp-dir).

Documents are equal when their BSON is: field order and types count (int32 1,
int64 1 and double 1.0 differ). A directory target cannot keep int32 apart from
int64 (relaxed Extended JSON), so the expected side is read the same way.

Indexes: every index of the mapping (declared, and the defaults of its
patterns) must exist in the target with its keys, name, unique flag and
partial filter (a directory: in <collection>.indexes.json); one missing or
different is a difference too. Extra indexes are not.

--collections and --limit compare what migrate wrote with the same flags.

--oracle sql builds the expected documents another way, sharing no code with
migrate: PostgreSQL builds them as JSON from SQL compiled from the mapping
(plan --sql prints it), and a second implementation of the Types table
converts them. A bug in migrate's builder shows up as a difference there,
where the plain comparison would repeat it. The fields it cannot compute
independently (expr: fields run on the shared expression engine) are
listed. --sample-roots N has it build and compare the documents of N random
root rows per collection.

A target a sync job writes while verify runs (--job NAME, the job
running): a document the job is behind or ahead on differs without being
wrong, so every difference is compared again, in rounds, once the job has
applied a source position newer than the round's snapshot, and only those
still different where the source gave the same document at both ends of a
round are reported (see --recheck-rounds). With --repair, the job is asked
to pause between two of its batches while the repair writes, then goes on.

Exit codes: 0 identical, 1 different, 2 bad usage or mapping, 4 verify could
not complete (connection lost, unreadable target, ...).

On a live source, differences may come from writes after the last migration or
sync: give --since with that time and verify counts, in the same snapshot, the
rows of every table read whose watermark column (--watermark-columns) is newer.

Coverage: verify also counts, per table the mapping reads (the whole
mapping, whatever --collections and --limit say), the source rows that reach
at least one document and those that reach none, with why (a NULL or
dangling join key, a parent that reaches no document, a filter, a limit, an
inheritance child) and a few keys. They do not change the exit code unless
--fail-on-uncovered is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source = fromEnv(cmd, "source", "DENORM_SOURCE")
			o.target = fromEnv(cmd, "target", "DENORM_TARGET")
			if _, err := defaultTargetRead(cmd, g); err != nil {
				return err
			}
			err := explainRowSecurity(runVerify(cmd, g, o))
			var ue usageError
			var de differentError
			var ec interface{ ExitCode() int }
			if err == nil || errors.As(err, &ue) || errors.As(err, &de) || mappings.IsProblems(err) ||
				errors.As(err, &ec) && ec.ExitCode() == exitUsage {
				return err
			}
			return incompleteError{err}
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.mapping, "mapping", "m", "", "mapping file (YAML)")
	f.StringVar(&o.source, "source", "", sourceUsage)
	f.StringVar(&o.target, "target", defaultTarget, targetUsage)
	f.Float64Var(&o.sample, "sample", 100, "compare only this percentage of documents, chosen by a hash of _id (both sides are still read)")
	f.Float64Var(&o.percent, "percent", 0, "the same as --sample: compare only this percentage of documents")
	f.StringVar(&o.report, "report", "", "write the full report (every difference) to this JSON file")
	f.IntVar(&o.show, "show", 20, "print the first N differences and dangling references")
	f.IntVar(&o.batchSize, "batch-size", 1000, "root rows read at a time")
	f.StringVar(&o.tempDir, "temp-dir", "", "directory for the sort files (needs about the size of both sides; default: the system's)")
	f.IntVar(&o.sortMemMiB, "sort-memory", 16, "MiB of memory for each of the four sorts (expected, found, pairs, references); the memory limit grows with it")
	f.StringVar(&o.since, "since", "", "time of the last migration or sync (RFC 3339): count source rows changed after it")
	f.StringVar(&o.watermarks, "watermark-columns", strings.Join(extract.DefaultWatermarkColumns, ","), "timestamp columns that hold a row's last modification time, for --since")
	f.BoolVar(&o.failRefs, "fail-on-dangling", false, "exit 1 also when the only problems are dangling references")
	f.BoolVar(&o.failUncovered, "fail-on-uncovered", false, "exit 1 also when source rows reach no document (coverage)")
	f.StringSliceVar(&o.collections, "collections", nil, "verify only these collections of the mapping (comma-separated)")
	f.IntVar(&o.limit, "limit", 0, "expect only the first N documents of each collection, as migrate --limit N writes")
	addRetryForFlag(cmd, &o.retryFor)
	f.IntVar(&o.sampleRoots, "sample-roots", 0, "with --oracle sql: compare the documents of N root rows of each collection chosen at random (a bucket collection: of N parents); the oracle builds only those")
	f.IntVar(&o.oracleConns, "oracle-workers", 2, "with --oracle sql: build a collection's documents on this many source connections at once, each a range of its root keys")
	f.StringVar(&o.oracle, "oracle", "", "build the expected documents with an independent oracle instead of migrate's code: sql (PostgreSQL builds them from SQL compiled from the mapping)")
	f.BoolVar(&o.repair, "repair", false, "write the documents found missing or different as the source gives them, and delete those it does not give (a server target; with --job, under that job's lease, so that no run of it writes meanwhile, or, the job running a logical sync, while it pauses)")
	f.StringVar(&o.job, "job", "", "the job (migrate --job or sync) that writes the target: a running logical sync job's differences are rechecked once it caught up, and --repair pauses it; a job not running is held (its lease) while repairing")
	f.IntVar(&o.recheckRounds, "recheck-rounds", 4, "with --job, the job running: compare each difference again at most this many times after the job caught up (two agreeing rounds confirm one)")
	f.IntVar(&o.recheckMax, "recheck-max", 10000, "with --job, the job running: recheck at most this many differences (the others are reported unchecked)")
	f.DurationVar(&o.recheckWait, "recheck-wait", 2*time.Minute, "with --job, the job running: how long to wait for the job to apply the source's position before a round (and to pause, with --repair)")
	addRowSecurityFlag(cmd, &o.rowSecurity)
	return cmd
}

// check checks verify's flags, and returns --since's time (zero without
// it).
func (o *verifyOptions) check() (since time.Time, err error) {
	if o.batchSize <= 0 {
		return since, usageError{fmt.Errorf("--batch-size must be positive")}
	}
	if o.percent != 0 {
		if o.sample != 100 && o.sample != o.percent {
			return since, usageError{errors.New("--percent is --sample's other name: give one of them")}
		}
		o.sample = o.percent
	}
	if !(o.sample > 0 && o.sample <= 100) { // NaN too
		return since, usageError{fmt.Errorf("--sample must be a percentage in (0, 100]")}
	}
	if err := checkRange("--sort-memory", o.sortMemMiB, 1, 1<<16); err != nil {
		return since, err
	}
	if o.show < 0 {
		return since, usageError{fmt.Errorf("--show cannot be negative")}
	}
	if err := checkDir("--temp-dir", o.tempDir); err != nil {
		return since, err
	}
	if err := checkTarget(o.target); err != nil {
		return since, err
	}
	if o.since != "" {
		t, err := time.Parse(time.RFC3339, o.since)
		if err != nil {
			return since, usageError{fmt.Errorf("--since: want an RFC 3339 time such as 2026-11-23T10:30:00Z: %w", err)}
		}
		since = t
		for _, c := range strings.Split(o.watermarks, ",") {
			if strings.TrimSpace(c) == "" {
				return since, usageError{fmt.Errorf("--watermark-columns %q: an empty column name", o.watermarks)}
			}
		}
	}
	if err := checkLimit(o.limit); err != nil {
		return since, err
	}
	if err := checkCollections(o.collections); err != nil {
		return since, err
	}
	if o.retryFor <= 0 {
		return since, usageError{errors.New("--retry-for must be positive")}
	}
	if o.oracle != "" && o.oracle != "sql" {
		return since, usageError{fmt.Errorf("--oracle %q: the only oracle is sql", o.oracle)}
	}
	if o.repair && o.oracle != "" {
		return since, usageError{errors.New("--repair writes the documents migrate builds: it does not go with --oracle")}
	}
	if err := checkRange("--recheck-rounds", o.recheckRounds, 2, 100); err != nil {
		return since, err
	}
	if err := checkRange("--recheck-max", o.recheckMax, 1, 1<<24); err != nil {
		return since, err
	}
	if o.recheckWait <= 0 {
		return since, usageError{errors.New("--recheck-wait must be positive")}
	}
	if err := checkRange("--oracle-workers", o.oracleConns, 1, 64); err != nil {
		return since, err
	}
	if o.sampleRoots != 0 {
		if err := checkRange("--sample-roots", o.sampleRoots, 1, 1<<30); err != nil {
			return since, err
		}
		if o.oracle == "" {
			return since, usageError{errors.New("--sample-roots needs --oracle sql (the oracle picks the root rows); without it, --sample PERCENT compares a share of the documents")}
		}
		if o.sample != 100 {
			return since, usageError{errors.New("--sample-roots and --sample: give one of them")}
		}
	}
	return since, nil
}

func runVerify(cmd *cobra.Command, g *globals, o *verifyOptions) error {
	ctx := cmd.Context()
	since, err := o.check()
	if err != nil {
		return err
	}
	snap, full, plan, closeSnap, err := openPlans(ctx, g, o.source, o.mapping, o.collections, o.rowSecurity, true)
	if err != nil {
		return err
	}
	defer closeSnap()
	if o.limit > 0 {
		plan = pipeline.Limit(plan, o.limit)
	}
	snapTime, err := snap.Time(ctx)
	if err != nil {
		return err
	}
	target, err := openTarget(ctx, g, o.target, load.Options{MustExist: true}, o.retryFor)
	if err != nil {
		return err
	}
	defer target.Close(ctx)

	rep, err := newVerifyReport(o.report)
	if err != nil {
		return err
	}
	defer rep.abort()
	filtered := filteredTables(plan.Tables())
	rep.header(snap.ID, snapTime, connstr.Parse(o.target).Redacted(), o.sample, filtered)

	shown := 0
	show := func(line string) {
		if shown < o.show {
			if shown == 0 {
				fmt.Fprintln(g.stdout, "differences:")
			}
			fmt.Fprintln(g.stdout, line)
		} else if shown == o.show {
			if o.report != "" {
				fmt.Fprintf(g.stdout, "  ... more in %s\n", o.report)
			} else {
				fmt.Fprintln(g.stdout, "  ... more (use --report FILE for all of them, or --show N)")
			}
		}
		shown++
	}
	var recheck *pipeline.Recheck
	if o.job != "" {
		rc, release, err := jobForVerify(ctx, g, target, o)
		if err != nil {
			return err
		}
		defer release()
		recheck = rc
		if rc != nil {
			fmt.Fprintf(g.stdout, "job %s is running: differences are compared again once it has applied the source's newer changes\n", o.job)
		}
	}
	tuneVerifyGC(o.sortMemMiB)
	start := time.Now()
	res, err := pipeline.Verify(ctx, snap, plan, target, pipeline.VerifyOptions{
		Repair:        o.repair,
		Retry:         load.RetryPolicy{For: o.retryFor, Base: 200 * time.Millisecond, Cap: 5 * time.Second},
		BatchSize:     o.batchSize,
		TempDir:       o.tempDir,
		SortMemory:    o.sortMemMiB << 20,
		Sample:        o.sample,
		Oracle:        o.oracle == "sql",
		SampleRoots:   o.sampleRoots,
		OracleWorkers: o.oracleConns,
		Difference: func(d pipeline.Difference) error {
			show(formatDifference(d))
			return rep.difference(d)
		},
		Dangling: func(r pipeline.DanglingRef) error {
			show(fmt.Sprintf("  %s _id=%s: dangling reference %s=%s: no such document in %s", r.Collection, r.ID, r.Path, r.Ref, r.RefCollection))
			return rep.dangling(r)
		},
		Indexes:    true,
		Since:      since,
		Watermarks: strings.Split(o.watermarks, ","),
		Coverage:   full,
		Debug:      g.log.Debug,
		Recheck:    recheck,
	})
	if err != nil {
		return err
	}
	printVerifySummary(g, res, since, snapTime, time.Since(start))
	if rs := res.Recheck; rs != nil {
		printRecheck(g, o.job, rs)
		rep.recheck = rs
	}
	if len(filtered) > 0 {
		wrap(g.stdout, fmt.Sprintf("row-level security filtered what was read (--row-security): %s; the comparison covers only the rows the policies show", rowSecurityTables(filtered)))
	}
	if o.oracle != "" {
		printOracleNote(g, res.Unchecked, res)
		rep.unchecked = res.Unchecked
	}
	if err := rep.finish(res, since); err != nil {
		return err
	}
	docs, refs, badIndexes := res.Differences(), res.Dangling(), res.BadIndexes()
	if o.repair {
		var rewritten, removed, tombstoned int64
		for _, c := range res.Collections {
			rewritten, removed, tombstoned = rewritten+c.Rewritten, removed+c.Removed, tombstoned+c.Tombstoned
		}
		fmt.Fprintf(g.stdout, "repaired: %s written as the source gives them, %s deleted",
			report.Plural(rewritten, "document", "documents"), report.Plural(removed, "document", "documents"))
		if tombstoned > 0 {
			fmt.Fprintf(g.stdout, ", %s tombstoned (onDelete)", report.Plural(tombstoned, "document", "documents"))
		}
		fmt.Fprintln(g.stdout)
		// What is left is what a repair cannot write: duplicates, rows
		// that build no document. (A tombstone collection's unexpected
		// document that already held a field of the tombstone's name
		// that is not a date is left, and so still counted.)
		docs -= rewritten + removed + tombstoned
	}
	uncovered, _ := mappings.UncoveredRows(res.Coverage)
	if docs > 0 || badIndexes > 0 || (refs > 0 && o.failRefs) || (uncovered > 0 && o.failUncovered) {
		e := differentError{docs: docs, refs: refs, indexes: badIndexes}
		if o.failUncovered {
			e.uncovered = uncovered
		}
		return e
	}
	return nil
}

func formatDifference(d pipeline.Difference) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s", d.Collection)
	if d.ID != nil {
		fmt.Fprintf(&b, " _id=%s", d.ID)
	}
	fmt.Fprintf(&b, ": %s", d.Kind)
	if d.Source != "" {
		fmt.Fprintf(&b, " (source %s)", d.Source)
	}
	if d.Error != "" {
		fmt.Fprintf(&b, ": %s", d.Error)
	}
	for i, f := range d.Fields {
		if i == 5 {
			fmt.Fprintf(&b, "\n      ... %d more fields", len(d.Fields)-5+d.MoreFields)
			break
		}
		path := f.Path
		if path == "" {
			path = "(document)"
		}
		fmt.Fprintf(&b, "\n      %s:", path)
		if f.Note != "" {
			fmt.Fprintf(&b, " %s", f.Note)
		}
		if f.Expected != nil || f.Found != nil {
			exp, found := "(absent)", "(absent)"
			if f.Expected != nil {
				exp = fmt.Sprintf("%s (%s)", f.Expected, f.ExpectedType)
			}
			if f.Found != nil {
				found = fmt.Sprintf("%s (%s)", f.Found, f.FoundType)
			}
			fmt.Fprintf(&b, " expected %s, found %s", exp, found)
		}
	}
	return b.String()
}

func printVerifySummary(g *globals, res *pipeline.VerifyResult, since, snapTime time.Time, elapsed time.Duration) {
	writes, indexes, cov := res.Writes, res.Indexes, res.Coverage
	w := g.stdout
	fmt.Fprintf(w, "%-20s %10s %10s %10s %8s %10s %9s %9s %8s\n", "COLLECTION", "EXPECTED", "FOUND", "IDENTICAL", "MISSING", "UNEXPECTED", "DIFFERENT", "DANGLING", "OTHER")
	for _, c := range res.Collections {
		note := ""
		if !c.Exists {
			note = "  (not in the target)"
		}
		fmt.Fprintf(w, "%-20s %10d %10d %10d %8d %10d %9d %9d %8d%s\n", c.Collection, c.Expected, c.Found, c.Identical, c.Missing, c.Unexpected, c.Different, c.Dangling, c.Duplicate+c.Unbuildable, note)
	}
	for _, c := range res.Collections {
		if c.Retained > 0 {
			fmt.Fprintf(w, "%s: %s whose root row is gone, kept by the collection's onDelete (tombstones, or ignore): retained, not differences\n", c.Collection, report.Plural(c.Retained, "document", "documents"))
		}
		if c.OtherTypes > 0 {
			fmt.Fprintf(w, "%s: %d documents of other types (another mapping's, by the discriminator) were not compared\n", c.Collection, c.OtherTypes)
		}
	}
	fmt.Fprintf(w, "source snapshot taken %s; %s\n", snapTime.UTC().Format(time.RFC3339), elapsed.Round(time.Millisecond))
	docs, refs := res.Differences(), res.Dangling()
	changed := int64(0)
	for _, tw := range writes {
		changed += tw.Rows
		if tw.Rows > 0 {
			fmt.Fprintf(w, "source writes after %s: %d rows of %s (%s up to %s), read for %s\n", since.UTC().Format(time.RFC3339), tw.Rows, tw.Table, tw.Column, tw.Latest.Format(time.RFC3339), strings.Join(tw.Collections, ", "))
		}
	}
	bad := printIndexChecks(g, indexes)
	uncovered, tables := mappings.UncoveredRows(cov)
	printCoverage(g, cov)
	// Rows in no document are no difference between source and target,
	// but the result says so: "identical" alone would hide them.
	coverage := ""
	if uncovered > 0 {
		coverage = fmt.Sprintf("; %s of %s reach no document (coverage above)", report.Plural(uncovered, "source row", "source rows"), report.Plural(int64(tables), "table", "tables"))
	}
	switch {
	case docs == 0 && refs == 0 && bad == 0:
		fmt.Fprintln(w, "result: identical"+coverage)
	case docs == 0 && bad > 0:
		fmt.Fprintf(w, "result: identical documents; %s missing or different", report.Plural(bad, "index", "indexes"))
		if refs > 0 {
			fmt.Fprintf(w, "; %s", report.Plural(refs, "dangling reference", "dangling references"))
		}
		fmt.Fprintln(w, coverage)
	case docs == 0:
		fmt.Fprintf(w, "result: identical documents; %s%s\n", report.Plural(refs, "dangling reference", "dangling references"), coverage)
	default:
		fmt.Fprintf(w, "result: %s", report.Plural(docs, "document differs", "documents differ"))
		if bad > 0 {
			fmt.Fprintf(w, "; %s missing or different", report.Plural(bad, "index", "indexes"))
		}
		if refs > 0 {
			fmt.Fprintf(w, "; %s", report.Plural(refs, "dangling reference", "dangling references"))
		}
		fmt.Fprintln(w, coverage)
		switch {
		case !since.IsZero() && changed > 0:
			fmt.Fprintln(w, "some differences may be due to writes after the last sync (above); run sync, then verify again")
		case !since.IsZero():
			fmt.Fprintf(w, "no watermarked row changed after %s: these differences are not explained by later updates (deletes leave no watermark)\n", since.UTC().Format(time.RFC3339))
		case res.Recheck != nil: // the differences outlasted a running job's catching up
		default:
			fmt.Fprintln(w, "if the source took writes after the last migration, pass --since <its start time> to count them")
		}
	}
}

// verifyReport streams the JSON report: every difference is written as it
// is found, so the report's size never lives in memory.
type verifyReport struct {
	// unchecked, with --oracle sql, are the fields the oracle does not
	// compute independently.
	unchecked []oracle.Unchecked
	// recheck, with a running job, is what the rechecks did.
	recheck *pipeline.RecheckStats
	f       *os.File
	w       *bufio.Writer
	n       int
	phase   string
	err     error
	path    string
}

func newVerifyReport(path string) (*verifyReport, error) {
	r := &verifyReport{path: path}
	if path == "" {
		return r, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("report file: %w", err)
	}
	r.f, r.w = f, bufio.NewWriterSize(f, 1<<16)
	return r, nil
}

func (r *verifyReport) raw(s string) {
	if r.w != nil && r.err == nil {
		_, r.err = r.w.WriteString(s)
	}
}

func (r *verifyReport) value(v any) error {
	if r.w == nil || r.err != nil {
		return r.err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, r.err = r.w.Write(b)
	return r.err
}

func (r *verifyReport) header(snapID string, snapTime time.Time, target string, sample float64, rowSecurity []*mappings.Table) {
	if r.w == nil {
		return
	}
	if len(rowSecurity) > 0 {
		r.raw(`{"rowSecurity":`)
		r.value(rowSecurityReports(rowSecurity))
		r.raw(`,"snapshot":`)
	} else {
		r.raw(`{"snapshot":`)
	}
	r.value(snapID)
	r.raw(`,"snapshotTime":`)
	r.value(snapTime.UTC())
	r.raw(`,"target":`)
	r.value(target)
	r.raw(`,"samplePercent":`)
	r.value(sample)
	r.raw(`,"differences":[`)
	r.phase = "differences"
}

func (r *verifyReport) item(v any) error {
	if r.w == nil {
		return nil
	}
	if r.n > 0 {
		r.raw(",")
	}
	r.n++
	r.raw("\n")
	return r.value(v)
}

func (r *verifyReport) difference(d pipeline.Difference) error { return r.item(d) }

func (r *verifyReport) dangling(d pipeline.DanglingRef) error {
	if r.w == nil {
		return nil
	}
	if r.phase != "dangling" {
		r.raw("],\"danglingRefs\":[")
		r.phase, r.n = "dangling", 0
	}
	return r.item(d)
}

func (r *verifyReport) finish(res *pipeline.VerifyResult, since time.Time) error {
	if r.w == nil {
		return nil
	}
	writes, indexes, cov := res.Writes, res.Indexes, res.Coverage
	if r.phase != "dangling" {
		r.raw("],\"danglingRefs\":[")
	}
	r.raw("],\"collections\":")
	r.value(res.Collections)
	if !since.IsZero() {
		r.raw(`,"since":`)
		r.value(since.UTC())
		r.raw(`,"writesSince":`)
		if writes == nil {
			writes = []extract.TableWrites{}
		}
		r.value(writes)
	}
	if indexes == nil {
		indexes = []pipeline.IndexCheck{}
	}
	r.raw(`,"indexes":`)
	r.value(indexes)
	if cov == nil {
		cov = []mappings.TableCoverage{}
	}
	r.raw(`,"coverage":`)
	r.value(cov)
	if r.unchecked != nil {
		r.raw(`,"oracle":{"uncheckedFields":`)
		r.value(r.unchecked)
		r.raw(`}`)
	}
	if r.recheck != nil {
		r.raw(`,"recheck":`)
		r.value(r.recheck)
	}
	bad := false
	for _, c := range indexes {
		bad = bad || c.State != pipeline.IndexOK
	}
	r.raw(`,"identical":`)
	r.value(res.Differences() == 0 && !bad)
	r.raw("}\n")
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if err := r.f.Close(); r.err == nil {
		r.err = err
	}
	r.f, r.w = nil, nil
	if r.err != nil {
		return fmt.Errorf("report file %s: %w", r.path, r.err)
	}
	return nil
}

// abort closes an unfinished report (after an error), leaving the partial
// file, which is not valid JSON, so that no one mistakes it for a verdict.
func (r *verifyReport) abort() {
	if r.f != nil {
		r.w.Flush()
		r.f.Close()
		r.f, r.w = nil, nil
	}
}

// printIndexChecks says how the target's indexes compare with the
// mapping's: one line for those as declared, one per missing or
// different index. It returns the number of those.
func printIndexChecks(g *globals, checks []pipeline.IndexCheck) int64 {
	ok := 0
	for _, c := range checks {
		if c.State == pipeline.IndexOK {
			ok++
		}
	}
	if len(checks) == 0 {
		return 0
	}
	fmt.Fprintf(g.stdout, "indexes: %d of %d as declared\n", ok, len(checks))
	for _, c := range checks {
		switch c.State {
		case pipeline.IndexMissing:
			fmt.Fprintf(g.stdout, "  %s: index %s (%s) is missing\n", c.Collection, c.Index, c.Keys)
		case pipeline.IndexDifferent:
			fmt.Fprintf(g.stdout, "  %s: index %s (%s) differs: %s\n", c.Collection, c.Index, c.Keys, c.Detail)
		}
	}
	return int64(len(checks) - ok)
}

// printCoverage prints, per table the mapping reads, how many of its rows
// reach a document, and the reasons and sample keys of those that reach
// none.
func printCoverage(g *globals, cov []mappings.TableCoverage) {
	if len(cov) == 0 {
		return
	}
	uncovered, _ := mappings.UncoveredRows(cov)
	if uncovered == 0 {
		var rows int64
		for _, c := range cov {
			rows += c.Rows
		}
		fmt.Fprintf(g.stdout, "coverage: every source row reaches a document (%s of %s)\n", report.Plural(rows, "row", "rows"), report.Plural(int64(len(cov)), "table", "tables"))
		return
	}
	fmt.Fprintln(g.stdout, "coverage (source rows that reach a document):")
	fmt.Fprint(g.stdout, report.CoverageText(cov, "  "))
}

// printOracleNote says what the oracle checked independently: every field
// but those listed (expressions run on the shared engine).
func printOracleNote(g *globals, unchecked []oracle.Unchecked, res *pipeline.VerifyResult) {
	var parts []string
	for _, c := range res.Collections {
		if c.OracleParts > 1 {
			parts = append(parts, fmt.Sprintf("%s in %d", c.Collection, c.OracleParts))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(g.stdout, "oracle: built in parts on as many connections: %s\n", strings.Join(parts, ", "))
	}
	if len(unchecked) == 0 {
		fmt.Fprintln(g.stdout, "oracle: every field was computed independently of migrate's code (SQL built from the mapping, a second Types table)")
		return
	}
	fmt.Fprintln(g.stdout, "oracle: every field was computed independently of migrate's code, except:")
	for _, u := range unchecked {
		fmt.Fprintf(g.stdout, "  %s: %s\n", u.Path, u.Why)
	}
}

// jobForVerify readies verify for the job o.job writing the target. A
// logical sync job that runs has its differences rechecked once it
// caught up (the Recheck returned), and, for --repair, is paused while
// the repair writes. Any other job, when repairing, has its lease held
// for the whole run (one running is refused). release undoes what was
// taken.
func jobForVerify(ctx context.Context, g *globals, target load.Target, o *verifyOptions) (rc *pipeline.Recheck, release func(), err error) {
	store := target.Records()
	rec, err := job.Load(ctx, store, o.job)
	if err != nil {
		return nil, nil, err
	}
	running, _, err := job.Running(ctx, store, o.job)
	if err != nil {
		return nil, nil, err
	}
	if running && rec != nil && rec.Logical() {
		rc := &pipeline.Recheck{
			Rounds: o.recheckRounds, Max: o.recheckMax, Debug: g.log.Debug,
			Wait: func(ctx context.Context, lsn extract.LSN) error {
				return waitForJob(ctx, store, o.job, lsn, o.recheckWait)
			},
			Pause: func(ctx context.Context) (func(), error) {
				req, err := job.RequestPause(ctx, store, o.job, o.recheckWait, "verify --repair")
				if err != nil {
					return nil, err
				}
				g.log.Debug("job paused for the repair", "job", o.job)
				return func() { _ = req.Release(context.WithoutCancel(ctx)) }, nil
			},
		}
		return rc, func() {}, nil
	}
	if !o.repair {
		switch {
		case rec == nil && !running:
			return nil, nil, usageError{fmt.Errorf("--job %s: the target has no such job (status lists its jobs)", o.job)}
		case !running:
			fmt.Fprintf(g.stdout, "job %s is not running: the target is compared as it is (a difference may be a change the job has not applied yet)\n", o.job)
		case rec == nil || !rec.Logical():
			fmt.Fprintf(g.stdout, "job %s is running but is not a logical sync job: differences are not rechecked, and a document it is writing may show as one\n", o.job)
		}
		return nil, func() {}, nil
	}
	// One writer per job: while the lease is held, no run of the job
	// writes (and a running one refuses this repair).
	lease, err := job.HoldLease(ctx, store, o.job, job.LeaseOptions{Command: "verify --repair"})
	if err != nil {
		return nil, nil, err
	}
	return nil, func() { _ = lease.Release(context.WithoutCancel(ctx)) }, nil
}

// waitForJob returns once job id's saved position is at or past lsn,
// or fails past wait.
func waitForJob(ctx context.Context, store load.RecordStore, id string, lsn extract.LSN, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		rec, err := job.Load(ctx, store, id)
		if err != nil {
			return err
		}
		if rec == nil || !rec.Logical() {
			return fmt.Errorf("job %q is gone from the target while verify rechecked its differences", id)
		}
		if rec.Sync.Position >= lsn {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("job %q has not applied the source's changes up to %s within %s (its position is %s): is it running? (--recheck-wait)", id, lsn, wait, rec.Sync.Position)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// printRecheck says what the rechecks of a running job's target did.
func printRecheck(g *globals, id string, rs *pipeline.RecheckStats) {
	if rs.Rechecked == 0 && rs.NotRechecked == 0 {
		fmt.Fprintf(g.stdout, "rechecked: nothing to recheck (job %s)\n", id)
		return
	}
	msg := fmt.Sprintf("rechecked: %s in %s after job %s caught up: %d cleared (writes in flight), %d confirmed",
		report.Plural(rs.Rechecked, "difference", "differences"), report.Plural(int64(rs.Rounds), "round", "rounds"), id, rs.Cleared, rs.Confirmed)
	if rs.Unsettled > 0 {
		msg += fmt.Sprintf(", %d unsettled (the source kept changing them: counted as differences)", rs.Unsettled)
	}
	if rs.NotRechecked > 0 {
		msg += fmt.Sprintf("; %d more not rechecked (--recheck-max)", rs.NotRechecked)
	}
	wrap(g.stdout, msg)
}
