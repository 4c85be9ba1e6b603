package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/pipeline/syncer"
	"github.com/denorm/denorm/transform/report"
)

type syncOptions struct {
	rowSecurity bool
	mapping     string
	source      string
	target      string
	job         string
	method      string
	once        bool
	every       time.Duration
	follow      bool
	drop        bool // --drop-slot
	dropOld     bool // --drop, its deprecated name
	batchSize   int
	workers     int
	maxDocSize  int
	maxKeys     int
	maxDelay    time.Duration
	rejects     string
	maxRejects  int
	retryFor    time.Duration
	tempDir     string
	sortMemMiB  int
	metricsAddr string
	leaseTTL    time.Duration
	targetEnv   bool // the target came from DENORM_TARGET
}

const syncHelp = `sync keeps the documents of a target current while the source database
takes writes: every insert, update and delete in any mapped table reaches
every document built from it - embedded copies at any depth, lookups,
subsets, aggregates, id arrays, bucket pages (all of a parent's pages are
rebuilt, those past the new count deleted), partial copies in other
collections, document types of shared collections, rows starting or
stopping to match a filter, TRUNCATE.

A sync job is named with --job; its state is a checkpoint in the target
(denorm status shows it). The job's first sync makes the initial copy
itself, so 'sync --once' from cron on an empty target is all that is
needed; a job made by 'denorm migrate --job NAME' is continued by sync.

Methods (--method; a job keeps the method it started with):

  logical  PostgreSQL logical replication. denorm creates a publication and
           a replication slot named denorm_<job>; the initial copy reads the
           snapshot the slot exports, so a write made while it runs is
           neither lost nor applied twice. Each pass applies the committed
           changes since the job's position, in commit order, in batches;
           the position is saved in the checkpoint only after the target
           acknowledged the batch, and confirmed to the slot only after the
           checkpoint is saved. Needs wal_level = logical, the REPLICATION
           attribute, CREATE on the database and ownership of the mapped
           tables (or a publication of the job's name a DBA made for them)
           and a replica identity giving the old values of join columns
           (sync prints the ALTER TABLE statements a DBA must run when it
           does not). 'denorm migrate --sync logical' creates
           the slot with the migration, so sync continues from it.
  diff     No privilege beyond reading. Each pass rebuilds every document
           from one snapshot and writes only those that differ from the
           target, deleting those the source no longer gives; an unchanged
           target costs reads, not writes. Follows any filter.

Modes: --once (the default) runs one pass and exits 0 when the target is
current as of the pass's start; --every DURATION runs passes in a loop;
--follow (logical) applies changes continuously, with low latency.
SIGINT and SIGTERM stop between two batches: what was applied is saved, the
rest is applied by the next run (exit 0 when following, 1 with --once).

The initial copy is migrate's: --workers N reads each root table as N parts
(a hash of the _id columns) in parallel, each on its own connection sharing
one snapshot (for logical, the one the slot exported), and every worker
saves its position in the checkpoint after each batch the target
acknowledged. A copy that is killed resumes from those positions, each
worker reading again only what it had read past its last one: the rest is
read from a new snapshot, and the changes since the slot's snapshot are
applied after it, which makes the target exact (a change rebuilds the
documents it affects from the source's current state). A copy being
resumed keeps the number of workers it started with.

--drop-slot removes the job's replication slot and publication and its
checkpoint (the documents stay); the next sync makes a new initial copy,
writing only the differences. (--drop, its old name, still works but is
deprecated: migrate --drop drops collections, which this does not.)

A changed mapping file is applied in place: the collections whose documents
the change touches are rebuilt by a diff (only the documents that differ are
written), the others are not rewritten, and a logical job streams on from
its position. Collections no longer mapped are left as they are. A changed
shard key, a change while the initial copy is unfinished, and a checkpoint
of a denorm that did not record the mapping's collections are refused.

--metrics-addr (with --every or --follow) serves Prometheus metrics at
/metrics: changes applied, documents written and deleted, lag, errors and
the time of the last successful pass.

Exit codes: 0 current (or stopped by a signal while following), 1 runtime
error, 2 bad usage or mapping, 3 some rows could not be written.`

func newSyncCmd(g *globals) *cobra.Command {
	o := &syncOptions{}
	cmd := &cobra.Command{
		Use:     "sync --mapping FILE --source URL --target mongodb://HOST/DB --job NAME --method logical|diff [--once|--every DURATION|--follow]",
		Example: syncExamples,
		Short:   "Keep a target's documents current while the source takes writes",
		Long:    syncHelp,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.source = fromEnv(cmd, "source", "DENORM_SOURCE")
			o.target = fromEnv(cmd, "target", "DENORM_TARGET")
			o.targetEnv = !cmd.Flags().Changed("target") && os.Getenv("DENORM_TARGET") != ""
			if o.dropOld {
				g.logger().Warn("sync --drop is deprecated: use --drop-slot (it removes the job's replication slot, publication and checkpoint; migrate --drop drops collections)")
				o.drop = true
			}
			return runSync(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.mapping, "mapping", "m", "", "mapping file (YAML)")
	f.StringVar(&o.source, "source", "", sourceUsage)
	f.StringVar(&o.target, "target", "", "target: mongodb://host:port/db (env DENORM_TARGET); a directory cannot be synced")
	f.StringVar(&o.job, "job", "", "the sync job's name (its checkpoint in the target, its slot on the source)")
	f.StringVar(&o.method, "method", "", "logical or diff (default: the method the job started with)")
	f.BoolVar(&o.once, "once", false, "run one pass and exit (the default): for cron and CronJobs")
	f.DurationVar(&o.every, "every", 0, "run a pass every DURATION until stopped")
	f.BoolVar(&o.follow, "follow", false, "apply changes continuously until stopped (logical)")
	f.BoolVar(&o.drop, "drop-slot", false, "remove the job's replication slot, publication and checkpoint (the documents stay), then exit")
	// --drop was this flag's name; migrate --drop drops collections, so
	// it was renamed. The old name still works, with a warning.
	f.BoolVar(&o.dropOld, "drop", false, "deprecated: use --drop-slot")
	_ = f.MarkHidden("drop")
	f.IntVar(&o.batchSize, "batch-size", 1000, "documents read, built and written at a time")
	f.IntVar(&o.workers, "workers", 1, "read each table of the initial copy as this many parts in parallel, from one snapshot")
	f.IntVar(&o.maxDocSize, "max-doc-size", load.DefaultMaxDocSize, maxDocSizeUsage)
	f.IntVar(&o.maxKeys, "max-keys", 100_000, "documents of one collection a batch of changes rebuilds by key; past it, the collection is rebuilt by a diff")
	f.DurationVar(&o.maxDelay, "max-delay", 500*time.Millisecond, "longest a batch of changes waits for more before it is applied")
	f.StringVar(&o.rejects, "rejects", "", "append rejected documents to this JSON Lines file (collection, source, error)")
	f.IntVar(&o.maxRejects, "max-rejects", 0, maxRejectsUsage)
	addRetryForFlag(cmd, &o.retryFor)
	f.StringVar(&o.tempDir, "temp-dir", "", "directory for a diff's sort runs and spill files (default: the system's)")
	f.IntVar(&o.sortMemMiB, "sort-memory", 16, "memory of each of a diff's sorts, in MiB")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (host:port), with --every or --follow")
	f.DurationVar(&o.leaseTTL, "lease-ttl", load.DefaultLeaseTTL, leaseTTLUsage)
	addRowSecurityFlag(cmd, &o.rowSecurity)
	return cmd
}

func (o *syncOptions) check() error {
	switch {
	case o.maxRejects < 0:
		return usageError{fmt.Errorf("--max-rejects %d: cannot be negative (0: never stop for rejects)", o.maxRejects)}
	case o.job == "":
		return usageError{errors.New("sync needs --job NAME: the job's checkpoint and replication slot are named after it")}
	case strings.ContainsAny(o.job, `/\`) || strings.HasPrefix(o.job, "."):
		return usageError{fmt.Errorf("--job %q: a job name cannot contain / or \\ or start with a dot", o.job)}
	case o.method != "" && o.method != job.SyncLogical && o.method != job.SyncDiff:
		return usageError{fmt.Errorf("--method %q: want logical or diff", o.method)}
	case o.drop && (o.once || o.every > 0 || o.follow):
		return usageError{fmt.Errorf("%s removes the job's change capture and exits: give it without --once, --every or --follow", o.dropFlag())}
	case btoi(o.once)+btoi(o.every > 0)+btoi(o.follow) > 1:
		return usageError{errors.New("--once, --every and --follow exclude each other")}
	case o.every < 0:
		return usageError{errors.New("--every must be positive")}
	case o.follow && o.method == job.SyncDiff:
		return usageError{errors.New("--follow needs --method logical; run diff passes with --every DURATION")}
	case o.metricsAddr != "" && o.every == 0 && !o.follow:
		return usageError{errors.New("--metrics-addr serves metrics while sync runs: give --every or --follow")}
	case o.batchSize <= 0 || o.maxKeys <= 0 || o.maxDelay <= 0 || o.retryFor <= 0 || o.sortMemMiB <= 0:
		return usageError{errors.New("--batch-size, --max-keys, --max-delay, --retry-for and --sort-memory must be positive")}
	case o.leaseTTL < time.Second:
		return usageError{errors.New("--lease-ttl must be at least 1s")}
	case o.workers < 1 || o.workers > 64:
		return usageError{errors.New("--workers must be between 1 and 64")}
	}
	return nil
}

// dropFlag is the name --drop-slot was given by (--drop: its deprecated
// name), for messages about it.
func (o *syncOptions) dropFlag() string {
	if o.dropOld {
		return "--drop"
	}
	return "--drop-slot"
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func runSync(cmd *cobra.Command, g *globals, o *syncOptions) error {
	ctx := cmd.Context()
	if err := o.check(); err != nil {
		return err
	}
	if o.target == "" {
		return usageError{errors.New("no target: give --target mongodb://host:port/db or set DENORM_TARGET")}
	}
	if err := checkTarget(o.target); err != nil {
		return err
	}
	target, err := openTarget(ctx, g, o.target, load.Options{MaxDocSize: o.maxDocSize}, o.retryFor)
	if err != nil {
		return err
	}
	defer target.Close(ctx)
	if !target.Caps().Delete {
		return usageError{fmt.Errorf("target %s is a directory: sync replaces and deletes chosen documents, which a directory of JSON Lines files cannot do; sync to a server (mongodb://...), or rerun migrate into the directory", o.target)}
	}
	if o.drop {
		src, err := openSource(o.source, o.rowSecurity)
		if err != nil {
			return err
		}
		if err := job.DropSync(ctx, src, target, o.job); err != nil {
			return connstr.Parse(o.source).RedactError(err)
		}
		fmt.Fprintf(g.stdout, "sync job %s dropped: its replication slot and publication (if any) and its checkpoint are removed; the documents stay\n", o.job)
		return nil
	}
	if o.method == "" {
		cp, err := job.Load(ctx, target.Records(), o.job)
		if err != nil {
			return err
		}
		if cp == nil || cp.Sync == nil {
			return usageError{fmt.Errorf("job %q has no sync method yet: give --method logical or --method diff", o.job)}
		}
		o.method = cp.Sync.Method
	}
	snap, plan, closeSnap, err := openPlan(ctx, g, o.source, o.mapping, nil, o.rowSecurity)
	if err != nil {
		return err
	}
	src := snap.Source()
	closeSnap()

	rejects, err := openRejects(g, o.rejects, true)
	if err != nil {
		return err
	}
	defer rejects.close()
	var m *syncMetrics
	if o.metricsAddr != "" {
		m, err = serveMetrics(ctx, o.metricsAddr, o.job, o.method)
		if err != nil {
			return err
		}
		defer m.close()
	}
	halt, err := newHalter(g.stderr)
	if err != nil {
		return err
	}
	passes := 0
	opt := syncer.Options{
		Job: o.job, Mapping: o.mapping, Version: version, Method: o.method,
		Follow: o.follow, Every: o.every,
		BatchSize: o.batchSize, Workers: o.workers, MaxKeys: o.maxKeys, MaxDelay: o.maxDelay,
		TempDir: o.tempDir, SortMemory: o.sortMemMiB << 20, LeaseTTL: o.leaseTTL,
		Retry:  load.RetryPolicy{For: o.retryFor, Base: 200 * time.Millisecond, Cap: 5 * time.Second},
		Info:   func(msg string) { g.logger().Info(connstr.Parse(o.source).Redact(msg)) },
		Notice: func(msg string) { g.log.Warn(connstr.Parse(o.source).Redact(msg)) },
		Retried: func(err error) {
			if m != nil {
				m.errors.Inc()
			}
		},
		Debug: func(msg string, args ...any) {
			g.log.Debug(msg, args...)
			halt.reached(msg)
		},
		Slot: func(st *extract.SlotStatus) {
			if m != nil {
				m.slot(st)
			}
		},
		Waiting: func(since time.Time) {
			if m != nil {
				m.waiting(since)
			}
		},
		Idle: func(string) {
			if m != nil {
				m.idle()
			}
		},
		Reject: rejects.add,
		Pass: func(p syncer.PassStats) {
			passes++
			if m != nil {
				m.pass(p)
			}
			if o.follow || o.every > 0 {
				printPassLine(g.stdout, passes, p)
			} else {
				g.log.Debug("batch applied", "line", passLine(p))
			}
		},
	}
	// --max-rejects ends the run as an interrupt does: what was applied
	// is saved, the batch in flight is received again by the next run.
	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if o.maxRejects > 0 {
		rejects.limit, rejects.stop = int64(o.maxRejects), func() { stop(errMaxRejects) }
	}
	res, err := syncer.Sync(sctx, src, plan, target, opt)
	var ie *pipeline.InterruptedError
	if errors.Is(context.Cause(sctx), errMaxRejects) && (errors.As(err, &ie) || (err == nil && res.Interrupted)) {
		// (An initial copy stops as migrate does.)
		return syncMaxRejects(g, rejects, o, res)
	}
	if err != nil {
		if m != nil {
			m.errors.Inc()
		}
		return syncError(err, o)
	}
	if !o.follow && o.every == 0 {
		printSyncSummary(g.stdout, o, res)
	}
	if res.Interrupted {
		if !o.follow && o.every == 0 {
			return fmt.Errorf("interrupted: what was applied is saved (position %s); the next sync continues from there", position(res.Checkpoint))
		}
		if line := fanoutLine(res.Total); line != "" {
			fmt.Fprintln(g.stdout, line)
		}
		fmt.Fprintf(g.stdout, "stopped: position %s saved; the next sync continues from there\n", position(res.Checkpoint))
	}
	return rejects.result()
}

func position(cp *job.Record) string {
	switch {
	case cp != nil && cp.HasPosition():
		return cp.Sync.Position.String()
	case cp != nil && cp.Logical():
		return "(none yet: the replication slot was being created; the next sync creates it again)"
	case cp == nil || cp.Sync == nil:
		return "(none yet)"
	}
	return "(none: diff)"
}

// syncError words sync's refusals with what to run next.
func syncError(err error, o *syncOptions) error {
	var (
		changed *job.MappingChangedError
		method  *job.MethodChangedError
		untrace *extract.UntraceableError
		held    *load.LeaseHeldError
	)
	dst, note := connArg(o.target, o.targetEnv, "DENORM_TARGET", "--target URI")
	drop := fmt.Sprintf("denorm sync --mapping %s --source \"$DENORM_SOURCE\" --target %s --job %s --drop-slot", shellQuote(o.mapping), dst, shellQuote(o.job))
	if note != "" {
		drop += "\n  (" + note + ")"
	}
	switch {
	case errors.As(err, &changed) && len(changed.Why) > 0:
		return fmt.Errorf("sync job %q: the mapping file changed (sha256 %.12s then, %.12s now) in a way sync cannot apply in place: %s; restore the mapping, or start the job over (the next sync rewrites only the differences):\n  %s",
			changed.ID, changed.Then, changed.Now, strings.Join(changed.Why, "; "), drop)
	case errors.As(err, &changed):
		return fmt.Errorf("sync job %q: the mapping file changed since the job started (sha256 %.12s then, %.12s now), so documents of two mappings would mix; restore the mapping, or start the job over (the next sync rewrites only the differences):\n  %s",
			changed.ID, changed.Then, changed.Now, drop)
	case errors.As(err, &method):
		return usageError{fmt.Errorf("%v; to switch to %s, drop the job first (its replication slot would hold the source's WAL):\n  %s", method, method.Now, drop)}
	case errors.As(err, &untrace):
		return usageError{untrace}
	case errors.As(err, &held):
		return fmt.Errorf("%w.\nOne run per job: wait for it to finish, or stop it; `denorm status --target %s --job %s` shows it", held, dst, shellQuote(o.job))
	case startsOver(err):
		// The error names `sync --drop-slot`; here is the whole command line.
		return fmt.Errorf("%w\nto drop the job (its slot, publication and checkpoint; the documents stay):\n  %s", connstr.Parse(o.source).RedactError(err), drop)
	}
	return connstr.Parse(o.source).RedactError(err)
}

// startsOver reports whether err is a refusal whose way out is to drop
// the job: its change capture gone or unusable, its slot taken or left
// behind, a schema change it cannot follow.
func startsOver(err error) bool {
	return errors.As(err, new(*extract.SlotMissingError)) || errors.As(err, new(*extract.SlotInvalidError)) ||
		errors.As(err, new(*extract.SlotExistsError)) || errors.As(err, new(*job.SlotTakenError)) ||
		errors.As(err, new(*extract.SchemaChangeError))
}

// passLine is one line saying what a pass did.
func passLine(p syncer.PassStats) string {
	changes, written, deleted, unchanged := p.Totals()
	var b strings.Builder
	what := p.Method
	if p.Copy {
		what += ", initial copy"
	}
	fmt.Fprintf(&b, "(%s) %d rows changed", what, changes)
	if len(p.Tables) > 0 {
		names := slices.Sorted(maps.Keys(p.Tables))
		parts := make([]string, len(names))
		for i, t := range names {
			c := p.Tables[t]
			parts[i] = fmt.Sprintf("%s +%d ~%d -%d", t, c.Inserts, c.Updates, c.Deletes)
			if c.Truncates > 0 {
				parts[i] += " truncated"
			}
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, "; documents %d written, %d deleted, %d unchanged", written, deleted, unchanged)
	if len(p.Rebuilt) > 0 {
		fmt.Fprintf(&b, "; rebuilt whole: %s", strings.Join(p.Rebuilt, "; "))
	}
	if p.Position != "" {
		fmt.Fprintf(&b, "; position %s", p.Position)
	}
	if p.Method == job.SyncLogical {
		fmt.Fprintf(&b, "; lag %s", p.Lag.Round(time.Millisecond))
	}
	return b.String()
}

func printPassLine(w io.Writer, n int, p syncer.PassStats) {
	fmt.Fprintf(w, "%s pass %d %s\n", p.End.UTC().Format(time.RFC3339), n, passLine(p))
}

// printSyncSummary prints what a --once run did: changed rows per table,
// documents per collection, the position and the lag.
func printSyncSummary(w io.Writer, o *syncOptions, res *syncer.Result) {
	p := res.Total
	state := "current"
	if res.Interrupted {
		state = "interrupted"
	}
	fmt.Fprintf(w, "sync job %s (%s): %s", o.job, o.method, state)
	if cp := res.Checkpoint; cp != nil && cp.Sync != nil {
		if cp.Sync.Position != 0 {
			fmt.Fprintf(w, " at position %s", cp.Sync.Position)
		}
		if !cp.Sync.LastSnapshot.IsZero() && o.method == job.SyncDiff {
			fmt.Fprintf(w, " as of %s", cp.Sync.LastSnapshot.Format(time.RFC3339))
		}
	}
	if p.Copy {
		fmt.Fprint(w, " (this run made the initial copy)")
	}
	fmt.Fprintln(w)
	if len(p.Tables) > 0 {
		fmt.Fprintf(w, "%-28s %10s %10s %10s %10s\n", "TABLE", "INSERTS", "UPDATES", "DELETES", "TRUNCATES")
		for _, t := range slices.Sorted(maps.Keys(p.Tables)) {
			c := p.Tables[t]
			fmt.Fprintf(w, "%-28s %10d %10d %10d %10d\n", t, c.Inserts, c.Updates, c.Deletes, c.Truncates)
		}
	}
	fmt.Fprintf(w, "%-28s %10s %10s %10s\n", "COLLECTION", "WRITTEN", "DELETED", "UNCHANGED")
	for _, c := range slices.Sorted(maps.Keys(p.Collections)) {
		d := p.Collections[c]
		fmt.Fprintf(w, "%-28s %10d %10d %10d\n", c, d.Written, d.Deleted, d.Unchanged)
	}
	_, written, deleted, unchanged := p.Totals()
	fmt.Fprintf(w, "%-28s %10d %10d %10d\n", "TOTAL", written, deleted, unchanged)
	for _, c := range slices.Sorted(maps.Keys(p.Collections)) {
		if n := p.Collections[c].Tombstoned; n > 0 {
			fmt.Fprintf(w, "%s: %s whose root row is gone kept as tombstones (onDelete), not deleted\n", c, report.Plural(n, "document", "documents"))
		}
	}
	for _, r := range slices.Compact(slices.Sorted(slices.Values(p.Rebuilt))) {
		fmt.Fprintf(w, "rebuilt whole by a diff: %s\n", r)
	}
	if o.method == job.SyncLogical {
		if line := fanoutLine(p); line != "" {
			fmt.Fprintln(w, line)
		}
		fmt.Fprintf(w, "transactions applied: %d; lag at the end: %s\n", p.Transactions, p.Lag.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "target: %s\n", connstr.Parse(o.target).Redacted())
}

// fanoutLine names the 3 tables whose changed rows rebuilt the most
// documents per row in p, "" when no row changed.
func fanoutLine(p syncer.PassStats) string {
	worst := p.WorstFanout(3)
	if len(worst) == 0 {
		return ""
	}
	parts := make([]string, len(worst))
	for i, t := range worst {
		parts[i] = fmt.Sprintf("%s %.1f (%d for %d)", t.Table, t.PerChange(), t.Documents, t.Rows())
	}
	return "fan-out, documents rebuilt per changed row (worst tables): " + strings.Join(parts, ", ")
}

// syncMaxRejects words a sync --max-rejects stopped (exit 5).
func syncMaxRejects(g *globals, rejects *rejectLog, o *syncOptions, res *syncer.Result) error {
	if err := rejects.flush(); err != nil {
		return err
	}
	n := rejects.total()
	if n > rejectsShown {
		rejects.tell()
	}
	var cp *job.Record
	if res != nil {
		cp = res.Checkpoint
		if !o.follow && o.every == 0 {
			printSyncSummary(g.stdout, o, res)
		}
	}
	saved := fmt.Sprintf("position %s saved", position(cp))
	if o.method == job.SyncDiff {
		saved = "what was written is kept; the next diff pass compares again and writes what differs"
	}
	fmt.Fprintf(g.stdout, "stopped by --max-rejects %d: %s\n", o.maxRejects, saved)
	listed := "give --rejects FILE to list them"
	if o.rejects != "" {
		listed = "they are listed in " + o.rejects
	}
	if o.method != job.SyncDiff {
		saved = fmt.Sprintf("what was applied is saved (position %s); the changes not applied are received again by the next sync", position(cp))
	}
	return maxRejectsError{fmt.Sprintf("stopped: %s rejected, --max-rejects %d; %s\n%s. Fix what rejected the rows (the mapping: a filter, a sql: field), or allow more (--max-rejects), then sync again",
		report.Plural(n, "row was", "rows were"), o.maxRejects, listed, saved)}
}
