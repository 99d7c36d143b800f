package adapters

import (
	"io"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Sessioner is an Adapter whose CLI can hold a live session: many turns in
// one process, each prompt written on its stdin (Claude Code's stream-json
// input, pi's RPC mode, …). hub.NewSession uses it; an agent that is not a
// Sessioner gets sessions of one process per turn, each resuming the last.
type Sessioner interface {
	// SessionCommand builds the process of a live session for req, whose
	// Prompt is "" (the prompts come as turns). Errors are *events.Error,
	// as Command's.
	SessionCommand(req Request, inst Install) (Command, error)
	// NewLive returns hub's side of one live session's protocol.
	NewLive(req Request) Live
}

// Live is hub's side of one live session: it writes the turns on the
// agent's stdin, recognises the line that ends a turn, and makes a decoder
// for each turn's lines.
//
// Open is called once the agent runs, then, from the run's goroutine, Line
// for each stdout line that is a JSON object; Send, Interrupt and Close
// from the session's caller, at most one at a time, between Open and the
// agent's exit. None may block for long.
type Live interface {
	// Open is given the agent's stdin. The Live writes on it and closes it
	// in Close.
	Open(stdin io.WriteCloser)
	// Send writes prompt as the next turn. The caller sends a turn only
	// once the last one ended.
	Send(prompt string) error
	// Interrupt asks the agent to stop the running turn and keep the
	// session (Claude Code's interrupt control request, pi's abort): the
	// turn then ends as the CLI ends an interrupted turn.
	Interrupt() error
	// Close closes the agent's stdin: no turn will come, and the CLI exits
	// once the running turn (if any) is over.
	Close()
	// Line sees each stdout line before any decoder does: own says the
	// line is the protocol's own (a response to a command) and no decoder
	// is given it; the bodies Line appends to dst are emitted (a
	// session.started made from a response); end says the line ends the
	// running turn, after the turn's decoder has been given it.
	Line(dst []events.Body, line []byte) (out []events.Body, own, end bool)
	// NewTurnDecoder returns the decoder of one turn's lines: the session's
	// first, and one after each turn's end.
	NewTurnDecoder() normalize.Decoder
	// EndTurn returns the outcome of a turn as its decoder decided it,
	// corrected where the CLI reports running totals of the session
	// rather than the turn's (Claude Code's total_cost_usd).
	EndTurn(o normalize.Outcome) normalize.Outcome
}
