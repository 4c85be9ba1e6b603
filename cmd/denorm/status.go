package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/load"
)

func newStatusCmd(g *globals) *cobra.Command {
	var target, job string
	cmd := &cobra.Command{
		Use:   "status --target TARGET [--job NAME]",
		Short: "Show the migration jobs saved in a target: phase, progress, what to run next",
		Long: `status lists every job whose checkpoints the target holds (see 'denorm migrate
--help', --job): its phase, the progress of each collection, the time of the last
checkpoint, and the command to run next. With --job, only that job (and its
partitions). A corrupt checkpoint is listed with its error, and the exit code
is then 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target = fromEnv(cmd, "target", "DENORM_TARGET")
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
				if c.Phase == load.PhaseDone {
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
	return cmd
}
