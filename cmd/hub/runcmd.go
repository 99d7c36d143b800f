package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/sandbox"
	"github.com/hubcli/hub/statusfile"
)

// runCommand is `hub run`. kill is passed to every run (hub.WithKill).
func runCommand(kill <-chan struct{}) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run an agent on a prompt, or on a session's prompts (--session-in)",
		ArgsUsage: "[--] PROMPT   (or - to read the prompt from stdin, or --prompt-file F; after --, - is the prompt \"-\")",
		Description: "Flags go before the prompt; a flag after it is a usage error, unless the prompt follows --.\n" +
			"Durations (--timeout, --idle-timeout, --grace, --linger, --finalize-timeout, --turn-timeout, --session-idle) and the\n" +
			"--max-cost, --max-tokens, --max-turns and --max-tool-steps limits: 0 means none; a flag left unset keeps its default.\n" +
			"\n" +
			"--session-in FILE (- for stdin) runs a session of many turns in one agent: one JSON object a line, {\"prompt\":\"…\"}\n" +
			"(the next turn) or {\"interrupt\":true} (stops the last prompt's turn, or drops that prompt if its turn has not\n" +
			"begun); a prompt given as well is the first turn; the input's end ends the session after its turns. A bad line\n" +
			"ends the session at once, invalid_input/bad_request naming the line. The limits hold for the whole session;\n" +
			"hub exits with the session's run.finished status. See also hub chat.",
		Flags: runFlags(),
		// No `hub run help` subcommand: "help" is a prompt like any other.
		HideHelpCommand: true,
		Action:          runAction(kill),
		OnUsageError:    usageErr,
		// EXAMPLES and EXIT STATUS sections (conventions.go).
		CustomHelpTemplate: runHelpTemplate(),
	}
}

// runFlags are hub run's flags. Every duration, and every limit but
// --max-line, means none at 0; an unset one keeps its default (urfave/cli
// shows it in the help).
func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "agent", Usage: "agent to run: " + strings.Join(adapters.Names(), ", "), EnvVars: []string{"HUB_AGENT"}},
		&cli.StringFlag{Name: "model", Usage: "model, in the agent's own naming (opencode: provider/model)", EnvVars: []string{"HUB_MODEL"}},
		&cli.StringFlag{Name: "cwd", TakesFile: true, Usage: "working directory of the agent", EnvVars: []string{"HUB_CWD"}},
		&cli.StringFlag{Name: "resume", Usage: "session id to resume (from run.finished.session_id)"},
		&cli.DurationFlag{Name: "timeout", Usage: "wall-clock limit for the whole run (0 = none)", EnvVars: []string{"HUB_TIMEOUT"}},
		&cli.DurationFlag{Name: "idle-timeout", Usage: "stop when the agent writes nothing on stdout for this long (0 = none)", EnvVars: []string{"HUB_IDLE_TIMEOUT"}},
		&cli.Float64Flag{Name: "max-cost", Usage: "stop when the observed total cost goes above this many USD (reported, or estimated from the price table; 0 = none)", EnvVars: []string{"HUB_MAX_COST"}},
		&cli.Int64Flag{Name: "max-tokens", Usage: "stop when total tokens (input, output, cache read and write) go above this (0 = none)", EnvVars: []string{"HUB_MAX_TOKENS"}},
		&cli.Int64Flag{Name: "max-turns", Usage: "stop at the model turn after this many (0 = none)", EnvVars: []string{"HUB_MAX_TURNS"}},
		&cli.Int64Flag{Name: "max-tool-steps", Usage: "stop at the tool call after this many (0 = none)", EnvVars: []string{"HUB_MAX_TOOL_STEPS"}},
		&cli.DurationFlag{Name: "finalize-timeout", Value: budget.DefaultFinalize, Usage: "after --max-tool-steps stops a run, resume its session once, tools off, for a final answer within this time (0 = none: no resume)", EnvVars: []string{"HUB_FINALIZE_TIMEOUT"}},
		&cli.IntFlag{Name: "agent-retries", Value: -1, Usage: "retries of a failed model call the agent may make: set in the CLI where it has a setting (claude; codex for a provider its config.toml defines), and hub stops the run at the retry notice after them (pi: its SDK's hidden retries are not seen; opencode: not bounded, it reports no retries) (-1 = the agent's default)", EnvVars: []string{"HUB_AGENT_RETRIES"}},
		&cli.DurationFlag{Name: "grace", Value: budget.DefaultGrace, Usage: "time between SIGTERM and SIGKILL to the agent's process group (0 = none: SIGKILL right after SIGTERM)", EnvVars: []string{"HUB_GRACE"}},
		&cli.DurationFlag{Name: "linger", Value: budget.DefaultLinger, Usage: "after the agent's terminal event, how long to wait for it to exit before killing it (0 = none: stop it at its terminal event)", EnvVars: []string{"HUB_LINGER"}},
		&cli.StringFlag{Name: "output", Value: "text", Usage: "text (for people), jsonl (every event), json (only run.finished) or answer (only the answer: with --schema its JSON value on one line, else the final text; failures on stderr)", EnvVars: []string{"HUB_OUTPUT"}},
		&cli.StringFlag{Name: "schema", TakesFile: true, Usage: "JSON Schema (draft 2020-12) file the answer must match: one JSON value, bare or in one ```json block; run.finished.structured holds it", EnvVars: []string{"HUB_SCHEMA"}},
		&cli.IntFlag{Name: "schema-retries", Value: hub.DefaultSchemaRetries, Usage: "times to resume the session of an answer that does not match --schema, with what is wrong (0 = none)", EnvVars: []string{"HUB_SCHEMA_RETRIES"}},
		&cli.StringFlag{Name: "system-prompt", Usage: "replace the agent's own system prompt with TEXT, or with the text of @FILE (UTF-8, at most 1 MiB; @@ for a text starting with @); given to the CLI through a file hub writes and removes (claude keeps its one-line identity block; not for ACP agents)", EnvVars: []string{"HUB_SYSTEM_PROMPT"}},
		&cli.StringFlag{Name: "append-system-prompt", Usage: "add TEXT, or the text of @FILE, after the agent's system prompt (or --system-prompt's); as --system-prompt", EnvVars: []string{"HUB_APPEND_SYSTEM_PROMPT"}},
		&cli.StringFlag{Name: "status-file", TakesFile: true, Usage: "keep the run's latest state in this file (run id, seq, tokens, cost, the running tool), rewritten atomically as the run goes and ending as its run.finished object: for programs that watch a file"},
		&cli.StringFlag{Name: "raw-log", TakesFile: true, Usage: "write the agent's own stdout, byte for byte, to this file: always a new file, mode 0600 (an existing one is replaced); a symbolic link is refused"},
		&cli.StringFlag{Name: "bin", TakesFile: true, Usage: "the agent binary: a path, or a name looked up in PATH", EnvVars: []string{"HUB_BIN"}},
		&cli.StringFlag{Name: "acp-command", Usage: `with --agent acp: the ACP agent's command line, split as a shell would ("opencode acp", "npx @zed-industries/claude-agent-acp")`, EnvVars: []string{"HUB_ACP_COMMAND"}},
		&cli.StringFlag{Name: "prompt-file", TakesFile: true, Usage: "read the prompt from this file (at most 16 MiB; --timeout and Ctrl-C stop the read, as they do a prompt read from stdin with -)"},
		&cli.StringSliceFlag{Name: "file", KeepSpace: true, TakesFile: true, Usage: "a read-only context file for the agent (repeatable): UTF-8 text of at most 8 MiB, a path relative to hub's working directory (not --cwd), inside or outside --cwd; hub inlines it whole ahead of the prompt, for every agent (a session's first turn only), and refuses before start what would not fit (invalid_input), never cutting it"},
		&cli.StringFlag{Name: "session-in", TakesFile: true, Usage: `run a session of many turns in one agent: read its prompts from this file (- for stdin), one JSON object a line, {"prompt":"…"} or {"interrupt":true}; a prompt given as well is the first turn; the end of the input ends the session`},
		&cli.DurationFlag{Name: "turn-timeout", Usage: "in a session (--session-in, hub chat, hub acp): interrupt a turn still running after this long; the session goes on (0 = none)", EnvVars: []string{"HUB_TURN_TIMEOUT"}},
		&cli.DurationFlag{Name: "session-idle", Value: hub.DefaultSessionIdle, Usage: "in a session (--session-in, hub chat, hub acp): end it when no turn has run for this long (0 = never)", EnvVars: []string{"HUB_SESSION_IDLE"}},
		// KeepSpace: a value is taken whole (the app disables the comma split).
		&cli.StringSliceFlag{Name: "env", KeepSpace: true, Usage: "K=V to add to the agent's environment (repeatable; each value whole, commas and spaces included)"},
		&cli.BoolFlag{Name: "no-fail-fast", Usage: "let the agent keep retrying errors that retrying cannot fix (HTTP 401/403) instead of stopping it at once"},
		&cli.StringFlag{Name: "permission", Value: string(grant.ReadOnly), Usage: "what the agent may do: none (no tool), read-only (read and search the working tree), workspace-write (change files under --cwd, nothing outside it) or full (anything; needs --confirm or --yes); a level the agent cannot be held to is refused", EnvVars: []string{"HUB_PERMISSION"}},
		&cli.StringFlag{Name: "approve", Usage: "ask before each tool call the --permission level does not allow, while the agent waits: tty (on the terminal: y once, a always for this tool, n no, q stop the run, then Enter; in hub chat the key alone), deny (the agent is told no and goes on), fail (stop the run: permission_denied/tool_denied); hub acp: editor (the ACP client is asked). claude, codex, opencode, pi and ACP agents can ask; others are refused", EnvVars: []string{"HUB_APPROVE"}},
		&cli.BoolFlag{Name: "confirm", Usage: "show what is about to be granted and ask for a y on the terminal (/dev/tty) before anything starts; refused without a terminal"},
		&cli.BoolFlag{Name: "yes", Usage: "approve the grant without asking (what --permission full needs in scripts and CI)"},
		&cli.StringFlag{Name: "auth", Value: string(grant.AuthInherit), Usage: "inherit (the agent keeps the API keys in hub's environment) or login (billed API keys are removed, so the CLI's saved login is used)", EnvVars: []string{"HUB_AUTH"}},
		&cli.StringFlag{Name: "prices", TakesFile: true, Usage: "JSON price table (USD per million tokens) for agents that report no cost, on top of hub's own and ~/.config/" + budget.UserPricesFile, EnvVars: []string{"HUB_PRICES"}},
		&cli.StringFlag{Name: "sandbox", Value: string(sandbox.None), Usage: "none, copy (the agent works in a copy of --cwd) or worktree (in a git worktree at HEAD with your uncommitted and untracked files): the original is left as it was, the change is reported (file.changed, run.finished.diff) and applied only with --apply", EnvVars: []string{"HUB_SANDBOX"}},
		&cli.StringSliceFlag{Name: "protect", KeepSpace: true, Usage: "glob of paths (relative to the sandbox's root; *, **, ?, [..], {a,b}) the agent may not change: a change to one fails the run (permission_denied/protected_path) and nothing is applied; .git is always protected (repeatable; with --sandbox)"},
		&cli.BoolFlag{Name: "apply", Usage: "after an ok sandboxed run, apply the change to the original: all or nothing, only if every path it touches is as it was when the sandbox was made (else invalid_input/conflict); with --confirm the diff is shown and a y asked first"},
		&cli.StringFlag{Name: "diff-out", TakesFile: true, Usage: "write the sandboxed run's whole change to this file as a git-style diff (for git apply or hub apply): a new file, mode 0600, not redacted"},
		&cli.BoolFlag{Name: "keep-sandbox", Usage: "keep the sandbox after the run, and say where (a sandbox_kept notice)"},
		&cli.StringFlag{Name: "color", Value: "auto", Usage: "colour in text output: auto (on when stderr is a terminal, off when NO_COLOR is set or TERM=dumb), always or never", EnvVars: []string{"HUB_COLOR"}},
		&cli.IntFlag{Name: "max-line", Value: hub.DefaultMaxLine, Usage: "longest stdout line read, in bytes; longer lines are skipped with a notice", EnvVars: []string{"HUB_MAX_LINE"}},
		&cli.BoolFlag{Name: "tty", Usage: "run the agent on a pseudo-terminal (its stdout and stderr are terminals, 400 columns wide; stdin is not), for CLIs or builds that behave differently without one; same framing, limits and kills", EnvVars: []string{"HUB_TTY"}},
	}
}

// usageErr turns a flag parsing error into a usage error (exit 2) without
// printing help on stdout, where a jsonl consumer reads. Flags are named
// as typed (--timeout) and a duration without a unit says to add one
// (flagMessage).
func usageErr(c *cli.Context, err error, _ bool) error {
	msg := flagMessage(c, err)
	if c.Command != nil && c.Command.Name == "run" && strings.Contains(msg, "flag provided but not defined") {
		msg += " (flags go before the prompt; put a prompt that starts with - after --)"
	}
	return usageError{msg}
}

// loadPrices is hub's price table, then the user's file in the config
// directory if there is one, then flag (--prices), each overriding the last.
func loadPrices(flag string) (*budget.PriceTable, error) {
	var user string
	if dir, err := os.UserConfigDir(); err == nil {
		if p := filepath.Join(dir, budget.UserPricesFile); fileExists(p) {
			user = p
		}
	}
	return budget.LoadPrices(user, flag)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// runAction is hub run: options from the flags, a checked plan, then the run.
func runAction(kill <-chan struct{}) cli.ActionFunc {
	return func(c *cli.Context) error {
		o, err := configuredRunOptions(c) // the flags, with config.toml's defaults
		if err != nil {
			return err
		}
		p, err := o.plan()
		if err != nil {
			return err
		}
		ctx := c.Context
		if err := p.load(ctx, c.App.Reader); err != nil {
			var stop stopBeforeStart
			if !errors.As(err, &stop) {
				return err
			}
			// Reported as a run (run.started, run.finished, the bin's
			// exit status): the run is given a context already done
			// with the cause, and starts no agent.
			var cancel context.CancelCauseFunc
			ctx, cancel = context.WithCancelCause(ctx)
			cancel(stop.cause)
		}
		if p.warning != "" {
			fmt.Fprintf(c.App.ErrWriter, "hub: warning: %s\n", p.warning)
		}
		if p.session {
			return executeSession(ctx, p, kill, c.App.Reader, c.App.Writer, c.App.ErrWriter)
		}
		return execute(ctx, p, kill, c.App.Writer, c.App.ErrWriter)
	}
}

// execute runs p's request, printing its events on stdout and stderr as
// --output says, and returns the run's exit error.
func execute(ctx context.Context, p runPlan, kill <-chan struct{}, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	o := openOutput(ctx, cancel, p, true, stdout, stderr)
	defer o.close()
	// A question on the terminal (--confirm) is asked with the status
	// line off.
	opts := []hub.Option{hub.WithKill(kill), hub.WithFlush(o.out.Flush), hub.WithConfirm(func(ctx context.Context, req hub.Request, g grant.Rule) error {
		return o.text.quiet(func() error { return p.approval.check(ctx, req, g) })
	})}
	fo := p.fileOptions()
	defer fo.close()
	opts = append(opts, fo.opts...)
	if p.approve != "" {
		opts = append(opts, hub.WithApprover(p.approver(o.text)))
	}
	if p.req.Apply && p.approval.confirm {
		opts = append(opts, hub.WithApprove(func(ctx context.Context, diff []byte, files []events.FileChanged) error {
			_ = o.out.Flush() // what the change is, before hub waits for a person; an error is told at the end
			return o.text.quiet(func() error { return p.approval.approveChange(ctx, diff, files) })
		}))
	}
	// Every process hub starts runs below a guard that holds its tree. As a
	// child subreaper hub also gets what escapes a guard (an agent or a
	// version command that SIGKILLs its guard) and kills it, with the run
	// and before exiting.
	if err := hub.BecomeSubreaper(); err == nil {
		opts = append(opts, hub.WithOrphans())
		defer hub.ReapOrphans()
	}
	return o.finish(hub.Run(ctx, p.req, o.sink, opts...), fo)
}

// runOutput is where a run's events go, as --output says: hub's stdout
// and stderr behind stall guards (a consumer that stops reading must not
// hold hub past the run's end), the sink that renders each event, and
// the text printer for --output text (nil for the others).
type runOutput struct {
	out, errOut *stallGuard
	sink        hub.Sink
	text        *textPrinter
	done        func(events.RunFinished) error // outputSink's
	closed      func() bool                    // watchClosed's
	stopWatch   func()
}

// openOutput sets up p's output on stdout and stderr for a run under ctx:
// cancel stops the run when hub's stdout is closed by its reader. With
// batchOK, jsonl's events (and text's answer, unless stdout and stderr are
// one file) are written in batches, each time the run is about to wait
// for the agent (hub.WithFlush on out.Flush) and at the end; a session,
// whose events come through its turns, writes each as it comes.
func openOutput(ctx context.Context, cancel context.CancelCauseFunc, p runPlan, batchOK bool, stdout, stderr io.Writer) *runOutput {
	closed := watchClosed(stdout, func() {
		cancel(events.NewError(events.BinInternal, "", "check the consumer of hub's output",
			"hub's stdout was closed by its reader; the agent was stopped"))
	})
	// Not on stdout, nor on stderr, where --output text writes tool lines
	// and the summary (a wrapper that pipes stderr and never reads it).
	giveUp, stopWatch := giveUpAfter(ctx, p.req.Limits.Timeout, p.req.Limits.GraceOrDefault())
	// What the terminal is, from the files themselves, before they are
	// wrapped.
	con := newConsole(stdout, stderr, p.color, os.Getenv)
	// A write on stderr first writes out what stdout holds: a line on one
	// never comes before what was written on the other ahead of it.
	batch := batchOK && (p.output == "jsonl" || p.output == "text" && !con.shared)
	o := &runOutput{out: &stallGuard{w: stdout, giveUp: giveUp, batch: batch}, closed: closed, stopWatch: stopWatch}
	o.errOut = &stallGuard{w: stderr, giveUp: giveUp, first: o.out}
	o.sink, o.done, o.text = outputSink(p.output, p.req.Schema != nil, con, o.out, o.errOut)
	if st := p.status; st != nil {
		sink := o.sink
		o.sink = func(ev events.Event) error {
			_ = st.Observe(ev) // its error is told at the end: the run goes on
			return sink(ev)
		}
	}
	return o
}

// finish ends the output of a run that returned fin: the status line
// cleared, the last events written out, what fo's files lack told; it
// returns the run's exit error.
func (o *runOutput) finish(fin events.RunFinished, fo runFiles) error {
	o.text.close()
	ferr := o.out.Flush() // the run's last events, run.finished among them
	o.closed()
	fo.report(o.errOut)
	err := o.done(fin)
	if ferr != nil && err == nil {
		// The run went well but its consumer did not get all of it.
		e := events.NewError(events.BinInternal, "", "check the consumer of hub's output", "writing the events: %v", ferr)
		fmt.Fprintf(o.errOut, "hub: %s: %s (next: %s)\n", binReason(e), e.Message, e.Hint)
		err = exitError{e}
	}
	return err
}

// close releases what openOutput set up; safe after finish, and without it.
func (o *runOutput) close() {
	o.text.close()
	o.errOut.close()
	o.out.close()
	o.closed()
	o.stopWatch()
}

// runFiles are a run's options for the files load opened (--diff-out,
// --raw-log) and --status-file: report says on stderr which of them is
// incomplete after the run; close closes them.
type runFiles struct {
	opts            []hub.Option
	diffOut, rawLog *errWriter
	status          *statusfile.Writer
	files           []*os.File
}

func (p *runPlan) fileOptions() runFiles {
	var fo runFiles
	if f := p.diffOutFile; f != nil { // opened by load
		fo.files = append(fo.files, f)
		fo.diffOut = &errWriter{w: f}
		fo.opts = append(fo.opts, hub.WithDiff(func(diff []byte) { _, _ = fo.diffOut.Write(diff) }))
	}
	if f := p.rawLogFile; f != nil { // opened by load (openRawLog)
		fo.files = append(fo.files, f)
		fo.rawLog = &errWriter{w: f}
		fo.opts = append(fo.opts, hub.WithRawLog(fo.rawLog))
	}
	fo.status = p.status
	return fo
}

func (fo runFiles) report(stderr io.Writer) {
	if fo.rawLog != nil && fo.rawLog.err != nil {
		fmt.Fprintf(stderr, "hub: --raw-log is incomplete: %v\n", fo.rawLog.err)
	}
	if fo.diffOut != nil && fo.diffOut.err != nil {
		fmt.Fprintf(stderr, "hub: --diff-out is incomplete: %v\n", fo.diffOut.err)
	}
	if fo.status != nil && fo.status.Err() != nil {
		fmt.Fprintf(stderr, "hub: --status-file is not up to date: %v\n", fo.status.Err())
	}
}

func (fo runFiles) close() {
	for _, f := range fo.files {
		f.Close()
	}
}

// outputSink is the sink for --output (text, jsonl, json or answer; text
// with structured prints the --schema value as the answer, and con says
// whether it draws a status line and colours), the function to call with
// the run's result: it prints run.finished for json, one line on stderr
// for a failed run in jsonl and json (the person reading a CI log), and
// returns the exit error of a failed run, and text output's printer (nil
// for the other outputs; its close and quiet take a nil printer).
func outputSink(output string, structured bool, con console, stdout, stderr io.Writer) (hub.Sink, func(events.RunFinished) error, *textPrinter) {
	var sink hub.Sink
	var tp *textPrinter
	switch output {
	case "jsonl":
		sink = events.NewEncoder(stdout).Encode
	case "json", "answer":
		sink = func(events.Event) error { return nil }
	default:
		tp = newTextPrinter(stdout, stderr, structured, con)
		sink = tp.print
	}
	var last events.Event
	keep := func(ev events.Event) error {
		if ev.Type() == events.TypeRunFinished {
			last = ev
		}
		return sink(ev)
	}
	done := func(fin events.RunFinished) error {
		if output == "json" {
			if err := events.NewEncoder(stdout).Encode(last); err != nil {
				fin.OK = false
				fin.Error = events.NewError(events.BinInternal, "", "check where hub's output goes", "writing run.finished: %v", err)
			}
		}
		if output == "answer" && fin.OK {
			if err := printAnswer(stdout, fin); err != nil {
				fin.OK = false
				fin.Error = events.NewError(events.BinInternal, "", "check where hub's output goes", "writing the answer: %v", err)
			}
		}
		if fin.OK {
			return nil
		}
		if output != "text" {
			fmt.Fprintf(stderr, "hub: %s: %s (next: %s)\n", binReason(fin.Error), fin.Error.Message, fin.Error.Hint)
		}
		return exitError{fin.Error}
	}
	return keep, done, tp
}

// printAnswer writes an ok run's answer for --output answer: the
// structured value on one line with --schema, else the final text, ending
// in a newline.
func printAnswer(w io.Writer, fin events.RunFinished) error {
	out := fin.Text
	if fin.Structured != nil {
		out = string(events.EscapeLineSeparators(fin.Structured))
	}
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	_, err := io.WriteString(w, out)
	return err
}

// errWriter remembers its writer's first error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// watchClosed calls onClose once when w is a pipe or socket whose reading
// end has been closed (poll reports POLLERR or POLLHUP), so that a consumer
// that went away stops the run even while hub has nothing to write. The returned
// func reports whether that happened, and stops watching.
func watchClosed(w io.Writer, onClose func()) func() bool {
	f, ok := w.(*os.File)
	if !ok || !isPipe(f) {
		return func() bool { return false }
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return func() bool { return false }
	}
	var fd int
	_ = rc.Control(func(p uintptr) { fd = int(p) })
	var closed atomic.Bool
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			pfd := []unix.PollFd{{Fd: int32(fd), Events: 0}}
			n, err := unix.Poll(pfd, 200)
			if err == nil && n > 0 && pfd[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				closed.Store(true)
				onClose()
				return
			}
		}
	}()
	return func() bool {
		select {
		case <-done:
		default:
			close(done)
		}
		return closed.Load()
	}
}
