package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform"
)

type migrateOptions struct {
	mapping    string
	source     string
	target     string
	batchSize  int
	maxDocSize int
	rejects    string
	progress   string
	sourceFlag bool
	syncMethod string
	targetEnv  bool // the target came from DENORM_TARGET
	jobs       jobOptions
}

const defaultTarget = "denorm-out"

func newMigrateCmd(g *globals) *cobra.Command {
	o := &migrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate --mapping FILE --source URL [--target TARGET]",
		Short: "Copy the source database into documents, as the mapping file says",
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

Writes replace documents by _id, so running migrate again gives the same
result. Memory is bounded by --batch-size, never by table size.
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
	f.StringVar(&o.source, "source", "", "source PostgreSQL URL (env DENORM_SOURCE)")
	f.StringVar(&o.target, "target", defaultTarget, "target: mongodb://host:port/db or a directory (env DENORM_TARGET)")
	f.IntVar(&o.batchSize, "batch-size", 1000, "root rows read, built and written at a time")
	f.IntVar(&o.maxDocSize, "max-doc-size", load.DefaultMaxDocSize, "reject documents larger than this many bytes (16 MiB for MongoDB, 2 MiB for Cosmos DB)")
	f.StringVar(&o.rejects, "rejects", "", "write rejected rows to this JSON Lines file (collection, source, error)")
	f.StringVar(&o.progress, "progress", "auto", "progress display: auto (bars on a terminal, status lines otherwise), bar, lines, none")
	f.StringVar(&o.syncMethod, "sync", "", "logical: create the job's replication slot and migrate the snapshot it exports, so that 'denorm sync --method logical' continues the job with no gap (needs --job)")
	addJobFlags(cmd, &o.jobs)
	return cmd
}

func runMigrate(cmd *cobra.Command, g *globals, o *migrateOptions) error {
	ctx := cmd.Context()
	if o.batchSize <= 0 {
		return usageError{fmt.Errorf("--batch-size must be positive")}
	}
	if err := checkRange("--max-doc-size", o.maxDocSize, 1, maxDocSizeLimit); err != nil {
		return err
	}
	switch o.progress {
	case "auto", "bar", "lines", "none":
	default:
		return usageError{fmt.Errorf("--progress must be auto, bar, lines or none")}
	}
	if err := o.jobs.check(); err != nil {
		return err
	}
	switch {
	case o.syncMethod != "" && o.syncMethod != load.SyncLogical:
		return usageError{fmt.Errorf("--sync %q: the only method a migration prepares is logical (diff needs nothing: 'denorm sync --method diff' continues any job)", o.syncMethod)}
	case o.syncMethod != "" && o.jobs.job == "":
		return usageError{errors.New("--sync logical needs --job NAME: the replication slot and the sync job are named after it")}
	case o.syncMethod != "" && (o.jobs.workers > 1 || o.jobs.parts > 1):
		return usageError{errors.New("--sync logical migrates one snapshot with one worker: it excludes --workers and --partition")}
	}
	if err := checkTarget(o.target); err != nil {
		return err
	}
	snap, plan, closeSnap, err := openPlan(ctx, g, o.source, o.mapping)
	if err != nil {
		return err
	}
	defer closeSnap()
	g.log.Debug("plan resolved", "plan", plan.String(), "snapshot", snap.ID)

	target, err := load.Open(ctx, o.target, load.Options{MaxDocSize: o.maxDocSize})
	if err != nil {
		return err
	}
	defer target.Close(ctx)
	if err := o.jobs.checkTarget(target); err != nil {
		return err
	}

	var (
		store load.Checkpoints
		cp    *load.Checkpoint
	)
	if o.jobs.job != "" {
		var done bool
		store, cp, done, err = prepareJob(ctx, g, o, plan, target)
		if err != nil || done {
			return err
		}
	}
	if o.syncMethod != "" {
		if !target.Caps().Delete {
			return usageError{fmt.Errorf("--sync logical: target %s is a directory, which sync cannot keep current (it replaces and deletes chosen documents); migrate to a server (mongodb://...)", o.target)}
		}
		switch {
		case cp.Sync != nil && cp.Sync.Method == load.SyncLogical && cp.Sync.Position != "":
			// A resumed migration: the slot has kept every change since
			// the migration began; sync applies them.
		case len(cp.Streams) > 0 && (o.jobs.resume || o.jobs.resumeOrStart):
			return usageError{fmt.Errorf("job %q was started without --sync logical: a slot made now would miss the changes since it began; start it over with --restart --sync logical, or let it finish and continue it with 'denorm sync --method logical' (which then diffs the target once)", o.jobs.job)}
		default:
			replace := o.jobs.restart || (cp.Sync != nil && cp.Sync.Method == load.SyncLogical)
			slotSnap, release, err := pipeline.StartLogical(ctx, snap.Source(), plan, store, cp, replace)
			if err != nil {
				return syncError(err, &syncOptions{mapping: o.mapping, target: o.target, job: o.jobs.job, source: o.source})
			}
			defer release()
			g.log.Info("replication slot created; migrating the snapshot it exported", "job", o.jobs.job, "slot", cp.Sync.Slot, "position", cp.Sync.Position)
			snap = slotSnap
		}
	}

	var (
		mu       sync.Mutex
		rejected int64
		rejFile  *os.File
		rejEnc   *json.Encoder
	)
	if o.rejects != "" {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if o.jobs.resume || o.jobs.resumeOrStart {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		rejFile, err = os.OpenFile(o.rejects, flags, 0o644)
		if err != nil {
			return fmt.Errorf("rejects file: %w", err)
		}
		defer rejFile.Close()
		rejEnc = json.NewEncoder(rejFile)
	}
	prog := newProgress(g, o.progress)
	start := time.Now()
	stats, err := pipeline.Run(ctx, snap, plan, target, jobRunOptions(g, o, snap.Source(), pipeline.Options{
		BatchSize: o.batchSize,
		Progress:  prog.update,
		Reject: func(r transform.Reject) {
			mu.Lock()
			defer mu.Unlock()
			rejected++
			if rejEnc != nil {
				_ = rejEnc.Encode(map[string]string{"collection": r.Collection, "source": r.Source, "error": r.Err.Error()})
			}
			if rejected <= 20 || g.verbose {
				g.log.Warn("rejected", "collection", r.Collection, "source", r.Source, "error", r.Err)
			}
		},
	}, store, cp))
	prog.finish()
	if cerr := target.Close(ctx); err == nil && cerr != nil {
		err = cerr
	}
	printSummary(g, stats, time.Since(start), o.target)
	var ie *pipeline.InterruptedError
	if errors.As(err, &ie) {
		if store == nil {
			return fmt.Errorf("interrupted; run with --job NAME to be able to resume a migration")
		}
		return fmt.Errorf("interrupted: the checkpoint is saved (collection %q); continue with:\n  %s", ie.Checkpoint.Collection, commandLine(o, "--resume"))
	}
	if err != nil {
		return err
	}
	if rejected > 0 {
		if o.rejects != "" {
			fmt.Fprintf(g.stderr, "rejected rows are listed in %s\n", o.rejects)
		}
		return rejectedError{rejected}
	}
	return nil
}

func printSummary(g *globals, stats []pipeline.Stats, elapsed time.Duration, target string) {
	w := g.stdout
	fmt.Fprintf(w, "%-20s %-16s %12s %12s %8s %10s %10s\n", "COLLECTION", "FROM TABLE", "ROWS READ", "DOCS WRITTEN", "FAILED", "TIME", "DOCS/S")
	var read, written, failed int64
	for _, s := range stats {
		rate := 0.0
		if s.Elapsed > 0 {
			rate = float64(s.Written) / s.Elapsed.Seconds()
		}
		status := ""
		if !s.Done {
			status = "  (interrupted)"
		}
		fmt.Fprintf(w, "%-20s %-16s %12d %12d %8d %10s %10.0f%s\n", s.Collection, s.Table, s.Rows, s.Written, s.Failed, s.Elapsed.Round(time.Millisecond), rate, status)
		read, written, failed = read+s.Rows, written+s.Written, failed+s.Failed
	}
	fmt.Fprintf(w, "%-20s %-16s %12d %12d %8d %10s\n", "TOTAL", "", read, written, failed, elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "target: %s\n", connstr.Parse(target))
}
