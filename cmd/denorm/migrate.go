package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform/report"
)

type migrateOptions struct {
	mapping     string
	source      string
	target      string
	batchSize   int
	maxDocSize  int
	rejects     string
	progress    string
	sourceFlag  bool
	syncMethod  string
	targetEnv   bool // the target came from DENORM_TARGET
	drop        bool
	collections []string
	limit       int
	indexes     string
	summaryFile string
	// failUncovered refuses to write while source rows reach no document.
	failUncovered bool
	jobs          jobOptions
	rowSecurity   bool
	metricsAddr   string
	// maxRejects stops the run once that many rows were rejected (0:
	// never).
	maxRejects int
}

const defaultTarget = "denorm-out"

func newMigrateCmd(g *globals) *cobra.Command {
	o := &migrateOptions{}
	cmd := &cobra.Command{
		Use:     "migrate --mapping FILE --source URL [--target TARGET]",
		Example: migrateExamples,
		Short:   "Copy the source database into documents, as the mapping file says",
		Long: `migrate reads every table the mapping names from one consistent snapshot of the
source database, builds the documents and writes them to the target.

TARGET is a MongoDB-wire server URI naming the database (mongodb://host:port/db
or mongodb+srv://host/db) or a directory path: each collection is written there
to <collection>.jsonl as relaxed Extended JSON, one document a line, which
mongoimport reads. Default: ./` + defaultTarget + `. Other URIs (postgres://,
file://, http://, ...) and host:port are refused.

Timeouts: the source URL's connect_timeout (default 10 s) and read_timeout
(default 600 s of silence while an answer is due); the target URI's
connectTimeoutMS and serverSelectionTimeoutMS (default 10 s) and timeoutMS
(default 10 min per operation). Passwords are never printed.

Without --source and DENORM_SOURCE, the source is read as psql reads it,
from PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD, PGSERVICE and ~/.pgpass.

Writes replace documents by _id, so running migrate again gives the same
result. Memory is bounded by --batch-size, never by table size.

Indexes: the mapping's indexes (and the defaults of its patterns: a bucket
collection's parent key and page, the fields a shared collection's types
have in common) are created after loading (--indexes after), before it
(before: slower loads, but the target is usable at once), or not at all
(none). A directory target gets <collection>.indexes.json, the
createIndexes command to run once the file is imported. Shard keys are set
before the first write (shardCollection; Cosmos DB: customAction
CreateCollection); a server without sharding is told about, not refused.

--drop drops the mapping's collections (with their indexes; a directory's
files) before loading, and says what it drops; in a shared collection
(several document types) it deletes only the mapping's types. A run
replaces only documents of its own types, on a directory too. On FerretDB
a fresh run deletes the job's documents first, and only those: it keeps
documents not known to be the job's, and says so. --collections a,b runs only
those collections of the mapping. --limit N writes only the first N
documents of each collection (the pages of the first N parents of a bucket
collection): a trial run into a scratch target. --summary-file FILE writes
the end-of-run summary as JSON, also when the run fails.

--metrics-addr host:port serves Prometheus metrics at /metrics while the
run lasts, as sync's: rows read per table, documents written and rejects
per collection, bytes read from the source and written to the target,
the age of the snapshot read (lag behind the source), the ETA and the
fraction done, and the process's CPU and memory (names denorm_migrate_*,
deploy/grafana has a dashboard).

Rejected rows (a value a document cannot hold, a document the target
refuses) do not stop the run: it ends with exit 3, the first 20 shown on
stderr and every one listed in --rejects FILE. --max-rejects N stops it
once N rows were rejected, as mongoimport's --stopOnError (N = 1) and
pgloader's --on-error-stop do: the batches in flight are written, the
checkpoint is saved, the rejects file lists every rejected row, the summary
says why the run stopped, and denorm exits 5; with --job, --resume
continues where it stopped.

--fail-on-uncovered counts, before anything is written, the source rows of
every table the mapping reads that would reach no document (a NULL or
dangling join key, a parent that reaches no document, a filter, a limit, an
inheritance child), and when there are any, writes nothing and exits 1
with the counts per table and why ('denorm plan' lists them with keys).
` + jobHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source = fromEnv(cmd, "source", "DENORM_SOURCE")
			o.sourceFlag = cmd.Flags().Changed("source")
			o.target = fromEnv(cmd, "target", "DENORM_TARGET")
			o.targetEnv = !cmd.Flags().Changed("target") && os.Getenv("DENORM_TARGET") != ""
			return runMigrate(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.mapping, "mapping", "m", "", "mapping file (YAML)")
	f.StringVar(&o.source, "source", "", sourceUsage)
	f.StringVar(&o.target, "target", defaultTarget, "target: mongodb://host:port/db or a directory (env DENORM_TARGET)")
	f.IntVar(&o.batchSize, "batch-size", 1000, "root rows read, built and written at a time")
	f.IntVar(&o.maxDocSize, "max-doc-size", load.DefaultMaxDocSize, maxDocSizeUsage)
	f.StringVar(&o.rejects, "rejects", "", "write rejected rows to this JSON Lines file (collection, source, error)")
	f.IntVar(&o.maxRejects, "max-rejects", 0, maxRejectsUsage)
	f.StringVar(&o.progress, "progress", "auto", "progress display: auto (bars on a terminal, status lines otherwise), bar, lines, none")
	f.BoolVar(&o.drop, "drop", false, "drop the mapping's collections (or the directory's files) before loading")
	f.StringSliceVar(&o.collections, "collections", nil, "run only these collections of the mapping (comma-separated)")
	f.IntVar(&o.limit, "limit", 0, "write only the first N documents of each collection (bucket collections: N parents), for a trial run")
	f.StringVar(&o.indexes, "indexes", pipeline.IndexesAfter, "create the mapping's indexes after loading, before it, or none")
	f.StringVar(&o.summaryFile, "summary-file", "", "write the end-of-run summary to this file as JSON")
	f.BoolVar(&o.failUncovered, "fail-on-uncovered", false, "write nothing and exit 1 when source rows would reach no document (coverage)")
	f.StringVar(&o.syncMethod, "sync", "", "logical: create the job's replication slot and migrate the snapshot it exports, so that 'denorm sync --method logical' continues the job with no gap (needs --job)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (host:port) while the run lasts")
	addJobFlags(cmd, &o.jobs)
	addRowSecurityFlag(cmd, &o.rowSecurity)
	return cmd
}

func (o *migrateOptions) check() error {
	if o.batchSize <= 0 {
		return usageError{fmt.Errorf("--batch-size must be positive")}
	}
	if o.maxRejects < 0 {
		return usageError{fmt.Errorf("--max-rejects %d: cannot be negative (0: never stop for rejects)", o.maxRejects)}
	}
	if err := checkRange("--max-doc-size", o.maxDocSize, 1, maxDocSizeLimit); err != nil {
		return err
	}
	switch o.progress {
	case "auto", "bar", "lines", "none":
	default:
		return usageError{fmt.Errorf("--progress must be auto, bar, lines or none")}
	}
	switch o.indexes {
	case pipeline.IndexesAfter, pipeline.IndexesBefore, pipeline.IndexesNone:
	default:
		return usageError{fmt.Errorf("--indexes must be after, before or none")}
	}
	if err := checkLimit(o.limit); err != nil {
		return err
	}
	if o.limit > 0 && o.jobs.job != "" {
		return usageError{fmt.Errorf("--limit makes a trial run, which is not resumable: leave out --job")}
	}
	if o.drop && (o.jobs.resume || o.jobs.resumeOrStart) {
		return usageError{fmt.Errorf("--drop would drop what the job being resumed wrote: use --restart to start the job over")}
	}
	if err := checkCollections(o.collections); err != nil {
		return err
	}
	if err := checkOutFile("--summary-file", o.summaryFile); err != nil {
		return err
	}
	return o.jobs.check()
}

func runMigrate(cmd *cobra.Command, g *globals, o *migrateOptions) (err error) {
	ctx := cmd.Context()
	sum := newRunSummary(o)
	defer func() {
		if o.summaryFile != "" {
			if werr := sum.write(o.summaryFile, err); werr != nil && err == nil {
				err = werr
			}
		}
	}()
	if err := o.check(); err != nil {
		return err
	}
	switch {
	case o.syncMethod != "" && o.syncMethod != job.SyncLogical:
		return usageError{fmt.Errorf("--sync %q: the only method a migration prepares is logical (diff needs nothing: 'denorm sync --method diff' continues any job)", o.syncMethod)}
	case o.syncMethod != "" && o.jobs.job == "":
		return usageError{errors.New("--sync logical needs --job NAME: the replication slot and the sync job are named after it")}
	case o.syncMethod != "" && o.jobs.parts > 1:
		return usageError{errors.New("--sync logical migrates the one snapshot its replication slot exports, in one process: it excludes --partition (--workers share the snapshot)")}
	}
	if err := checkTarget(o.target); err != nil {
		return err
	}
	var metrics *migrateMetrics
	if o.metricsAddr != "" {
		// Before connecting: a busy address is told first.
		if metrics, err = serveMigrateMetrics(ctx, o.metricsAddr, o.jobs.job); err != nil {
			return err
		}
		defer metrics.close()
	}
	snap, full, plan, closeSnap, err := openPlans(ctx, g, o.source, o.mapping, o.collections, o.rowSecurity, true)
	if err != nil {
		return err
	}
	defer closeSnap()
	if o.failUncovered {
		// Before the target is opened: nothing is written when rows
		// would be left out.
		if err := requireCoverage(ctx, snap, full); err != nil {
			return err
		}
	}
	sum.RowSecurity = filteredTables(plan.Tables())
	if o.limit > 0 {
		plan = pipeline.Limit(plan, o.limit)
	}
	g.log.Debug("plan resolved", "plan", plan.String(), "snapshot", snap.ID)
	topt := load.Options{MaxDocSize: o.maxDocSize, Notice: func(msg string) { g.log.Warn(msg) }}
	if metrics != nil {
		metrics.opened(snap, plan)
		topt.Written = &metrics.wrote
	}

	target, err := openTarget(ctx, g, o.target, topt, o.jobs.retryFor)
	if err != nil {
		return err
	}
	defer target.Close(ctx)
	if err := o.jobs.checkTarget(target); err != nil {
		return err
	}

	m := pipeline.Migration{Snapshot: snap, Plan: plan, Target: target, Drop: o.drop, Indexes: o.indexes, Logical: o.syncMethod != "",
		Info:    func(msg string) { g.logger().Info(msg) },
		Notice:  func(msg string) { g.log.Warn(msg) },
		Store:   func(ctx context.Context, s load.RecordStore) load.RecordStore { return gateCheckpoints(ctx, g, s) },
		Dropped: func(d pipeline.Dropped) { tellDropped(g, d, o.target) },
		SlotCreated: func(cp *job.Record) {
			g.log.Info("replication slot created; migrating the snapshot it exported", "job", o.jobs.job, "slot", cp.Sync.Slot, "position", cp.Sync.Position)
		},
	}
	if o.jobs.job != "" {
		m.Job = jobSpec(g, o)
		m.Prepared = func(jb *job.Job) error {
			tellPrepared(g, jb)
			rec := jb.Record()
			sum.Job, sum.Resumed = o.jobs.job, rec.Resumes > 0
			return sameEntries(rec, plan, o)
		}
	}
	var (
		rejects *rejectLog
		prog    *progress
	)
	m.Run = jobRunOptions(g, o)
	m.Starting = func(opt *pipeline.JobOptions) (err error) {
		if rejects, err = openRejects(g, o.rejects, o.jobs.resume || o.jobs.resumeOrStart); err != nil {
			return err
		}
		prog = newProgress(g, o.progress)
		prog.expect(plan, o.limit)
		opt.Progress, opt.Waiting, opt.Reject = prog.update, prog.waiting, rejects.add
		if metrics != nil {
			opt.Progress = metrics.hook(opt.Progress)
		}
		return nil
	}
	// --max-rejects ends the run's context as an interrupt does: the
	// batches in flight are written and the checkpoint saved.
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if o.maxRejects > 0 {
		starting := m.Starting
		m.Starting = func(opt *pipeline.JobOptions) error {
			if err := starting(opt); err != nil {
				return err
			}
			rejects.limit = int64(o.maxRejects)
			rejects.stop = func() { stop(errMaxRejects) }
			return nil
		}
	}
	res, err := pipeline.Migrate(rctx, m)
	if metrics != nil {
		metrics.final(res.Stats)
	}
	if rejects != nil {
		defer rejects.close()
	}
	sum.Dropped, sum.ShardKeys, sum.Indexes = res.Dropped, res.ShardKeys, res.Indexes
	if res.Finished != nil {
		fmt.Fprintf(g.stdout, "job %s finished at %s: nothing to resume\n", res.Finished.ID, res.Finished.Finished.Format(time.RFC3339))
		return nil
	}
	if !res.Loaded {
		return migrateRefusal(err, o, res.Job != nil)
	}
	prog.finish()
	if res.ReleaseErr != nil && res.LeaseErr == nil {
		g.log.Warn("the job's lease was not released: it expires by itself", "error", res.ReleaseErr)
	}
	if cerr := target.Close(ctx); err == nil && cerr != nil {
		err = cerr
	}
	sum.Stats, sum.Elapsed = res.Stats, time.Since(res.Started)
	var ie *pipeline.InterruptedError
	sum.Failed = err != nil && !errors.As(err, &ie)
	stopped := errors.As(err, &ie) && errors.Is(ie.Cause, errMaxRejects)
	if stopped {
		sum.StoppedBy = fmt.Sprintf("--max-rejects %d: stopped once %s rejected", o.maxRejects, report.Plural(int64(o.maxRejects), "row was", "rows were"))
	}
	printSummary(g, sum)
	if res.LeaseErr != nil {
		return leaseLostError(res.LeaseErr, o)
	}
	if stopped {
		return maxRejectsStop(ie, rejects, o, res.Job != nil)
	}
	if err != nil {
		return runFailure(err, o, res.Job != nil)
	}
	return rejects.result()
}

// runFailure words a migration that stopped while loading: interrupted,
// its index phase refused, or its target stopped it; with the command
// that continues the job (job: the run has one).
func runFailure(err error, o *migrateOptions, hasJob bool) error {
	var ie *pipeline.InterruptedError
	if errors.As(err, &ie) {
		if !hasJob {
			return fmt.Errorf("interrupted; run with --job NAME to be able to resume a migration")
		}
		if ie.SaveErr != nil {
			return fmt.Errorf("interrupted: the checkpoint could not be saved (%v); the one saved before (%s) stands, and resuming continues from it:\n  %s",
				ie.SaveErr, ie.Checkpoint.Updated.Format(time.RFC3339), commandLine(o, "--resume"))
		}
		if ie.Checkpoint.Phase == job.PhaseIndexes {
			built, total := ie.Checkpoint.IndexesBuilt()
			return fmt.Errorf("interrupted while building indexes (%d of %d built): the checkpoint is saved; the job is complete once its indexes are; continue with:\n  %s", built, total, commandLine(o, "--resume"))
		}
		return fmt.Errorf("interrupted: the checkpoint is saved (collection %q); continue with:\n  %s", ie.Checkpoint.Collection, commandLine(o, "--resume"))
	}
	var ipe *pipeline.IndexPhaseError
	if errors.As(err, &ipe) {
		if !hasJob {
			return fmt.Errorf("%w\nthe documents are written; fix what is named above and migrate again, or create the indexes by hand", err)
		}
		return fmt.Errorf("%w\nthe job is not complete until its indexes are built: fix what is named above (the documents that break a unique index, an index that exists with other options), then continue with:\n  %s\nor finish the job without them (create them by hand later):\n  %s",
			err, commandLine(o, "--resume"), commandLine(o, "--resume", "--indexes", "none"))
	}
	return targetFailure(err, o, hasJob)
}

// targetFailure words a run the target stopped (a write, a flush to disk
// or a checkpoint it refused, a file system that is full): the error is
// the target's, and the command that continues the job once the target
// takes writes again follows it. Other errors pass unchanged.
func targetFailure(err error, o *migrateOptions, job bool) error {
	var (
		te *pipeline.TargetError
		fe *load.FileError
	)
	if !errors.As(err, &te) && !errors.As(err, &fe) {
		return err
	}
	if !job {
		return fmt.Errorf("%w\nthe target stopped the run; once it takes writes again, run the migration again (with --job NAME a run can be resumed instead)", err)
	}
	if te != nil && te.Checkpoint != nil && te.Checkpoint.Updated.IsZero() {
		return fmt.Errorf("%w\nthe target stopped the run before its first checkpoint was saved; once it takes writes again, start the job again with:\n  %s", err, commandLine(o))
	}
	saved := ""
	if te != nil && te.Checkpoint != nil {
		saved = fmt.Sprintf(" (%s)", te.Checkpoint.Updated.Format(time.RFC3339))
	}
	return fmt.Errorf("%w\nthe target stopped the run; the last checkpoint saved%s stands. Once the target takes writes again, continue with:\n  %s", err, saved, commandLine(o, "--resume"))
}

// sameEntries refuses to resume a job with other collections than it
// started with (another --collections): its stream positions are per
// collection entry.
func sameEntries(cp *job.Record, plan *mappings.Plan, o *migrateOptions) error {
	for _, s := range cp.Streams {
		if s.Entry >= len(plan.Collections) || plan.Collections[s.Entry].Name != s.Collection {
			return usageError{fmt.Errorf("job %q was started with other collections (--collections) than this run has; resume it with the same ones, or start it over with --restart", o.jobs.job)}
		}
	}
	return nil
}

// migrateRefusal words what stopped a migration before it loaded: the
// job's refusals (jobError), a --sync logical it cannot make. Other
// errors pass unchanged.
func migrateRefusal(err error, o *migrateOptions, prepared bool) error {
	var (
		notLogical *pipeline.NotLogicalError
		slot       *pipeline.SlotError
	)
	switch {
	case err == nil:
		return nil
	case !prepared && o.jobs.job != "":
		return jobError(err, o)
	case errors.Is(err, pipeline.ErrLogicalNeedsDelete):
		return usageError{fmt.Errorf("--sync logical: target %s is a directory, which sync cannot keep current (it replaces and deletes chosen documents); migrate to a server (mongodb://...)", o.target)}
	case errors.As(err, &notLogical):
		return usageError{fmt.Errorf("job %q was started without --sync logical: a slot made now would miss the changes since it began; start it over with --restart --sync logical, or let it finish and continue it with 'denorm sync --method logical' (which then diffs the target once)", o.jobs.job)}
	case errors.As(err, &slot):
		return syncError(slot.Err, &syncOptions{mapping: o.mapping, target: o.target, job: o.jobs.job, source: o.source})
	}
	return err
}

// tellDropped says what --drop dropped from the target at uri.
func tellDropped(g *globals, d pipeline.Dropped, uri string) {
	where := connstr.Parse(uri).Redacted()
	switch {
	case d.Type != nil:
		g.logger().Warn(fmt.Sprintf("--drop: deleted %s of type %s=%v from shared collection %s in %s; documents of other types and the collection's indexes stay",
			report.Plural(d.Deleted, "document", "documents"), d.Type.Key, d.Type.Value, d.Collection, where))
	case d.Existed:
		g.logger().Warn(fmt.Sprintf("--drop: dropped collection %s (its documents and indexes) from %s", d.Collection, where))
	default:
		g.logger().Info(fmt.Sprintf("--drop: no collection %s to drop", d.Collection))
	}
}

// uncoveredError is migrate --fail-on-uncovered's refusal: source rows
// would reach no document (exit 1, nothing written).
type uncoveredError struct{ cov []mappings.TableCoverage }

func (e uncoveredError) Error() string {
	rows, tables := mappings.UncoveredRows(e.cov)
	var left []mappings.TableCoverage
	for _, c := range e.cov {
		if c.Unreached > 0 {
			left = append(left, c)
		}
	}
	return fmt.Sprintf("--fail-on-uncovered: %s of %s would reach no document, so nothing was written ('denorm plan' lists them; change the mapping, or leave out the flag to migrate without them):\n%s",
		report.Plural(rows, "source row", "source rows"), report.Plural(int64(tables), "table", "tables"), strings.TrimRight(report.CoverageText(left, "  "), "\n"))
}

func (uncoveredError) ExitCode() int { return exitRuntime }

// requireCoverage counts, in snap, the rows of every table plan reads that
// reach no document, and refuses (uncoveredError) when there are any.
func requireCoverage(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan) error {
	cov, err := extract.Coverage(ctx, snap, plan)
	if err != nil {
		return err
	}
	if rows, _ := mappings.UncoveredRows(cov); rows > 0 {
		return uncoveredError{cov: cov}
	}
	return nil
}

// errMaxRejects is the cause of a run stopped by --max-rejects.
var errMaxRejects = errors.New("--max-rejects reached")

// maxRejectsError is a migration --max-rejects stopped (exit 5).
type maxRejectsError struct{ msg string }

func (e maxRejectsError) Error() string { return e.msg }
func (maxRejectsError) ExitCode() int   { return exitStopped }

// maxRejectsStop words a run --max-rejects stopped: how many rows were
// rejected, where they are listed, and the command that continues the
// job.
func maxRejectsStop(ie *pipeline.InterruptedError, rejects *rejectLog, o *migrateOptions, hasJob bool) error {
	if err := rejects.flush(); err != nil {
		return err
	}
	n := rejects.total()
	if n > rejectsShown {
		rejects.tell() // how many more than stderr showed
	}
	msg := fmt.Sprintf("stopped: %s rejected, --max-rejects %d", report.Plural(n, "row was", "rows were"), o.maxRejects)
	listed := "; give --rejects FILE to list them"
	if o.rejects != "" {
		listed = "; they are listed in " + o.rejects
	}
	msg += listed
	resume := []string{"--resume"}
	if o.rejects != "" {
		resume = append(resume, "--rejects", o.rejects)
	}
	resume = append(resume, "--max-rejects", strconv.Itoa(o.maxRejects))
	switch {
	case !hasJob:
		msg += "\nthe documents of the rows read before the stop are written; fix what rejected the rows (the source, or the mapping: a filter, a sql: field), then run the migration again (with --job NAME a stopped run is resumed instead)"
	case ie.SaveErr != nil:
		msg += fmt.Sprintf("\nthe checkpoint could not be saved (%v); the one saved before (%s) stands. Fix what rejected the rows, then continue with:\n  %s",
			ie.SaveErr, ie.Checkpoint.Updated.Format(time.RFC3339), commandLine(o, resume...))
	default:
		msg += fmt.Sprintf("\nthe checkpoint is saved (collection %q). Fix what rejected the rows (the source, or the mapping: a filter, a sql: field), or allow more, then continue with:\n  %s",
			ie.Checkpoint.Collection, commandLine(o, resume...))
	}
	return maxRejectsError{msg}
}
