package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/pipeline"
)

// jobOptions are migrate's flags for resumable, parallel and partitioned runs.
type jobOptions struct {
	job             string
	resume, restart bool
	resumeOrStart   bool
	workers         int
	partition       string
	checkpointEvery time.Duration
	retryFor        time.Duration
	leaseTTL        time.Duration
	// parsed --partition
	part, parts int
}

const jobHelp = `
Resumable runs: with --job NAME, a checkpoint is saved in the target (the
_denorm collection of a server target, <dir>/_denorm/NAME.json for a
directory) after every batch the target acknowledged: job, mapping hash,
version, phase, the last key of every stream, counters and time. If the run
stops (kill, crash, lost machine, Ctrl-C), 'denorm migrate ... --job NAME
--resume' continues after the last checkpoint, inside a table; documents
written after it are written again (upserts by _id; a directory target's
files are truncated back to the checkpoint), so nothing is lost or
duplicated. Without --resume, an unfinished job is reported with the
commands to resume or restart it; --resume-or-start resumes a job that has
a checkpoint and starts one that has none (a Kubernetes pod or a scheduler
that cannot tell a first start from a restart). --restart deletes the job's checkpoint
and starts over; on a server target without --partition it also deletes
the job's documents (so documents of rows deleted since do not linger),
and refuses, deleting nothing, where a collection holds documents not
known to be the job's (see docs/migrate.md, "Whose documents denorm deletes"):
--restart --drop then drops them too. On a directory target the files
are rewritten. 'denorm status --target T' lists the jobs of a target.

A job is complete only once the mapping's indexes are built, its last
phase: an interrupt or an index the target refuses leaves it there
('status': "loading done, indexes 2/3 built"), and --resume builds what
is missing (--resume --indexes none finishes it without them). A target
that stops taking writes (a full disk) stops the run with its own error
and the command that resumes.

SIGINT and SIGTERM are acknowledged at once: the write in flight gets 5 s
to be acknowledged (then it is cancelled), the checkpoint of what was
acknowledged is saved, the command that resumes is printed, and denorm
exits with code 1. A second signal quits at once; the last checkpoint saved
stands.

A target that never answered fails the run at once (one attempt of 5 s:
a wrong address or a target that is down is told within seconds). Once it
has answered, transient faults are retried with capped backoff for
--retry-for: reconnecting (5 s attempts, each failure told), target network errors
and timeouts, server restarts, throttling (Cosmos DB error 16500, honouring
its RetryAfterMs). A read or write waiting longer than 3 s shows in the
progress ("waiting for target: 12s, attempt 3"). A lost source connection is
reopened (for --retry-for, at least eight attempts) and reading resumes
from the last acknowledged position; if the snapshot it read is gone, a new
one is taken and the output says so.

Parallel runs: --workers N reads each root table as N parts (a hash of the
_id columns, or of a bucket collection's parent columns) in parallel, all
from one exported snapshot. --partition i/N (i from 0) runs only part i of
N of every table, with its own checkpoint (job NAME.<i>of<N>), so N
processes or machines share a migration; together they write exactly what
one process writes. Both need a server target.`

// leaseTTLUsage is --lease-ttl's help in migrate and sync.
const leaseTTLUsage = "on a server target, how long the job's lease outlives its last heartbeat: how soon a crashed run's job can be taken up"

// maxDocSizeUsage is --max-doc-size's help in migrate and sync.
const maxDocSizeUsage = "reject documents larger than this many bytes (16 MiB for MongoDB, 2 MiB for Cosmos DB)"

func addJobFlags(cmd *cobra.Command, o *jobOptions) {
	f := cmd.Flags()
	f.StringVar(&o.job, "job", "", "name this run, saving checkpoints in the target so it can be resumed")
	f.BoolVar(&o.resume, "resume", false, "continue job --job from its last checkpoint")
	f.BoolVar(&o.resumeOrStart, "resume-or-start", false, "resume job --job when it has a checkpoint, start it otherwise (for restarted pods and schedulers)")
	f.BoolVar(&o.restart, "restart", false, "start job --job over: delete its checkpoint (and, on a server target without --partition, its collections' documents)")
	f.IntVar(&o.workers, "workers", 1, "read each table as this many parts in parallel, from one snapshot (server targets)")
	f.StringVar(&o.partition, "partition", "", "run only partition i/N (i from 0) of every table, e.g. 0/3 (server targets)")
	f.DurationVar(&o.checkpointEvery, "checkpoint-every", 0, "save checkpoints at most this often (0: after every batch)")
	addRetryForFlag(cmd, &o.retryFor)
	f.DurationVar(&o.leaseTTL, "lease-ttl", load.DefaultLeaseTTL, leaseTTLUsage)
}

func (o *jobOptions) check() error {
	if o.resume && o.restart {
		return usageError{errors.New("--resume and --restart exclude each other: resume continues the job, restart starts it over")}
	}
	if o.resumeOrStart && (o.resume || o.restart) {
		return usageError{errors.New("--resume-or-start excludes --resume and --restart")}
	}
	if (o.resume || o.restart || o.resumeOrStart) && o.job == "" {
		return usageError{errors.New("--resume, --resume-or-start and --restart need --job NAME")}
	}
	if o.job != "" && (strings.ContainsAny(o.job, `/\`) || strings.HasPrefix(o.job, ".")) {
		return usageError{fmt.Errorf("--job %q: a job name cannot contain / or \\ or start with a dot", o.job)}
	}
	if o.workers < 1 || o.workers > 64 {
		return usageError{errors.New("--workers must be between 1 and 64")}
	}
	o.part, o.parts = 0, 1
	if o.partition != "" {
		i, n, ok := strings.Cut(o.partition, "/")
		pi, err1 := strconv.Atoi(i)
		pn, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || pn < 1 || pi < 0 || pi >= pn {
			return usageError{fmt.Errorf("--partition %q: want i/N with 0 <= i < N, e.g. 0/3", o.partition)}
		}
		o.part, o.parts = pi, pn
	}
	if o.checkpointEvery < 0 {
		return usageError{errors.New("--checkpoint-every cannot be negative (0: a checkpoint after every batch)")}
	}
	if o.retryFor <= 0 {
		return usageError{errors.New("--retry-for must be positive")}
	}
	if o.leaseTTL < time.Second {
		return usageError{errors.New("--lease-ttl must be at least 1s")}
	}
	return nil
}

// checkTarget checks the flags against what the opened target can do.
func (o *jobOptions) checkTarget(t load.Target) error {
	if (o.workers > 1 || o.parts > 1) && !t.Caps().Parallel {
		return usageError{errors.New("--workers and --partition need a server target (mongodb://...): parts of one collection cannot share a file in order")}
	}
	return nil
}

// commandLine is the migrate command that reruns o with extra flags. A
// source or target taken from the environment, or holding a password, is
// written "$DENORM_SOURCE" / "$DENORM_TARGET" (hint.go); a line after the
// command then says what to set.
func commandLine(o *migrateOptions, extra ...string) string {
	src, srcNote := connArg(o.source, !o.sourceFlag, "DENORM_SOURCE", "--source URL")
	dst, dstNote := connArg(o.target, o.targetEnv, "DENORM_TARGET", "--target URI")
	args := []string{"denorm", "migrate", "--mapping", shellQuote(o.mapping)}
	if o.source != "" {
		args = append(args, "--source", src)
	} // else the PG* variables and .pgpass name the source, as they will again
	args = append(args, "--target", dst, "--job", shellQuote(o.jobs.job))
	if o.jobs.workers > 1 {
		args = append(args, "--workers", strconv.Itoa(o.jobs.workers))
	}
	if o.jobs.parts > 1 {
		args = append(args, "--partition", o.jobs.partition)
	}
	if len(o.collections) > 0 {
		args = append(args, "--collections", strings.Join(o.collections, ","))
	}
	if o.batchSize != 1000 {
		args = append(args, "--batch-size", strconv.Itoa(o.batchSize))
	}
	if o.indexes != "" && o.indexes != pipeline.IndexesAfter && !slices.Contains(extra, "--indexes") {
		args = append(args, "--indexes", o.indexes)
	}
	for _, a := range extra {
		args = append(args, shellQuote(a))
	}
	line := strings.Join(args, " ")
	for _, n := range []string{srcNote, dstNote} {
		if n != "" {
			line += "\n  (" + n + ")"
		}
	}
	return line
}

// jobSpec is the job o's flags name (job.Prepare).
func jobSpec(g *globals, o *migrateOptions) *job.Spec {
	j := &o.jobs
	return &job.Spec{Name: j.job, Partition: j.part, Partitions: j.parts,
		Workers: j.workers, Resume: j.resume, ResumeOrStart: j.resumeOrStart, Restart: j.restart, Mapping: o.mapping, Version: version,
		Lease: job.LeaseOptions{TTL: j.leaseTTL, Command: "migrate", Notice: func(msg string) { g.log.Warn(msg) }}}
}

// tellPrepared says what preparing the job decided.
func tellPrepared(g *globals, jb *job.Job) {
	switch {
	case jb.Restarted:
		g.log.Info("job restarted", "job", jb.ID)
	case jb.Resumed:
		cp := jb.Record()
		if jb.ResumedVersion != version {
			g.log.Warn("resuming a job started by another denorm version", "job", jb.ID, "then", jb.ResumedVersion, "now", version)
		}
		g.log.Info("resuming job", "job", jb.ID, "collection", cp.Collection, "checkpoint", cp.Updated.Format(time.RFC3339))
	}
}

// jobError words job.Prepare's refusals for the command line,
// with the command to run next, and gives each its exit code. Other
// errors (a corrupt checkpoint's already names --restart) pass unchanged.
func jobError(err error, o *migrateOptions) error {
	var (
		none       *job.NoCheckpointError
		changed    *job.MappingChangedError
		workers    *job.WorkersChangedError
		unfinished *job.UnfinishedError
		held       *load.LeaseHeldError
	)
	switch {
	case errors.As(err, &held):
		what := "Wait for it to finish, or stop it"
		if o.jobs.restart {
			what = "--restart cannot start the job over while it runs: stop that run first"
		}
		dst, _ := connArg(o.target, o.targetEnv, "DENORM_TARGET", "--target URI")
		next := "denorm status --target " + dst + " --job " + shellQuote(o.jobs.job)
		return fmt.Errorf("%w.\n%s; `%s` shows its progress", held, what, next)
	case errors.As(err, &none):
		return usageError{fmt.Errorf("job %q has no checkpoint in %s: nothing to resume; start it with:\n  %s", none.ID, none.Where, commandLine(o))}
	case errors.As(err, &changed):
		return fmt.Errorf("job %q cannot resume: the mapping file changed since the job started (sha256 %.12s then, %.12s now), so documents of two mappings would mix; restore the mapping, or start over with:\n  %s",
			changed.ID, changed.Then, changed.Now, commandLine(o, "--restart"))
	case errors.As(err, &workers):
		return usageError{fmt.Errorf("job %q was started with --workers %d; resume it with the same number (positions are per worker)", workers.ID, workers.Then)}
	case pipeline.IsForeignDocuments(err):
		return usageError{err}
	case errors.As(err, &unfinished):
		return usageError{fmt.Errorf("job %q in %s is unfinished (%s, last checkpoint %s).\nTo continue it:\n  %s\nTo start it over:\n  %s",
			unfinished.ID, unfinished.Where, unfinished.At(), unfinished.Updated.Format(time.RFC3339), commandLine(o, "--resume"), commandLine(o, "--restart"))}
	}
	return err
}

// jobRunOptions fills the pipeline options for batches, workers,
// reconnects and checkpoints (pipeline.Migrate adds the job's).
func jobRunOptions(g *globals, o *migrateOptions) pipeline.JobOptions {
	return pipeline.JobOptions{
		Options:         pipeline.Options{BatchSize: o.batchSize},
		Workers:         o.jobs.workers,
		Partition:       o.jobs.part,
		Partitions:      o.jobs.parts,
		CheckpointEvery: o.jobs.checkpointEvery,
		Retry:           load.RetryPolicy{For: o.jobs.retryFor, Base: 200 * time.Millisecond, Cap: 5 * time.Second},
		Notice:          func(msg string) { g.log.Warn(msg) },
		Grace:           interruptGrace,
	}
}

// leaseLostError words a run that lost its job's lease: it stopped
// writing, and another run may own the job now.
func leaseLostError(err error, o *migrateOptions) error {
	dst, _ := connArg(o.target, o.targetEnv, "DENORM_TARGET", "--target URI")
	return fmt.Errorf("%w.\nThis run stopped writing and did not save its checkpoint; the documents it wrote are rewritten by the run that holds the job now. `denorm status --target %s --job %s` shows it",
		err, dst, shellQuote(o.jobs.job))
}
