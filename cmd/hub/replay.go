package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/proc"
	"github.com/hubcli/hub/normalize"
)

func replayCommand() *cli.Command {
	return &cli.Command{
		Name:      "replay",
		Usage:     "normalize a saved raw transcript (from --raw-log) as a live run would",
		ArgsUsage: "FILE   (the agent's stdout, byte for byte; - for stdin)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Usage: "agent that wrote the transcript: " + strings.Join(adapters.Names(), ", ")},
			&cli.StringFlag{Name: "model", Usage: "model the run used (prices codex's tokens)"},
			&cli.IntFlag{Name: "exit-status", Usage: "the agent's exit status, for the outcome rules"},
			&cli.StringFlag{Name: "signal", Usage: "the signal that ended the agent (e.g. SIGTERM), instead of an exit status"},
			&cli.StringFlag{Name: "stderr", Usage: "a file with the agent's stderr, for the outcome rules"},
			&cli.StringFlag{Name: "output", Value: "jsonl", Usage: "text, jsonl or json"},
			&cli.StringFlag{Name: "prices", Usage: "JSON price table, as for hub run"},
			&cli.Float64Flag{Name: "max-cost", Usage: "replay stops where the cost goes above this, as a live run would"},
			&cli.Int64Flag{Name: "max-tokens", Usage: "likewise for tokens"},
			&cli.Int64Flag{Name: "max-turns", Usage: "likewise for model turns"},
			&cli.Int64Flag{Name: "max-tool-steps", Usage: "likewise for tool calls"},
			&cli.IntFlag{Name: "max-line", Usage: "longest line read, in bytes (0: 64 MiB)"},
		},
		// No `hub replay help` subcommand: "help" is a FILE like any other.
		HideHelpCommand: true,
		Action:          replayAction,
		OnUsageError:    usageErr,
	}
}

// replayAction runs hub.Replay on FILE: the same framing, decoder and
// outcome rules as hub run, given how the process ended (--exit-status or
// --signal, --stderr). Exit statuses are hub run's.
func replayAction(c *cli.Context) error {
	agent := c.String("agent")
	ad, err := adapters.Lookup(agent)
	if err != nil {
		return usagef("replay: --agent must be one of: %s", strings.Join(adapters.Names(), ", "))
	}
	if c.NArg() != 1 {
		return usagef("replay: want one transcript FILE (or -), got %d arguments", c.NArg())
	}
	output := c.String("output")
	if output != "text" && output != "jsonl" && output != "json" {
		return usagef("replay: --output must be text, jsonl or json, not %q", output)
	}
	var end normalize.End
	if sig := c.String("signal"); sig != "" {
		if c.IsSet("exit-status") {
			return usagef("replay: give --exit-status or --signal, not both")
		}
		if unix.SignalNum(strings.ToUpper(sig)) == 0 {
			return usagef("replay: --signal %q is not a signal name such as SIGTERM", sig)
		}
		end.Signal = strings.ToUpper(sig)
	} else {
		code := c.Int("exit-status")
		end.ExitCode = &code
	}
	if path := c.String("stderr"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return usagef("replay: --stderr: %v", err)
		}
		end.Stderr = string(b)
	}
	if c.Int("max-line") < 0 {
		return usagef("replay: --max-line must not be negative")
	}
	in := c.App.Reader
	if name := c.Args().First(); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return usagef("replay: %v", err)
		}
		defer f.Close()
		in = f
	} else if f, ok := in.(*os.File); ok {
		proc.GrowPipe(f) // a pipe of 1 MiB: fewer turns with the writer (issue 22)
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			in = newStdinReader(c.Context, f)
		}
	}
	req := hub.Request{
		Agent:   agent,
		Model:   c.String("model"),
		MaxLine: c.Int("max-line"),
		Limits: budget.Limits{
			MaxCostUSD:   c.Float64("max-cost"),
			MaxTokens:    c.Int64("max-tokens"),
			MaxTurns:     c.Int64("max-turns"),
			MaxToolSteps: c.Int64("max-tool-steps"),
		},
	}
	if !ad.Info().ReportsCost || c.IsSet("prices") {
		if req.Prices, err = loadPrices(c.String("prices")); err != nil {
			return usagef("replay: %v", err)
		}
	}
	// Events are written in batches: the output is flushed each time
	// replay is about to read more input (when it could block on a pipe),
	// and at the end.
	out := bufio.NewWriterSize(c.App.Writer, 64<<10)
	// Text output is coloured as hub run's is; a replay takes no time to
	// show a status line for, and its stdout is buffered, so a stderr line
	// cannot know where the answer's line stands.
	con := newConsole(c.App.Writer, c.App.ErrWriter, "auto", os.Getenv)
	con.status, con.shared = false, false
	sink, done, text := outputSink(output, false, con, out, c.App.ErrWriter)
	defer text.close()
	err = done(hub.Replay(c.Context, req, flushFirst{in, out}, end, sink))
	if ferr := out.Flush(); ferr != nil && err == nil {
		e := events.NewError(events.BinInternal, "", "check where hub's output goes", "writing the events: %v", ferr)
		fmt.Fprintf(c.App.ErrWriter, "hub: %s: %s (next: %s)\n", binReason(e), e.Message, e.Hint)
		err = exitError{e}
	}
	return err
}

// flushFirst flushes w before each read from r, so that what was written
// for the input read so far goes out before replay waits for more.
type flushFirst struct {
	r io.Reader
	w *bufio.Writer
}

func (f flushFirst) Read(p []byte) (int, error) {
	if err := f.w.Flush(); err != nil {
		return 0, err
	}
	return f.r.Read(p)
}

// stdinReader reads hub replay's stdin, when it is a pipe or a terminal, on
// a goroutine of its own, so that a SIGINT or SIGTERM while hub waits for
// input ends the replay at once with its run.finished (cancelled/caller),
// not when the writer next writes or closes. Such a read cannot be
// interrupted: the goroutine is left blocked in it, and hub exits (as
// loadConfig leaves a FIFO's read). The bytes go through a buffer of its
// own, as a read given up on must not write into the caller's p later.
type stdinReader struct {
	ctx context.Context
	req chan int // the size of the next read, to the goroutine
	res chan stdinRead
	buf []byte
	err error // the read error or ctx's cause: returned from then on
}

type stdinRead struct {
	n   int
	err error
}

func newStdinReader(ctx context.Context, r io.Reader) *stdinReader {
	s := &stdinReader{ctx: ctx, req: make(chan int), res: make(chan stdinRead, 1), buf: make([]byte, 1<<20)}
	go func() {
		for n := range s.req {
			k, err := r.Read(s.buf[:n])
			s.res <- stdinRead{k, err}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *stdinReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	select {
	case s.req <- min(len(p), len(s.buf)):
	case <-s.ctx.Done():
		s.err = context.Cause(s.ctx)
		return 0, s.err
	}
	select {
	case r := <-s.res:
		s.err = r.err
		return copy(p, s.buf[:r.n]), r.err
	case <-s.ctx.Done():
		s.err = context.Cause(s.ctx)
		return 0, s.err
	}
}
