package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/load"
)

func newStatusCmd(g *globals) *cobra.Command {
	var target, job, source string
	cmd := &cobra.Command{
		Use:   "status --target TARGET [--job NAME] [--source URL]",
		Short: "Show the migration and sync jobs saved in a target: phase, progress, position, lag, what to run next",
		Long: `status lists every job whose checkpoints the target holds (see 'denorm migrate
--help', --job): its phase, the progress of each collection, the time of the last
checkpoint, and the command to run next. For a sync job (see 'denorm sync
--help') it shows the method, the position, the last pass, the lag at its end
and the totals; with --source (or DENORM_SOURCE), also the state of a logical
job's replication slot and how much WAL it has not confirmed yet. With --job,
only that job (and its partitions). A corrupt checkpoint is listed with its
error, and the exit code is then 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target = fromEnv(cmd, "target", "DENORM_TARGET")
			source = fromEnv(cmd, "source", "DENORM_SOURCE")
			targetEnv := !cmd.Flags().Changed("target") && os.Getenv("DENORM_TARGET") != ""
			if err := checkTarget(target); err != nil {
				return err
			}
			t, err := load.Open(cmd.Context(), target, load.Options{})
			if err != nil {
				return err
			}
			defer t.Close(cmd.Context())
			store := t.Checkpoints()
			cps, bad, err := store.List(cmd.Context())
			if err != nil {
				return err
			}
			w := g.stdout
			shown := 0
			for _, c := range cps {
				if job != "" && c.Job != job {
					continue
				}
				shown++
				part := ""
				if c.Partitions > 1 {
					part = fmt.Sprintf(" partition %d/%d", c.Partition, c.Partitions)
				}
				fmt.Fprintf(w, "job %s%s: %s", c.Job, part, c.Phase)
				if c.Phase == load.PhaseRunning && c.Collection != "" {
					fmt.Fprintf(w, " (at collection %s)", c.Collection)
				}
				fmt.Fprintf(w, "; last checkpoint %s (%s ago); started %s; %d resumes; workers %d; denorm %s; mapping %s\n",
					c.Updated.Format(time.RFC3339), time.Since(c.Updated).Round(time.Second), c.Started.Format(time.RFC3339), c.Resumes, c.Workers, c.Version, c.Mapping)
				type agg struct {
					rows, written, failed int64
					done, total           int
				}
				per := map[string]*agg{}
				var order []string
				for _, s := range c.Streams {
					a := per[s.Collection]
					if a == nil {
						a = &agg{}
						per[s.Collection] = a
						order = append(order, s.Collection)
					}
					a.rows, a.written, a.failed = a.rows+s.Rows, a.written+s.Written, a.failed+s.Failed
					a.total++
					if s.Done {
						a.done++
					}
				}
				fmt.Fprintf(w, "  %-20s %-8s %12s %12s %8s\n", "COLLECTION", "STATE", "ROWS READ", "DOCS WRITTEN", "FAILED")
				for _, name := range order {
					a := per[name]
					state := "pending"
					switch {
					case a.done == a.total:
						state = "done"
					case a.rows > 0 || name == c.Collection:
						state = "running"
					}
					fmt.Fprintf(w, "  %-20s %-8s %12d %12d %8d\n", name, state, a.rows, a.written, a.failed)
				}
				if c.Sync != nil {
					printSyncStatus(cmd.Context(), w, c, source)
					dst, note := connArg(target, targetEnv, "DENORM_TARGET", "--target URI")
					fmt.Fprintf(w, "  next: denorm sync --mapping %s --source \"$DENORM_SOURCE\" --target %s --job %s --method %s [--once|--every D|--follow]\n", shellQuote(c.Mapping), dst, shellQuote(c.Job), c.Sync.Method)
					if note != "" {
						fmt.Fprintf(w, "    (%s)\n", note)
					}
				} else if c.Phase == load.PhaseDone {
					fmt.Fprintf(w, "  next: nothing; the job is complete\n")
				} else {
					extra := ""
					if c.Partitions > 1 {
						extra = fmt.Sprintf(" --partition %d/%d", c.Partition, c.Partitions)
					}
					if c.Workers > 1 {
						extra += fmt.Sprintf(" --workers %d", c.Workers)
					}
					dst, note := connArg(target, targetEnv, "DENORM_TARGET", "--target URI")
					fmt.Fprintf(w, "  next: denorm migrate --mapping %s --source \"$DENORM_SOURCE\" --target %s --job %s%s --resume\n", shellQuote(c.Mapping), dst, shellQuote(c.Job), extra)
					if note != "" {
						fmt.Fprintf(w, "    (%s)\n", note)
					}
				}
			}
			corrupt := 0
			for _, e := range bad {
				var ce *load.CorruptCheckpointError
				if job != "" && errors.As(e, &ce) && ce.ID != job && !strings.HasPrefix(ce.ID, job+".") {
					continue
				}
				fmt.Fprintf(w, "%v\n", e)
				corrupt++
			}
			if corrupt > 0 {
				// Listed above with the rest; the exit code tells scripts.
				return fmt.Errorf("%d corrupt checkpoint(s) in %s: a job with one cannot resume; start it over with migrate --restart", corrupt, store.Where())
			}
			if shown == 0 {
				if job != "" {
					return fmt.Errorf("no job %q in %s: migrate with --job %s saves one", job, store.Where(), job)
				}
				fmt.Fprintf(w, "no jobs in %s\n", store.Where())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "target", defaultTarget, "target: mongodb://host:port/db or a directory (env DENORM_TARGET)")
	cmd.Flags().StringVar(&job, "job", "", "show only this job")
	cmd.Flags().StringVar(&source, "source", "", "source PostgreSQL URL (env DENORM_SOURCE): also show logical sync jobs' replication slots")
	return cmd
}

// printSyncStatus prints a sync job's state: method, position, last pass,
// lag and totals, and with a source its replication slot.
func printSyncStatus(ctx context.Context, w io.Writer, c *load.Checkpoint, source string) {
	s := c.Sync
	fmt.Fprintf(w, "  sync: method %s", s.Method)
	if s.Slot != "" {
		fmt.Fprintf(w, ", slot %s", s.Slot)
	}
	switch {
	case s.Method == load.SyncLogical && s.Position == "":
		fmt.Fprintf(w, ", slot being created")
	case s.Position != "":
		fmt.Fprintf(w, ", position %s", s.Position)
	}
	if c.Phase != load.PhaseDone {
		fmt.Fprintf(w, ", initial copy in progress")
	}
	fmt.Fprintln(w)
	if !s.LastPass.IsZero() {
		fmt.Fprintf(w, "  last pass: %s (%s ago), %d passes; lag at its end %s\n", s.LastPass.Format(time.RFC3339),
			time.Since(s.LastPass).Round(time.Second), s.Passes, (time.Duration(s.LagSeconds * float64(time.Second))).Round(time.Millisecond))
	}
	fmt.Fprintf(w, "  totals: %d rows changed; documents %d written, %d deleted, %d unchanged; %d collections rebuilt whole\n",
		s.Changes, s.Written, s.Deleted, s.Unchanged, s.Rebuilds)
	if s.Method != load.SyncLogical || source == "" {
		return
	}
	src, err := extract.ParseSource(source)
	var lg *extract.Logical
	if err == nil {
		lg, err = src.Logical(c.Job)
	}
	var st *extract.SlotStatus
	if err == nil {
		st, err = lg.Status(ctx)
	}
	if st != nil {
		active := "idle"
		if st.Active {
			active = fmt.Sprintf("streaming (server process %d)", st.ActivePID)
		}
		fmt.Fprintf(w, "  slot: %s, confirmed %s, server at %s: %d bytes of WAL behind; wal_status %s\n", active, st.Confirmed, st.Current, st.LagBytes, st.WALStatus)
	}
	if err != nil {
		fmt.Fprintf(w, "  slot: %v\n", connstr.Parse(source).RedactError(err))
	}
}
