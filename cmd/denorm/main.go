// Command denorm migrates a normalized PostgreSQL database into a
// MongoDB-wire document store under a declarative mapping file.
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

// Exit codes.
const (
	exitOK       = 0
	exitRuntime  = 1
	exitUsage    = 2
	exitRejected = 3
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

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
	root := &cobra.Command{
		Use:           "denorm",
		Short:         "Migrate a normalized PostgreSQL database into self-contained MongoDB documents",
		SilenceUsage:  true,
		SilenceErrors: true,
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
			g.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
			return nil
		},
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "debug logging on stderr")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "print nothing but the summary and errors")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newMigrateCmd(g), newValidateCmd(g), newVersionCmd(g))
	root.AddCommand(newPlanCmd(g), newAdviseCmd(g), newStatusCmd(g), newVerifyCmd(g))

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

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print denorm's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(g.stdout, "denorm %s (mapping format v%d)\n", version, mappings.CurrentVersion)
			return nil
		},
	}
}
