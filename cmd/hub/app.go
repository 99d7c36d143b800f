package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	_ "github.com/hubcli/hub/adapters/all" // registers every agent
	"github.com/hubcli/hub/events"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise
// it comes from the module's build information.
var version = ""

// Exit codes that belong to no bin (SPEC §4).
const (
	exitOK    = 0
	exitUsage = 2
)

// usageError is a mistake in hub's own command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// cancelledError is a command that a signal stopped before it started
// anything: exit status 130 (cancelled), its message printed.
type cancelledError struct{ msg string }

func (e cancelledError) Error() string { return e.msg }

// exitError carries a run's bin to exitCode.
type exitError struct{ err *events.Error }

func (e exitError) Error() string { return e.err.Error() }

// run is the whole program: it parses args, runs the command and returns the
// process exit status. It never calls os.Exit. Closing kill (nil: never)
// SIGKILLs a running agent's process group and descendants at once, without
// the grace period (main closes it at a second signal).
func run(ctx context.Context, kill <-chan struct{}, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	// A panic is a hub bug: exit internal (11), not Go's 2 (a usage error
	// to a wrapper). The run has already stopped the agent's tree.
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "hub: internal error, please report it: panic: %v\n%s", p, debug.Stack())
			code = events.BinInternal.ExitCode()
		}
	}()
	app := newApp(kill, stdin, stdout, stderr)
	err := helpTopicError(app, app.RunContext(ctx, args))
	code = exitCode(err)
	if err != nil && code == exitUsage {
		fmt.Fprintf(stderr, "hub: %v\n", err)
		fmt.Fprintln(stderr, "run `hub help` or `hub run --help` for usage")
	} else if err != nil && !isExitError(err) {
		fmt.Fprintf(stderr, "hub: %v\n", err)
	}
	return code
}

// exitCode is the one place that maps errors to exit statuses (SPEC §4).
func exitCode(err error) int {
	var ee exitError
	var ue usageError
	var se statusError
	var ce cancelledError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &se):
		return se.code
	case errors.As(err, &ce):
		return events.BinCancelled.ExitCode()
	case errors.As(err, &ee):
		return ee.err.Bin.ExitCode()
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, syscall.EPIPE):
		// The reader of hub's output went away (hub schema | head -1): it
		// wanted no more, as a Unix tool's reader that stops does.
		return exitOK
	default:
		// urfave/cli reports unknown commands as plain errors: usage
		// errors too. Anything else (a failed write of hub's own output)
		// is hub's own failure.
		if strings.Contains(err.Error(), "No help topic") || strings.Contains(err.Error(), "command not found") {
			return exitUsage
		}
		return events.BinInternal.ExitCode()
	}
}

// isExitError reports whether err's message has been told already: a
// run's bin (on its output) or a command's own exit status.
func isExitError(err error) bool {
	var ee exitError
	var se statusError
	return errors.As(err, &ee) || errors.As(err, &se) || errors.Is(err, syscall.EPIPE)
}

func newApp(kill <-chan struct{}, stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      "hub",
		Usage:     "run coding-agent CLIs with one normalized event stream, limits and error bins",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		// urfave/cli's default handler calls os.Exit inside Run, which would
		// skip the deferred kill of the agent's process group.
		ExitErrHandler:  func(*cli.Context, error) {},
		HideHelpCommand: false,
		// hub --version; hub alone prints the help; hub NAME for no command
		// NAME is a usage error (appAction).
		Flags:                 []cli.Flag{&cli.BoolFlag{Name: "version", Usage: "print hub's version, as hub version does"}},
		Action:                appAction,
		CustomAppHelpTemplate: appHelpTemplate(),
		// hub completion bash|zsh|fish: the scripts ask hub for the words.
		EnableBashCompletion: true,
		// A repeatable flag takes each value whole: urfave/cli would split
		// --env 'K={"a":1,"b":2}' at the comma.
		DisableSliceFlagSeparator: true,
		Commands: []*cli.Command{
			runCommand(kill),
			chatCommand(kill),
			batchCommand(kill),
			applyCommand(),
			acpCommand(kill),
			replayCommand(),
			agentsCommand(),
			doctorCommand(),
			configCommand(),
			schemaCommand(),
			completionCommand(),
			versionCommand(),
		},
		OnUsageError: usageErr,
	}
}

func schemaCommand() *cli.Command {
	return &cli.Command{
		Name:         "schema",
		Usage:        "print the JSON Schema (draft 2020-12) of hub's events",
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("%s takes no arguments, got %q", c.Command.Name, c.Args().Slice())
			}
			_, err := c.App.Writer.Write(events.Schema)
			return err
		},
	}
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:         "version",
		Usage:        "print hub's version",
		OnUsageError: usageErr,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "verbose", Usage: "also print the Go version, the platform and the code that scans JSON strings on this machine, with why it was chosen"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("%s takes no arguments, got %q", c.Command.Name, c.Args().Slice())
			}
			return printVersion(c.App.Writer, c.Bool("verbose"))
		},
	}
}

func hubVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
