package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/turns"
)

// chatCommand is `hub chat`: a conversation with an agent on the terminal,
// each line typed the next turn of one session. kill is passed to the
// session (hub.WithKill).
func chatCommand(kill <-chan struct{}) *cli.Command {
	return &cli.Command{
		Name:      "chat",
		Usage:     "talk with an agent on the terminal: one session, each line you type a turn",
		ArgsUsage: "[--] [FIRST PROMPT]",
		Description: "Starts one session of --agent (one agent process where the CLI can hold one) and reads prompts from the\n" +
			"terminal, with line editing and history (up and down). Each prompt is a turn: the answer streams as hub run's\n" +
			"text output does, with the status line while it runs and a line for how the turn ended. A prompt given on\n" +
			"the command line is the first turn. Pasted lines are held until Enter.\n" +
			"\n" +
			"   Ctrl-C      interrupts the running turn (the session goes on); at the prompt it clears the line\n" +
			"   Ctrl-C      again at an empty prompt, after an interrupt or a first Ctrl-C there: ends the session\n" +
			"   Ctrl-D      at an empty prompt: ends the session\n" +
			"\n" +
			"The session's totals are shown at the end, and hub exits with its run.finished's status. Takes hub run's flags\n" +
			"and config file; the limits hold for the whole session (--turn-timeout for each turn, --session-idle for the\n" +
			"wait at the prompt). --output (always text), --prompt-file, --session-in, --schema and --sandbox do not apply.\n" +
			"Without a terminal on stdin it refuses (exit 2): a script sends its prompts with hub run --session-in -.",
		Flags:              runFlags(),
		HideHelpCommand:    true,
		Action:             chatAction(kill),
		OnUsageError:       usageErr,
		CustomHelpTemplate: cli.CommandHelpTemplate + helpSections(chatExamples),
	}
}

const chatExamples = `   hub chat --agent claude
   hub chat --agent pi --model anthropic/claude-haiku-4-5 "read main.go"
   hub chat --agent claude --max-cost 1 --turn-timeout 10m --permission workspace-write
`

// chatAction is hub chat: the flags and the config file, checked as hub
// run checks them, then the conversation on the terminal.
func chatAction(kill <-chan struct{}) cli.ActionFunc {
	return func(c *cli.Context) error {
		o, err := configuredRunOptions(c)
		if err != nil {
			return err
		}
		p, err := chatPlan(o, commandLineFlags(commandTail(c))["output"])
		if err != nil {
			return err
		}
		tty, ok := c.App.Reader.(*os.File)
		if !ok || !term.IsTerminal(int(tty.Fd())) {
			return usagef("chat: stdin is not a terminal: hub chat is a conversation at a terminal; a script sends a session's prompts with " +
				`hub run --session-in - (one JSON object a line: {"prompt":"…"})`)
		}
		if err := p.load(c.Context, nil); err != nil { // prices, --cwd, --file, --raw-log; no prompt to read
			return chatUsage(toldBeforeStart(err, c.App.ErrWriter))
		}
		if p.warning != "" {
			fmt.Fprintf(c.App.ErrWriter, "hub: warning: %s\n", p.warning)
		}
		return executeChat(c.Context, p, kill, tty, c.App.Writer, c.App.ErrWriter)
	}
}

// chatPlan checks hub chat's options and plans its session as hub run's
// plan does, refusing what a conversation on the terminal cannot take.
// outputFlag says --output was given on the command line (a value from
// the environment or the config file, meant for hub run, is let be).
func chatPlan(o runOptions, outputFlag bool) (runPlan, error) {
	switch {
	case outputFlag && o.Output != "text":
		return runPlan{}, usagef("chat: --output %s: hub chat shows the conversation as text; for events, use hub run --session-in with --output %s", o.Output, o.Output)
	case o.PromptFile != "":
		return runPlan{}, usagef("chat: --prompt-file: give the first prompt as an argument, or type it")
	case o.SessionIn != "":
		return runPlan{}, usagef("chat: --session-in is hub run's: hub chat reads its prompts from the terminal")
	case len(o.Args) == 1 && o.Args[0] == "-" && !o.DashDash:
		return runPlan{}, usagef("chat: stdin is the terminal the prompts are typed on: give the first prompt as an argument")
	}
	o.Chat, o.Output = true, "text"
	p, err := o.plan()
	if err != nil {
		return runPlan{}, chatUsage(err)
	}
	return p, nil
}

// chatUsage names hub chat in a usage error of hub run's checks.
func chatUsage(err error) error {
	var ue usageError
	if errors.As(err, &ue) {
		if rest, ok := strings.CutPrefix(ue.msg, "run: "); ok {
			return usageError{"chat: " + rest}
		}
	}
	return err
}

// chatPrompt and chatMore are the editor's prompts: for a new prompt, and
// for the lines of a paste after its first.
const (
	chatPrompt = "> "
	chatMore   = "… "
)

// executeChat runs the conversation: the session started (package turns),
// then a prompt read from tty, its turn run, until Ctrl-D, a second Ctrl-C
// or the session's end; the exit error is the session's run.finished's.
func executeChat(ctx context.Context, p runPlan, kill <-chan struct{}, tty *os.File, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	o := openOutput(ctx, cancel, p, false, stdout, stderr)
	defer o.close()
	fo := p.fileOptions()
	defer fo.close()
	ch := &chat{text: o.text, cancel: cancel, idle: p.sessionIdle, asks: make(chan chatQuestion)}
	opts := sessionOptions(ctx, p, kill, o.text, fo) // --confirm asks here, before the keyboard takes the terminal
	if p.approve == "tty" {
		opts = append(opts, hub.WithApprover(ch.approver)) // the last approver is the session's
	}
	if err := hub.BecomeSubreaper(); err == nil {
		opts = append(opts, hub.WithOrphans())
		defer hub.ReapOrphans()
	}
	first := p.req.Prompt
	req := p.req
	req.Prompt = ""
	// The editor draws on the terminal: stderr's when it is one (stdout
	// may be a file: the answers, `hub chat > answers.txt`), else stdin's.
	var screen io.Writer = tty
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		screen = o.errOut
	}
	ch.screen = screen
	sink := func(ev events.Event) error {
		ch.offPrompt(ev)
		return o.sink(ev)
	}
	ch.conv = turns.Start(ctx, req, sink, turns.Config{Refused: func(e *events.Error) {
		o.text.say(fmt.Sprintf("hub: %s: %s (next: %s)", binReason(e), oneLine(e.Message, 2000), e.Hint))
	}}, opts...)
	if !isDone(ch.conv.Done()) { // else it did not start: run.finished says why
		kb, err := openKeyboard(tty)
		if err != nil {
			ch.conv.Fail(fmt.Errorf("the terminal: %v", err))
		} else {
			ch.kb = kb
			ch.io = &editorIO{kb: kb, out: screen, over: ch.conv.Done()}
			ch.ed = term.NewTerminal(ch.io, chatPrompt)
			ch.ed.AutoCompleteCallback = ch.io.complete
			ch.ed.SetBracketedPasteMode(true)
			ch.run(first)
			ch.ed.SetBracketedPasteMode(false)
			kb.restore()
		}
	}
	return o.finish(ch.conv.Wait(), fo)
}

// chat is one conversation on the terminal.
type chat struct {
	conv   *turns.Conversation
	kb     *keyboard
	io     *editorIO
	ed     *term.Terminal
	text   *textPrinter
	screen io.Writer // the terminal the editor draws on
	cancel context.CancelCauseFunc
	idle   time.Duration // --session-idle

	asks chan chatQuestion // --approve tty: the approver's questions, for the running turn to ask

	mu       sync.Mutex
	atPrompt bool // the editor's prompt is on the screen, and nothing was written below it
	offered  bool // an event came while the prompt waited: the session ended there
}

// offPrompt clears the prompt's line before ev is shown while the editor
// waits at the prompt: between turns the session's events come only at
// its end, whose summary follows. A session that ended there ok (no limit,
// no crash to tell of) ended at its idle limit, or the agent left: that
// is said before the summary.
func (ch *chat) offPrompt(ev events.Event) {
	ch.mu.Lock()
	at := ch.atPrompt
	ch.atPrompt = false
	ch.offered = ch.offered || at
	offered := ch.offered
	ch.mu.Unlock()
	if at {
		fmt.Fprint(ch.screen, "\r\x1b[2K")
	}
	if rf, ok := ev.Body.(events.RunFinished); ok && rf.OK && offered {
		why := "the agent's process ended"
		if ch.idle > 0 {
			why = fmt.Sprintf("--session-idle %s without a prompt, or the agent's process ended", ch.idle)
		}
		ch.text.say("hub: the session ended while waiting for a prompt (" + why + ")")
	}
}

func (ch *chat) setAtPrompt(on bool) {
	ch.mu.Lock()
	ch.atPrompt = on
	ch.mu.Unlock()
}

// run reads prompts and runs their turns until the conversation ends; the
// session is then ending (conv.End), or has ended.
func (ch *chat) run(first string) {
	defer ch.conv.End()
	if first != "" {
		fmt.Fprintf(ch.io.out, "%s%s\n", chatPrompt, oneLine(first, 2000))
		ch.ed.History.Add(first) // up brings it back, as a typed one
		if !ch.turn(first) {
			return
		}
	}
	for {
		prompt, ok := ch.read()
		if !ok {
			return
		}
		if strings.TrimSpace(prompt) == "" {
			continue
		}
		if !ch.turn(prompt) {
			return
		}
	}
}

// read reads one prompt with the editor (the status line held off): the
// lines of a paste are joined, up to the Enter that sends them. ok is
// false when the conversation is to end: Ctrl-D at an empty prompt, a
// Ctrl-C there after another (or after an interrupt), the end of the
// terminal's input, or the session's end.
func (ch *chat) read() (prompt string, ok bool) {
	var lines []string
	defer ch.ed.SetPrompt(chatPrompt)
	err := ch.text.quiet(func() error {
		for {
			if w, h := ch.kb.size(); w > 0 && h > 0 {
				_ = ch.ed.SetSize(w, h)
			}
			ch.setAtPrompt(true)
			line, err := ch.ed.ReadLine()
			ch.setAtPrompt(false)
			switch {
			case err == nil:
				prompt = strings.Join(append(lines, line), "\n")
				return nil
			case errors.Is(err, term.ErrPasteIndicator):
				lines = append(lines, line)
				ch.ed.SetPrompt(chatMore)
			case errors.Is(err, errCtrlC):
				lines = nil
				ch.ed.SetPrompt(chatPrompt)
				if !ch.io.lineEmpty {
					ch.io.armed = false // the line was cleared
					continue
				}
				if ch.io.armed {
					return err
				}
				ch.io.armed = true
				fmt.Fprint(ch.ed, "(Ctrl-C again, or Ctrl-D, ends the session)\n")
			default: // io.EOF (Ctrl-D, or the terminal's input ended), errSessionOver
				return err
			}
		}
	})
	if err != nil {
		if !errors.Is(err, errSessionOver) { // else offPrompt cleared it for the summary
			fmt.Fprint(ch.io.out, "\r\n") // off the prompt's line, for what follows
		}
		return "", false
	}
	return prompt, true
}

// turn runs prompt's turn, keys read meanwhile kept for the next prompt
// but for Ctrl-C: the first interrupts the turn, one after that stops the
// session (as a signal does: the turn did not end at the interrupt). It
// reports whether the conversation goes on.
func (ch *chat) turn(prompt string) bool {
	done := ch.conv.Send(prompt)
	interrupted, stopped := false, false
	keys := ch.kb.chunks
	for {
		select {
		case <-done:
			if interrupted {
				ch.io.armed = true // a Ctrl-C at the empty prompt now ends the session
			}
			return !stopped && !isDone(ch.conv.Done())
		case q := <-ch.asks:
			d, ctrlC, hangup := ch.answer(q, keys, done)
			q.reply <- d
			if hangup {
				keys = nil
				ch.conv.End()
				stopped = true
			}
			if ctrlC && !interrupted {
				interrupted = true
				ch.conv.Interrupt()
			}
		case b, ok := <-keys:
			if !ok { // the terminal's input ended (a hangup): no one is there
				keys = nil
				ch.conv.End()
				stopped = true
				continue
			}
			if !ch.kb.typeAhead(b) {
				continue
			}
			if !interrupted {
				interrupted = true
				ch.conv.Interrupt()
				continue
			}
			ch.cancel(errors.New("Ctrl-C pressed again while the interrupted turn went on"))
			stopped = true
		}
	}
}

// chatQuestion is a question of hub chat's approver (--approve tty) about
// one tool call, for the running turn to ask.
type chatQuestion struct {
	ctx   context.Context
	text  string            // callQuestion's
	reply chan hub.Decision // buffered: the answer
}

// approver is hub chat's --approve tty: the question about the call is
// asked on the conversation's terminal by the running turn (turn, answer),
// one key its answer.
func (ch *chat) approver(ctx context.Context, c hub.ToolCall) hub.Decision {
	q := chatQuestion{ctx: ctx, text: callQuestion(c, false), reply: make(chan hub.Decision, 1)}
	select {
	case ch.asks <- q:
	case <-ctx.Done():
		return hub.Decision{Verdict: hub.Deny, Message: "the session ended before the question was asked", By: "tty"}
	}
	select {
	case d := <-q.reply:
		d.By = "tty"
		return d
	case <-ctx.Done():
		return hub.Decision{Verdict: hub.Deny, Message: "the session ended while the question waited", By: "tty"}
	}
}

// answer asks q on the screen (the status line held off) and reads its
// answer from the turn's keys: y, a, n or q (answerOf), other keys before
// it ignored, those after it kept for the next prompt. Ctrl-C denies the call and interrupts the turn (ctrlC); the
// end of the terminal's input denies it and ends the session (hangup);
// the turn's end, or the session's, before an answer denies it.
func (ch *chat) answer(q chatQuestion, keys <-chan []byte, done <-chan struct{}) (d hub.Decision, ctrlC, hangup bool) {
	_ = ch.text.quiet(func() error {
		fmt.Fprint(ch.screen, q.text)
		for {
			select {
			case b, ok := <-keys:
				if !ok {
					fmt.Fprint(ch.screen, "\n")
					d, hangup = hub.Decision{Verdict: hub.Deny, Message: "the terminal's input ended at the question"}, true
					return nil
				}
				for i, k := range b {
					switch k {
					case 'y', 'Y', 'a', 'A', 'n', 'N', 'q', 'Q':
						fmt.Fprintf(ch.screen, "%c\n", k)
						d = answerOf(string(k))
						// Keys typed right after the answer, in the same
						// read (a quick Ctrl-D), are the next prompt's,
						// as any key typed during the turn; a Ctrl-C
						// among them interrupts the turn.
						ctrlC = ch.kb.typeAhead(b[i+1:])
						return nil
					case keyCtrlC:
						fmt.Fprint(ch.screen, "^C\n")
						d, ctrlC = hub.Decision{Verdict: hub.Deny, Message: "the user pressed Ctrl-C at the question"}, true
						return nil
					}
				}
			case <-done:
				fmt.Fprint(ch.screen, "\n")
				d = hub.Decision{Verdict: hub.Deny, Message: "the turn ended before the question was answered"}
				return nil
			case <-q.ctx.Done():
				fmt.Fprint(ch.screen, "\n")
				d = hub.Decision{Verdict: hub.Deny, Message: "the session ended before the question was answered"}
				return nil
			}
		}
	})
	return d, ctrlC, hangup
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
