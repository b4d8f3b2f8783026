// Command amends runs and operates amends, the event-sourced
// failure-compensation engine on NATS JetStream.
//
// Subcommands live one per file; each keeps its help text beside its
// flags. Settings, not selections or confirmations, can also come from AMENDS_
// environment variables (see env.go). Exit codes: 0 success, 1 failure, 2 usage error (an
// unknown command or flag, a bad flag or environment value), 3 the server
// refused the credential (401), 4 what the command names does not exist.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/client"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitUnauthenticated: the server refused the credential (401: none,
	// unknown, expired or revoked), so that a script can tell "sign in
	// again" from any other failure. A credential without the role a
	// request needs (403) is a failure like any other.
	exitUnauthenticated = 3
	// exitNotFound: what the command names (a record, a hold, a circuit,
	// a rule, a replay, a sweep) does not exist, so that a script can tell
	// "no such thing" from a failure.
	exitNotFound = 4
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal starts a clean shutdown, a second one ends the
	// process at once.
	context.AfterFunc(ctx, stop)
	code := execute(ctx, &app{stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv, now: time.Now}, os.Args[1:])
	stop()
	os.Exit(code)
}

// app is what a run of the command line sees of the world: its output
// streams and environment, plus hooks for tests. Tests run the command line
// in-process with their own app.
type app struct {
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	// serveReady, when set, is called by serve once it is ready (tests).
	serveReady func(serveInfo)
	// now tells the time relative times are shown against (default time.Now).
	now func() time.Time

	// logger is built from --log-level before a subcommand runs.
	logger *slog.Logger
	// jsonLogs is set when logger writes JSON (--log-format json).
	jsonLogs bool
}

// execute runs the command line args and returns the process exit code.
// It prints errors to a.stderr.
func execute(ctx context.Context, a *app, args []string) int {
	// Records carry text from anywhere: nothing printed may move the
	// cursor, hide or reorder what follows (see safeWriter).
	a.stdout = &safeWriter{w: a.stdout}
	root := newRootCmd(a)
	root.SetArgs(append([]string{}, args...)) // never nil: nil makes cobra read os.Args
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ce *client.Error
	if ue := (usageError{}); errors.As(err, &ue) {
		code = exitUsage
	} else if ua := (unauthenticated{}); errors.As(err, &ua) || errors.As(err, &ce) && ce.Status == http.StatusUnauthorized {
		code = exitUnauthenticated
	} else if nf := (notFound{}); errors.As(err, &nf) || errors.As(err, &ce) && ce.Status == http.StatusNotFound && ce.Body.Code == "NotFound" ||
		errors.Is(err, archive.ErrNotFound) {
		code = exitNotFound
	}
	if a.jsonLogs {
		// With --log-format json every line of stderr is a JSON object.
		a.logger.Error("amends: "+err.Error(), "command", cmd.CommandPath(), "exit_code", code)
		return code
	}
	fmt.Fprintf(a.stderr, "amends: %s\n", escapeText(err.Error()))
	if code == exitUsage {
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

func newRootCmd(a *app) *cobra.Command {
	var logLevel, logFormat string
	root := &cobra.Command{
		Use:   "amends",
		Short: "An event-sourced failure-compensation engine on NATS JetStream",
		Long: `amends records handler executions that still fail after their in-process
retries as ExecutionFailed records, and replays the original event to only
the failed function until it succeeds. It never rolls anything back.

` + envHelp + `

Exit codes: 0 success, 1 failure, 2 usage error, 3 the server refused the
credential (401: none, unknown, expired or revoked; sign in or give another
token), 4 not found (the record, hold, circuit, rule, replay or entry the
command names does not exist).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), suggest(cmd, args[0]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(a.stderr, cmd.UsageString())
			return usageErrorf("a command is required")
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), a.lookupEnv); err != nil {
				return err
			}
			if err := checkOperatorText(cmd.Flags()); err != nil {
				return err
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageErrorf("--log-level %q: want debug, info, warn or error", logLevel)
			}
			opts := &slog.HandlerOptions{Level: level}
			switch logFormat {
			case "text":
				a.logger = slog.New(slog.NewTextHandler(a.stderr, opts))
			case "json":
				a.logger, a.jsonLogs = slog.New(slog.NewJSONHandler(a.stderr, opts)), true
			default:
				return usageErrorf("--log-format %q: want text or json", logFormat)
			}
			return nil
		},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format: text (key=value) or json (one object a line, for log shippers)")
	annotateEnv(root.PersistentFlags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{flagError(err)} })
	root.AddCommand(newServeCmd(a), newDemoCmd(a), newBenchCmd(a),
		newListCmd(a), newShowCmd(a), newHistoryCmd(a), newSummaryCmd(a), newQuarantineCmd(a), newHoldsCmd(a), newReplayCmd(a),
		newPrepareCmd(a), newForcePrepareCmd(a), newRetrySpecCmd(a), newMarkRecoverableCmd(a), newChangeFunctionCmd(a))
	root.AddCommand(newNotifyCmd(a))
	root.AddCommand(newRulesCmd(a))
	root.AddCommand(newTokenCmd(a), newAuditCmd(a), newRepairCmd(a))
	root.AddCommand(newCircuitsCmd(a), newDrainsCmd(a), newArchiveCmd(a))
	return root
}

// suggest returns cobra's "Did you mean" text for a mistyped command.
func suggest(cmd *cobra.Command, typed string) string {
	s := cmd.SuggestionsFor(typed)
	if len(s) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(s, " or ") + "?"
}

// usageError marks an error as the caller's misuse of the command line:
// it makes the process exit with code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// unauthenticated is the server's refusal of the credential (401), with
// the command line's message; it exits exitUnauthenticated.
type unauthenticated struct{ err error }

func (e unauthenticated) Error() string { return e.err.Error() }
func (e unauthenticated) Unwrap() error { return e.err }

// notFound is a command's "no such thing": what it names does not exist
// (the server's 404, or a lookup of the command's own); it exits
// exitNotFound.
type notFound struct{ err error }

func (e notFound) Error() string { return e.err.Error() }
func (e notFound) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}
