// Command denorm migrates a normalized PostgreSQL database into a
// MongoDB-wire document store under a declarative mapping file.
//
// The command is thin: one file per subcommand holds its flags, its help
// and the wording of its messages and hints; run maps its errors to the
// exit codes below (one constant block). The work is done by pipeline's
// engines (for validate and advise, by mappings and extract directly).
//
// Exit codes:
//
//	0  success
//	1  runtime error (connection lost, target failure, ...)
//	2  bad usage or an invalid mapping file
//	3  finished, but some rows were rejected (see the summary)
//	4  verify could not complete (for verify, 1 means "different")
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/mappings"
)

// Exit codes: the only ones denorm returns (README.md, "Commands").
const (
	exitOK = 0
	// exitRuntime: a runtime error; for verify, the verdict "different".
	exitRuntime = 1
	// exitUsage: bad usage or an invalid mapping file.
	exitUsage = 2
	// exitRejected: the run finished, but some rows were rejected.
	exitRejected = 3
	// exitIncomplete: verify could not finish: a failure, not a verdict.
	exitIncomplete = 4
)

// usageError marks errors the user must fix in the command line.
type usageError struct{ error }

// rejectedError reports a run that finished with rejected rows.
type rejectedError struct{ n int64 }

func (e rejectedError) Error() string {
	return fmt.Sprintf("%d rows were rejected", e.n)
}

// globals are flags every command takes.
type globals struct {
	verbose bool
	quiet   bool
	stdout  io.Writer
	stderr  io.Writer
	log     *slog.Logger
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startProfile()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{stdout: stdout, stderr: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)

	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var (
		ue usageError
		re rejectedError
		ec interface{ ExitCode() int }
	)
	switch {
	case errors.As(err, &ec):
		fmt.Fprintf(stderr, "denorm: %v\n", err)
		return ec.ExitCode()
	case errors.As(err, &re):
		fmt.Fprintf(stderr, "denorm: %v\n", err)
		return exitRejected
	case mappings.IsProblems(err):
		fmt.Fprintln(stderr, err)
		return exitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "denorm: %v\nRun 'denorm --help' for usage.\n", err)
		return exitUsage
	case isUnknownCommand(err):
		fmt.Fprintf(stderr, "denorm: %v\nRun 'denorm --help' for usage.\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "denorm: %v\n", err)
		return exitRuntime
	}
}

const rootHelp = `denorm migrates a normalized PostgreSQL database into a MongoDB-wire
document store (MongoDB, FerretDB, Azure Cosmos DB for MongoDB, Amazon
DocumentDB), reshaping rows into self-contained documents as a declarative
mapping file says. 'denorm COMMAND --help' describes each command.

DENORM_SOURCE and DENORM_TARGET stand in for --source and --target (flags win).

Exit codes:
  0  success
  1  runtime error (for verify: the target differs)
  2  bad usage or an invalid mapping file
  3  finished, but some rows were rejected (see the summary)
  4  verify could not complete`

// newRootCmd is the command tree; `denorm man` and the tests walk it.
func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:               "denorm",
		Short:             "Migrate a normalized PostgreSQL database into self-contained MongoDB documents",
		Long:              rootHelp,
		SilenceUsage:      true,
		SilenceErrors:     true,
		DisableAutoGenTag: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if g.verbose && g.quiet {
				return usageError{errors.New("--verbose and --quiet exclude each other")}
			}
			level := slog.LevelInfo
			if g.verbose {
				level = slog.LevelDebug
			}
			if g.quiet {
				level = slog.LevelWarn
			}
			g.log = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
			return nil
		},
	}
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "debug logging on stderr")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "print nothing but the summary and errors")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	setVersion(root)
	root.AddCommand(newMigrateCmd(g), newValidateCmd(g), newVersionCmd(g), newManCmd())
	root.AddCommand(newPlanCmd(g), newAdviseCmd(g), newStatusCmd(g), newVerifyCmd(g), newSyncCmd(g))
	return root
}

func isUnknownCommand(err error) bool {
	s := err.Error()
	return len(s) > 16 && (s[:16] == "unknown command " || s[:15] == "unknown flag: -")
}

// fromEnv returns the flag's value, or the environment variable's when the
// flag was not given: flags > DENORM_* environment > defaults.
func fromEnv(cmd *cobra.Command, flag, env string) string {
	v, _ := cmd.Flags().GetString(flag)
	if cmd.Flags().Changed(flag) {
		return v
	}
	if e := os.Getenv(env); e != "" {
		return e
	}
	return v
}
