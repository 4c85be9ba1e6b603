package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/pipeline"
)

func newStatusCmd(g *globals) *cobra.Command {
	var target, job, format string
	cmd := &cobra.Command{
		Use:   "status --target TARGET [--job NAME] [--format text|json]",
		Short: "Show the migration jobs saved in a target: state, progress, what to run next",
		Long: `status lists every job whose checkpoints the target holds (see 'denorm migrate
--help', --job): its state, the progress of each collection, the time of the last
checkpoint, and the command to run next. With --job, only that job (and its
partitions). A corrupt checkpoint is listed with its error, and the exit code
is then 1.

A job is "running" while a process holds its lease (see 'denorm migrate --help':
one writer per job), with that process's host, pid and last heartbeat;
"stopped" when it is unfinished and no process holds its lease (it crashed,
was killed or interrupted: resume it); "done" when it finished; "starting"
when a process holds the lease of a job that has no checkpoint yet. The
percentage and the time left come from the catalog's row estimates and this
run's rate, and are estimates.

--format json prints one JSON document (schemaVersion 1; its fields are
listed in the README, "denorm status --format json"), for schedulers and
scripts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target = fromEnv(cmd, "target", "DENORM_TARGET")
			targetEnv := !cmd.Flags().Changed("target") && os.Getenv("DENORM_TARGET") != ""
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("--format must be text or json")}
			}
			if err := checkTarget(target); err != nil {
				return err
			}
			t, err := load.Open(cmd.Context(), target, load.Options{})
			if err != nil {
				return err
			}
			defer t.Close(cmd.Context())
			store := t.Checkpoints()
			now := time.Now()
			jobs, bad, err := pipeline.Status(cmd.Context(), store, now)
			if err != nil {
				return err
			}
			var shown []pipeline.JobStatus
			for _, js := range jobs {
				if job == "" || js.Job == job || strings.HasPrefix(js.ID, job+".") {
					shown = append(shown, js)
				}
			}
			var corrupt []error
			for _, e := range bad {
				var ce *load.CorruptCheckpointError
				if job == "" || !errors.As(e, &ce) || ce.ID == job || strings.HasPrefix(ce.ID, job+".") {
					corrupt = append(corrupt, e)
				}
			}
			if job != "" && len(shown) == 0 && len(corrupt) == 0 {
				return fmt.Errorf("no job %q in %s: migrate with --job %s saves one", job, store.Where(), job)
			}
			dst := statusTarget{value: target, fromEnv: targetEnv}
			if format == "json" {
				err = writeStatusJSON(g.stdout, dst, store.Where(), now, shown, corrupt)
			} else {
				for _, js := range shown {
					writeStatusText(g.stdout, dst, now, js)
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
	cmd.Flags().StringVar(&target, "target", defaultTarget, "target: mongodb://host:port/db or a directory (env DENORM_TARGET)")
	cmd.Flags().StringVar(&job, "job", "", "show only this job")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
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
func resumeCommand(target statusTarget, c *load.Checkpoint) (cmd, note string) {
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

func writeStatusText(w io.Writer, target statusTarget, now time.Time, js pipeline.JobStatus) {
	part := ""
	if js.Partitions > 1 {
		part = fmt.Sprintf(" partition %d/%d", js.Partition, js.Partitions)
	}
	c := js.Checkpoint
	if c == nil { // starting: a lease, no checkpoint yet
		fmt.Fprintf(w, "job %s: %s; run by %s, last heartbeat %s\n", js.ID, js.State, holderText(js.Holder), ago(now, js.Holder.Heartbeat))
		return
	}
	fmt.Fprintf(w, "job %s%s: %s", c.Job, part, js.State)
	if js.State != pipeline.StateDone && c.Collection != "" {
		fmt.Fprintf(w, " at collection %s", c.Collection)
	}
	switch {
	case js.Percent != nil && js.State != pipeline.StateDone:
		fmt.Fprintf(w, ", %.1f%% (%d of about %d rows)", *js.Percent, js.Rows, js.Estimated)
	default:
		fmt.Fprintf(w, ", %d rows read", js.Rows)
	}
	if js.State == pipeline.StateRunning && js.Rate > 0 {
		fmt.Fprintf(w, ", %.0f rows/s", js.Rate)
		if js.ETA != nil {
			fmt.Fprintf(w, ", about %s left", *js.ETA)
		}
	}
	fmt.Fprintln(w)
	switch {
	case js.Holder != nil:
		fmt.Fprintf(w, "  run by %s, last heartbeat %s\n", holderText(js.Holder), ago(now, js.Holder.Heartbeat))
	case js.State == pipeline.StateStopped && js.Last != nil:
		fmt.Fprintf(w, "  no process runs it: last run by %s, last heartbeat %s\n", holderText(js.Last), ago(now, js.Last.Heartbeat))
	case js.State == pipeline.StateStopped:
		fmt.Fprintf(w, "  no process runs it\n")
	}
	fmt.Fprintf(w, "  last checkpoint %s; started %s; %d resumes; workers %d; denorm %s; mapping %s\n",
		ago(now, c.Updated), c.Started.Format(time.RFC3339), c.Resumes, c.Workers, c.Version, c.Mapping)
	fmt.Fprintf(w, "  %-20s %-8s %12s %12s %8s\n", "COLLECTION", "STATE", "ROWS READ", "DOCS WRITTEN", "FAILED")
	for _, cs := range js.Collections {
		fmt.Fprintf(w, "  %-20s %-8s %12d %12d %8d\n", cs.Name, cs.State, cs.Rows, cs.Written, cs.Failed)
	}
	next, note := resumeCommand(target, c)
	switch js.State {
	case pipeline.StateDone:
		fmt.Fprintf(w, "  next: nothing; the job is complete\n")
		note = ""
	case pipeline.StateRunning:
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
// only ever added; README.md lists them.
type statusJSON struct {
	SchemaVersion int       `json:"schemaVersion"`
	Target        string    `json:"target"`
	Store         string    `json:"store"`
	Generated     time.Time `json:"generated"`
	Jobs          []jobJSON `json:"jobs"`
	Errors        []string  `json:"errors"`
}

type jobJSON struct {
	ID            string            `json:"id"`
	Job           string            `json:"job"`
	Partition     int               `json:"partition"`
	Partitions    int               `json:"partitions"`
	State         string            `json:"state"`
	Collection    string            `json:"collection"`
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
	Next          string            `json:"next"`
}

type collectionJSON struct {
	Name          string `json:"name"`
	State         string `json:"state"`
	RowsRead      int64  `json:"rowsRead"`
	DocsWritten   int64  `json:"docsWritten"`
	Failed        int64  `json:"failed"`
	RowsEstimated int64  `json:"rowsEstimated"`
}

func writeStatusJSON(w io.Writer, target statusTarget, store string, now time.Time, jobs []pipeline.JobStatus, bad []error) error {
	out := statusJSON{SchemaVersion: 1, Target: connstr.Parse(target.value).Redacted(), Store: store, Generated: now.UTC(), Jobs: []jobJSON{}, Errors: []string{}}
	for _, js := range jobs {
		j := jobJSON{ID: js.ID, Job: js.Job, Partition: js.Partition, Partitions: js.Partitions, State: js.State,
			Holder: js.Holder, LastHolder: js.Last, RowsRead: js.Rows, DocsWritten: js.Written, Failed: js.Failed,
			Percent: js.Percent, Collections: []collectionJSON{}}
		if c := js.Checkpoint; c != nil {
			j.Started, j.Updated = &c.Started, &c.Updated
			if !c.RunStarted.IsZero() {
				j.RunStarted = &c.RunStarted
			}
			if js.State != pipeline.StateDone {
				j.Collection = c.Collection
			}
			j.Resumes, j.Workers, j.Version, j.Mapping = c.Resumes, c.Workers, c.Version, c.Mapping
			if js.State == pipeline.StateStopped {
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
