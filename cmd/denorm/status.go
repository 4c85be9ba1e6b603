package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
)

func newStatusCmd(g *globals) *cobra.Command {
	var target, jobName, format, source string
	var maxWALMiB int64
	cmd := &cobra.Command{
		Use:     "status --target TARGET [--job NAME] [--format text|json]",
		Example: statusExamples,
		Short:   "Show the migration jobs saved in a target: state, progress, what to run next",
		Long: `status lists every job whose checkpoints the target holds (see 'denorm migrate
--help', --job): its state, the progress of each collection, the time of the last
checkpoint, and the command to run next. With --job, only that job (and its
partitions). A corrupt checkpoint is listed with its error, and the exit code
is then 1. For a sync job (see 'denorm sync --help') the text also shows the
method, the position, the last pass, the lag at its end and the totals; with
--source (or DENORM_SOURCE), also the state of a logical job's replication
slot and how much WAL it has not confirmed yet.

A job is "running" while a process holds its lease (see 'denorm migrate --help':
one writer per job), with that process's host, pid and last heartbeat;
"stopped" when it is unfinished and no process holds its lease (it crashed,
was killed or interrupted: resume it); "done" when it finished; "starting"
when a process holds the lease of a job that has no checkpoint yet. The
percentage and the time left come from the catalog's row estimates and this
run's rate, and are estimates.

--format json prints one JSON document (schemaVersion 1; its fields are
listed in docs/sync.md, "Status"), for schedulers and
scripts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target = fromEnv(cmd, "target", "DENORM_TARGET")
			source = fromEnv(cmd, "source", "DENORM_SOURCE")
			targetEnv := !cmd.Flags().Changed("target") && os.Getenv("DENORM_TARGET") != ""
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("--format must be text or json")}
			}
			if err := checkTarget(target); err != nil {
				return err
			}
			byDefault, err := defaultTargetRead(cmd, g)
			if err != nil {
				return err
			}
			t, err := load.Open(cmd.Context(), target, load.Options{})
			if err != nil {
				return err
			}
			defer t.Close(cmd.Context())
			store := t.Records()
			now := time.Now()
			jobs, bad, err := job.Status(cmd.Context(), store, now)
			if err != nil {
				return err
			}
			var shown []job.JobStatus
			for _, js := range jobs {
				if jobName == "" || js.Job == jobName || strings.HasPrefix(js.ID, jobName+".") {
					shown = append(shown, js)
				}
			}
			var corrupt []error
			for _, e := range bad {
				var ce *job.CorruptError
				if jobName == "" || !errors.As(e, &ce) || ce.ID == jobName || strings.HasPrefix(ce.ID, jobName+".") {
					corrupt = append(corrupt, e)
				}
			}
			if byDefault && len(shown) == 0 && len(corrupt) == 0 {
				return usageError{fmt.Errorf("no --target given, and ./%s (migrate's default target) holds no jobs: give --target mongodb://host:port/db or the directory a job wrote to (or set DENORM_TARGET)", defaultTarget)}
			}
			if jobName != "" && len(shown) == 0 && len(corrupt) == 0 {
				return fmt.Errorf("no job %q in %s: migrate with --job %s saves one", jobName, store.Where(), jobName)
			}
			dst := statusTarget{value: target, fromEnv: targetEnv}
			if format == "json" {
				err = writeStatusJSON(cmd.Context(), g.stdout, dst, source, maxWALMiB<<20, store.Where(), now, shown, corrupt)
			} else {
				for _, js := range shown {
					writeStatusText(cmd.Context(), g.stdout, dst, source, maxWALMiB<<20, now, js)
				}
				for _, e := range corrupt {
					fmt.Fprintf(g.stdout, "%v\n", e)
				}
				if len(shown) == 0 && len(corrupt) == 0 {
					fmt.Fprintf(g.stdout, "no jobs in %s\n", store.Where())
				}
			}
			if err == nil && len(corrupt) > 0 {
				// Listed above with the rest; the exit code tells scripts.
				err = fmt.Errorf("%d corrupt checkpoint(s) in %s: a job with one cannot resume; start it over with migrate --restart", len(corrupt), store.Where())
			}
			return err
		},
	}
	cmd.Flags().StringVar(&target, "target", defaultTarget, targetUsage)
	cmd.Flags().StringVar(&jobName, "job", "", "show only this job")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().StringVar(&source, "source", "", "source PostgreSQL URL (env DENORM_SOURCE): also show logical sync jobs' replication slots")
	cmd.Flags().Int64Var(&maxWALMiB, "max-retained-wal", defaultMaxRetainedWALMiB, "MiB of WAL a logical sync job's replication slot may hold on the source before status warns (with --source)")
	return cmd
}

// ago is how long before now t was, for people.
func ago(now, t time.Time) string {
	return fmt.Sprintf("%s (%s ago)", t.Format(time.RFC3339), now.Sub(t).Round(time.Second))
}

// statusTarget is the --target status was given, and whether it came
// from DENORM_TARGET: commands it suggests name "$DENORM_TARGET" then, or
// when the target holds a password (connArg).
type statusTarget struct {
	value   string
	fromEnv bool
}

// resumeCommand is the command that resumes a stopped job, and a note on
// what to set first (connArg), if any.
func resumeCommand(target statusTarget, c *job.Record) (cmd, note string) {
	extra := ""
	if c.Partitions > 1 {
		extra = fmt.Sprintf(" --partition %d/%d", c.Partition, c.Partitions)
	}
	if c.Workers > 1 {
		extra += fmt.Sprintf(" --workers %d", c.Workers)
	}
	dst, note := connArg(target.value, target.fromEnv, "DENORM_TARGET", "--target URI")
	return fmt.Sprintf("denorm migrate --mapping %s --source \"$DENORM_SOURCE\" --target %s --job %s%s --resume",
		shellQuote(c.Mapping), dst, shellQuote(c.Job), extra), note
}

func writeStatusText(ctx context.Context, w io.Writer, target statusTarget, source string, maxWAL int64, now time.Time, js job.JobStatus) {
	part := ""
	if js.Partitions > 1 {
		part = fmt.Sprintf(" partition %d/%d", js.Partition, js.Partitions)
	}
	c := js.Record
	if c == nil { // starting: a lease, no checkpoint yet
		fmt.Fprintf(w, "job %s: %s; run by %s, last heartbeat %s\n", js.ID, js.State, holderText(js.Holder), ago(now, js.Holder.Heartbeat))
		return
	}
	fmt.Fprintf(w, "job %s%s: %s", c.Job, part, js.State)
	if js.State != job.StateDone && c.Collection != "" {
		fmt.Fprintf(w, " at collection %s", c.Collection)
	}
	built, total := c.IndexesBuilt()
	switch {
	case c.Sync != nil && c.Phase == job.PhaseDone:
		fmt.Fprintf(w, ", initial copy done (%d rows read)", js.Rows)
	case c.Phase == job.PhaseIndexes:
		fmt.Fprintf(w, ", loading done (%d rows read), indexes %d/%d built", js.Rows, built, total)
	case js.Percent != nil && js.State != job.StateDone:
		fmt.Fprintf(w, ", %.1f%% (%d of about %d rows)", *js.Percent, js.Rows, js.Estimated)
	default:
		fmt.Fprintf(w, ", %d rows read", js.Rows)
		if total > 0 && js.State == job.StateDone {
			fmt.Fprintf(w, ", indexes %d/%d built", built, total)
		}
	}
	if js.State == job.StateRunning && js.Rate > 0 {
		fmt.Fprintf(w, ", %.0f rows/s", js.Rate)
		if js.ETA != nil {
			fmt.Fprintf(w, ", about %s left", *js.ETA)
		}
	}
	fmt.Fprintln(w)
	switch {
	case js.Holder != nil:
		fmt.Fprintf(w, "  run by %s, last heartbeat %s\n", holderText(js.Holder), ago(now, js.Holder.Heartbeat))
	case js.State == job.StateStopped && js.Last != nil:
		fmt.Fprintf(w, "  no process runs it: last run by %s, last heartbeat %s\n", holderText(js.Last), ago(now, js.Last.Heartbeat))
	case js.State == job.StateStopped:
		fmt.Fprintf(w, "  no process runs it\n")
	}
	fmt.Fprintf(w, "  last checkpoint %s; started %s; %d resumes; workers %d; denorm %s; mapping %s\n",
		ago(now, c.Updated), c.Started.Format(time.RFC3339), c.Resumes, c.Workers, c.Version, c.Mapping)
	fmt.Fprintf(w, "  %-20s %-8s %12s %12s %8s\n", "COLLECTION", "STATE", "ROWS READ", "DOCS WRITTEN", "FAILED")
	for _, cs := range js.Collections {
		fmt.Fprintf(w, "  %-20s %-8s %12d %12d %8d\n", cs.Name, cs.State, cs.Rows, cs.Written, cs.Failed)
	}
	if c.Sync != nil {
		printSyncStatus(ctx, w, c, source, maxWAL)
		next, note := syncCommand(target, c)
		fmt.Fprintf(w, "  next: %s\n", next)
		if note != "" {
			fmt.Fprintf(w, "    (%s)\n", note)
		}
		return
	}
	next, note := resumeCommand(target, c)
	switch js.State {
	case job.StateDone:
		fmt.Fprintf(w, "  next: nothing; the job is complete\n")
		note = ""
	case job.StateRunning:
		fmt.Fprintf(w, "  next: nothing while it runs; should it stop, resume it with: %s\n", next)
	default:
		fmt.Fprintf(w, "  next: %s\n", next)
	}
	if note != "" {
		fmt.Fprintf(w, "    (%s)\n", note)
	}
}

func holderText(h *load.LeaseHolder) string {
	return fmt.Sprintf("%s, pid %d on host %s, since %s", h.Command, h.PID, h.Host, h.Started.Format(time.RFC3339))
}

// The JSON status (status --format json), schemaVersion 1. Fields are
// only ever added; docs/sync.md ("Status") lists them.
type statusJSON struct {
	SchemaVersion int       `json:"schemaVersion"`
	Target        string    `json:"target"`
	Store         string    `json:"store"`
	Generated     time.Time `json:"generated"`
	Jobs          []jobJSON `json:"jobs"`
	Errors        []string  `json:"errors"`
}

type jobJSON struct {
	ID         string `json:"id"`
	Job        string `json:"job"`
	Partition  int    `json:"partition"`
	Partitions int    `json:"partitions"`
	State      string `json:"state"`
	Collection string `json:"collection"`
	// Phase is the checkpoint's: running (loading), indexes or done.
	Phase string `json:"phase"`
	// Indexes counts the indexes of the job's index phase (null when it
	// builds none).
	Indexes       *indexesJSON      `json:"indexes"`
	Holder        *load.LeaseHolder `json:"holder"`
	LastHolder    *load.LeaseHolder `json:"lastHolder"`
	Started       *time.Time        `json:"started"`
	Updated       *time.Time        `json:"updated"`
	RunStarted    *time.Time        `json:"runStarted"`
	Resumes       int               `json:"resumes"`
	Workers       int               `json:"workers"`
	Version       string            `json:"version"`
	Mapping       string            `json:"mapping"`
	RowsRead      int64             `json:"rowsRead"`
	DocsWritten   int64             `json:"docsWritten"`
	Failed        int64             `json:"failed"`
	RowsEstimated *int64            `json:"rowsEstimated"`
	Percent       *float64          `json:"percent"`
	RowsPerSecond *float64          `json:"rowsPerSecond"`
	ETASeconds    *float64          `json:"etaSeconds"`
	Collections   []collectionJSON  `json:"collections"`
	// Sync is set for a sync job (null for a migration job).
	Sync *syncJSON `json:"sync"`
	Next string    `json:"next"`
}

// syncJSON is a sync job's state, as the text format's sync lines.
type syncJSON struct {
	Method   string `json:"method"`
	Slot     string `json:"slot"`
	Position string `json:"position"`
	// CopyInProgress: the job's initial copy has not finished.
	CopyInProgress bool       `json:"copyInProgress"`
	Passes         int64      `json:"passes"`
	LastPass       *time.Time `json:"lastPass"`
	LastSnapshot   *time.Time `json:"lastSnapshot"`
	LagSeconds     float64    `json:"lagSeconds"`
	Changes        int64      `json:"rowsChanged"`
	Written        int64      `json:"docsWritten"`
	Deleted        int64      `json:"docsDeleted"`
	Unchanged      int64      `json:"docsUnchanged"`
	Rebuilds       int64      `json:"collectionsRebuilt"`
	// Rebuilding are the collections a run with a changed mapping began
	// to rebuild and did not finish: the next sync rebuilds them again.
	Rebuilding []string `json:"rebuilding"`
	// SlotStatus is the replication slot as the source shows it (with
	// --source, logical jobs).
	SlotStatus *slotJSON `json:"slotStatus,omitempty"`
}

// slotJSON is a logical job's replication slot on the source.
type slotJSON struct {
	Active    bool   `json:"active"`
	ActivePID int    `json:"activePid,omitempty"`
	Confirmed string `json:"confirmed,omitempty"`
	Restart   string `json:"restart,omitempty"`
	Current   string `json:"current,omitempty"`
	// BehindBytes is the WAL the job has not confirmed (current -
	// confirmed); RetainedBytes the WAL the slot keeps on the source's
	// disk (current - restart); OverBudget: RetainedBytes is over
	// --max-retained-wal.
	BehindBytes   int64  `json:"behindBytes"`
	RetainedBytes int64  `json:"retainedBytes"`
	BudgetBytes   int64  `json:"budgetBytes"`
	OverBudget    bool   `json:"overBudget"`
	WALStatus     string `json:"walStatus,omitempty"`
	Error         string `json:"error,omitempty"`
}

// defaultMaxRetainedWALMiB is status's default WAL budget of a slot: 1 GiB.
const defaultMaxRetainedWALMiB = 1024

// slotRead is a slot's status as read, or why it could not be.
type slotRead struct {
	st  *extract.SlotStatus
	err error
	src string
}

// slotState reads the replication slot of logical job c on source.
func slotState(ctx context.Context, source string, c *job.Record) slotRead {
	src, err := extract.ParseSource(source)
	var lg *extract.Logical
	if err == nil {
		lg, err = src.Logical(c.Job)
	}
	var st *extract.SlotStatus
	if err == nil {
		st, err = lg.Status(ctx)
	}
	return slotRead{st: st, err: err, src: source}
}

// retained is the WAL the slot keeps on the source's disk.
func (r slotRead) retained() int64 {
	if r.st == nil || r.st.Restart == 0 || r.st.Current < r.st.Restart {
		return 0
	}
	return int64(r.st.Current - r.st.Restart)
}

func slotStatusJSON(r slotRead, budget int64) *slotJSON {
	out := &slotJSON{BudgetBytes: budget}
	if st := r.st; st != nil {
		out.Active, out.ActivePID, out.WALStatus = st.Active, st.ActivePID, st.WALStatus
		out.Confirmed, out.Restart, out.Current = st.Confirmed.String(), st.Restart.String(), st.Current.String()
		out.BehindBytes, out.RetainedBytes = st.LagBytes, r.retained()
		out.OverBudget = out.RetainedBytes > budget
	}
	if r.err != nil {
		out.Error = connstr.Parse(r.src).RedactError(r.err).Error()
	}
	return out
}

// walText is a record's WAL position as PostgreSQL prints it, "" for none.
func walText(c *job.Record) string {
	if !c.HasPosition() {
		return ""
	}
	return c.Sync.Position.String()
}

func syncStatusJSON(c *job.Record) *syncJSON {
	s := c.Sync
	out := &syncJSON{Method: s.Method, Slot: s.Slot, Position: walText(c), CopyInProgress: c.Phase != job.PhaseDone,
		Passes: s.Passes, LagSeconds: s.LagSeconds, Changes: s.Changes, Written: s.Written, Deleted: s.Deleted,
		Unchanged: s.Unchanged, Rebuilds: s.Rebuilds, Rebuilding: c.Rebuilding}
	if out.Rebuilding == nil {
		out.Rebuilding = []string{}
	}
	if !s.LastPass.IsZero() {
		out.LastPass = &s.LastPass
	}
	if !s.LastSnapshot.IsZero() {
		out.LastSnapshot = &s.LastSnapshot
	}
	return out
}

// syncCommand is the command that runs a sync job's next passes, and a
// note on what to set first (connArg), if any.
func syncCommand(target statusTarget, c *job.Record) (cmd, note string) {
	dst, note := connArg(target.value, target.fromEnv, "DENORM_TARGET", "--target URI")
	return fmt.Sprintf("denorm sync --mapping %s --source \"$DENORM_SOURCE\" --target %s --job %s --method %s [--once|--every D|--follow]",
		shellQuote(c.Mapping), dst, shellQuote(c.Job), c.Sync.Method), note
}

type indexesJSON struct {
	Built int `json:"built"`
	Total int `json:"total"`
	// Missing names the indexes not built yet, as collection.index.
	Missing []string `json:"missing"`
}

type collectionJSON struct {
	Name          string `json:"name"`
	State         string `json:"state"`
	RowsRead      int64  `json:"rowsRead"`
	DocsWritten   int64  `json:"docsWritten"`
	Failed        int64  `json:"failed"`
	RowsEstimated int64  `json:"rowsEstimated"`
}

func writeStatusJSON(ctx context.Context, w io.Writer, target statusTarget, source string, maxWAL int64, store string, now time.Time, jobs []job.JobStatus, bad []error) error {
	out := statusJSON{SchemaVersion: 1, Target: connstr.Parse(target.value).Redacted(), Store: store, Generated: now.UTC(), Jobs: []jobJSON{}, Errors: []string{}}
	for _, js := range jobs {
		j := jobJSON{ID: js.ID, Job: js.Job, Partition: js.Partition, Partitions: js.Partitions, State: js.State,
			Holder: js.Holder, LastHolder: js.Last, RowsRead: js.Rows, DocsWritten: js.Written, Failed: js.Failed,
			Percent: js.Percent, Collections: []collectionJSON{}}
		if c := js.Record; c != nil {
			j.Started, j.Updated = &c.Started, &c.Updated
			if !c.RunStarted.IsZero() {
				j.RunStarted = &c.RunStarted
			}
			if js.State != job.StateDone {
				j.Collection = c.Collection
			}
			j.Resumes, j.Workers, j.Version, j.Mapping = c.Resumes, c.Workers, c.Version, c.Mapping
			j.Phase = c.Phase
			if built, total := c.IndexesBuilt(); total > 0 {
				j.Indexes = &indexesJSON{Built: built, Total: total, Missing: []string{}}
				for _, ix := range c.Indexes {
					if !ix.Built {
						j.Indexes.Missing = append(j.Indexes.Missing, ix.Collection+"."+ix.Name)
					}
				}
			}
			switch {
			case c.Sync != nil:
				j.Sync = syncStatusJSON(c)
				if c.Sync.Method == job.SyncLogical && source != "" {
					j.Sync.SlotStatus = slotStatusJSON(slotState(ctx, source, c), maxWAL)
				}
				j.Next, _ = syncCommand(target, c)
			case js.State == job.StateStopped:
				j.Next, _ = resumeCommand(target, c)
			}
		}
		if js.Estimated > 0 {
			j.RowsEstimated = &js.Estimated
		}
		if js.Rate > 0 {
			r := js.Rate
			j.RowsPerSecond = &r
		}
		if js.ETA != nil {
			s := js.ETA.Seconds()
			j.ETASeconds = &s
		}
		for _, cs := range js.Collections {
			j.Collections = append(j.Collections, collectionJSON{Name: cs.Name, State: cs.State, RowsRead: cs.Rows,
				DocsWritten: cs.Written, Failed: cs.Failed, RowsEstimated: cs.Estimated})
		}
		out.Jobs = append(out.Jobs, j)
	}
	for _, e := range bad {
		out.Errors = append(out.Errors, e.Error())
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// printSyncStatus prints a sync job's state: method, position, last pass,
// lag and totals, and with a source its replication slot.
func printSyncStatus(ctx context.Context, w io.Writer, c *job.Record, source string, maxWAL int64) {
	s := c.Sync
	fmt.Fprintf(w, "  sync: method %s", s.Method)
	if s.Slot != "" {
		fmt.Fprintf(w, ", slot %s", s.Slot)
	}
	switch {
	case s.Method == job.SyncLogical && s.Position == 0:
		fmt.Fprintf(w, ", slot being created")
	case s.Position != 0:
		fmt.Fprintf(w, ", position %s", s.Position)
	}
	if c.Phase != job.PhaseDone {
		fmt.Fprintf(w, ", initial copy in progress")
	}
	fmt.Fprintln(w)
	if !s.LastPass.IsZero() {
		fmt.Fprintf(w, "  last pass: %s (%s ago), %d passes; lag at its end %s\n", s.LastPass.Format(time.RFC3339),
			time.Since(s.LastPass).Round(time.Second), s.Passes, (time.Duration(s.LagSeconds * float64(time.Second))).Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  totals: %d rows changed; documents %d written, %d deleted, %d unchanged; %d collections rebuilt whole\n",
		s.Changes, s.Written, s.Deleted, s.Unchanged, s.Rebuilds)
	if len(c.Rebuilding) > 0 {
		fmt.Fprintf(w, "  rebuilding after a change of the mapping, interrupted: %s (the next sync rebuilds them again)\n", strings.Join(c.Rebuilding, ", "))
	}
	if s.Method != job.SyncLogical || source == "" {
		return
	}
	r := slotState(ctx, source, c)
	if st := r.st; st != nil {
		active := "idle"
		if st.Active {
			active = fmt.Sprintf("streaming (server process %d)", st.ActivePID)
		}
		fmt.Fprintf(w, "  slot: %s, confirmed %s, server at %s: %s of WAL behind, %s kept on the source's disk; wal_status %s\n",
			active, st.Confirmed, st.Current, mib(st.LagBytes), mib(r.retained()), st.WALStatus)
		if held := r.retained(); held > maxWAL {
			fmt.Fprintf(w, "  warning: the slot holds %s of WAL on the source, over the budget of %s (--max-retained-wal): the source's disk fills while the job does not run; run the job, or drop it (%s)\n",
				mib(held), mib(maxWAL), "denorm sync --drop-slot")
		}
	}
	if r.err != nil {
		fmt.Fprintf(w, "  slot: %v\n", connstr.Parse(source).RedactError(r.err))
	}
}

// mib prints a number of bytes in MiB (KiB below one MiB).
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
