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
//	5  migrate or sync stopped by --max-rejects (resumable)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform/report"
)

// Exit codes: the only ones denorm returns (docs/commands.md, "Exit codes").
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
	// exitStopped: migrate or sync stopped once --max-rejects rows were
	// rejected, its checkpoint saved.
	exitStopped = 5
)

// usageError marks errors the user must fix in the command line.
type usageError struct{ error }

// rejectedError reports a run that finished with rejected rows.
type rejectedError struct{ n int64 }

func (e rejectedError) Error() string {
	return report.Plural(e.n, "row was", "rows were") + " rejected"
}

// globals are flags every command takes, and where output goes.
type globals struct {
	verbose   bool
	quiet     bool
	logFormat string
	stdout    io.Writer
	stderr    io.Writer

	mu  sync.Mutex // guards log
	log *slog.Logger
}

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ignoreFileSizeSignal()
	tuneGC()
	stopProfile := startProfile()
	stopMemStats := startMemStats()
	code := runSignals(context.Background(), os.Args[1:], os.Stdout, os.Stderr, sigs, func(code int) {
		stopMemStats()
		stopProfile()
		os.Exit(code)
	})
	stopMemStats()
	stopProfile()
	os.Exit(code)
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, &globals{stdout: stdout, stderr: newConsole(stderr), logFormat: logText}, args)
}

// execute runs the command line with g and maps its error to an exit
// code, writing the error (g.fail) with the command's usage hint.
func execute(ctx context.Context, g *globals, args []string) int {
	root := newRootCmd(g)
	root.SetArgs(args)
	// A command line cobra cannot read (an unknown command) leaves the
	// flags unparsed: the error must still come in the asked format.
	g.logFormat = logFormatArg(args, g.logFormat)

	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	err = explainRowSecurity(err)
	help := ""
	var ue usageError
	if errors.As(err, &ue) || isUnknownCommand(err) {
		help = "Run 'denorm --help' for usage."
		if cmd != nil && cmd != root {
			help = fmt.Sprintf("Run '%s --help' for usage.", cmd.CommandPath())
		}
	}
	g.fail(err, help)
	return exitCode(err)
}

// logFormatArg is the value of --log-format in args, or def.
func logFormatArg(args []string, def string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--log-format="); ok {
			def = v
		} else if a == "--log-format" && i+1 < len(args) {
			def = args[i+1]
		}
	}
	return def
}

// exitCode is the exit code of a command's error (nil: exitOK).
func exitCode(err error) int {
	var (
		ue usageError
		re rejectedError
		ec interface{ ExitCode() int }
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.As(err, &re):
		return exitRejected
	case mappings.IsProblems(err), errors.As(err, &ue), isUnknownCommand(err):
		return exitUsage
	}
	return exitRuntime
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
  4  verify could not complete
  5  stopped by --max-rejects N once N rows were rejected (migrate --resume
     continues a --job; sync continues where it stopped)`

// newRootCmd is the command tree; `denorm man` and the tests walk it.
func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:               "denorm",
		Short:             "Migrate a normalized PostgreSQL database into self-contained MongoDB documents",
		Long:              rootHelp,
		SilenceUsage:      true,
		SilenceErrors:     true,
		DisableAutoGenTag: true,
		PersistentPreRunE: func(*cobra.Command, []string) error { return g.setLogger() },
	}
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "debug logging on stderr")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "print nothing but the summary and errors")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", logText, "style of every message on stderr: text, or json (one JSON object a line)")
	root.SetFlagErrorFunc(flagError)
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
