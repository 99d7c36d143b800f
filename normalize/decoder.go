package normalize

import (
	"encoding/json"
	"time"

	"github.com/hubcli/hub/events"
)

// Decoder decodes one agent's stdout, line by line, into normalized events and
// classifies the run's outcome. A Decoder holds the state of one run; it is
// not safe for concurrent use. Decoders never panic, whatever the input: an
// unexpected shape becomes a notice.
type Decoder interface {
	// Decode takes one line that is valid JSON (the caller checked) and
	// appends the events it yields to dst. line is only valid during the
	// call.
	Decode(dst []events.Body, line []byte) []events.Body

	// Status is the decoder's view after the lines decoded so far.
	Status() Status

	// Outcome decides how the run ended, given how the process ended.
	// Hub's own causes (timeouts, cancellation) are decided by the caller
	// before Outcome is asked; Outcome sees only runs that ended on their own
	// or that the decoder itself asked to stop (Status.Abort).
	Outcome(end End) Outcome
}

// Indexed is a Decoder that reads its lines through the Index its caller
// makes of each line as it checks it (Index.Valid), so that the decoder
// does not read the line's long strings again (tool outputs of megabytes).
// The caller calls UseIndex before the first line, and checks each line
// with that Index right before it decodes it; a line decoded otherwise
// (not checked, or checked by the package function Valid) needs a Reset of
// the Index first. A decoder given no Index reads everything.
type Indexed interface {
	Decoder
	UseIndex(*Index)
}

// StderrDecoder is a Decoder that reads the agent's stderr too, for a CLI
// that reports there what its stdout does not (OpenCode's log lines name
// each failed model call it retries). The runner gives it each stderr line
// (cleaned of terminal control, without its newline), in the order they
// arrive relative to stdout; when it takes the line (ok), its events go
// through the same steps and guards as stdout's, and no stderr notice is
// sent for it. line is only valid during the call.
type StderrDecoder interface {
	Decoder
	DecodeStderr(dst []events.Body, line string) (out []events.Body, ok bool)
}

// Status is what a decoder has seen that the runner must act on.
type Status struct {
	// Terminal reports that the agent's terminal event has been seen: the
	// runner waits --linger for the process to exit, then kills it.
	Terminal bool
	// Abort, when not nil, asks the runner to stop the agent now: it is
	// retrying something that retrying cannot fix (SPEC §4). The run ends
	// with this error.
	Abort *events.Error
}

// End is how the agent process ended.
type End struct {
	// ExitCode is the exit status, nil when a signal killed the process.
	ExitCode *int
	// Signal names the signal that killed it ("SIGTERM"), "" if none.
	Signal string
	// Stderr is the last bytes (at most 64 KiB) of its stderr.
	Stderr string
	// Stopped reports that hub signalled the process (it asked to abort, or
	// the terminal event was followed by a linger kill).
	Stopped bool
}

// Outcome is a decoder's verdict. When OK is false, Error is set.
type Outcome struct {
	OK        bool
	Error     *events.Error
	Text      string // the final answer: the last assistant text, "" if none
	SessionID string // "" when the agent gave none
	// Totals, when not nil, are the agent's own final totals (Claude Code's
	// result event); they replace the sums of the usage events in
	// run.finished.
	Totals *Totals
	// RetryAt, when not nil, gives when the limit that failed the run lifts,
	// as the agent said it (Claude Code's rate_limit_event resetsAt,
	// Codex's "try again at 10:14 PM" in the machine's local time), given
	// the time now; the runner sets retry_after_s from it.
	RetryAt func(now time.Time) time.Time `json:"-"`
	// Retrying, when not nil, is the failure the agent was retrying when
	// it ended (OpenCode, silent on stdout while it backs off): a run that
	// hub's limit stopped says so in its error.
	Retrying *events.Error
	// Answer, when not nil, is the CLI's own structured answer to a
	// --schema (Claude Code's result.structured_output), one JSON value as
	// the CLI gave it; hub checks it instead of Text.
	Answer json.RawMessage
}

// Totals are a run's final usage as the agent reported it.
type Totals struct {
	Usage      events.Tokens // cost in USD, nil when unknown
	CostSource events.CostSource
	Turns      int64 // model turns; 0 when the agent did not say
}

// Continuer is a Decoder that can go on from the decoder of an earlier
// process of the same run: hub resumes a session it started (the final
// answer after --max-tool-steps, the repair of an answer that did not
// match --schema) and the CLI reports what its earlier process already
// reported again (Codex's usage is the session's running total).
type Continuer interface {
	// Continue takes from prev, the decoder of the run's previous
	// process, what this one needs to report only its own process's part.
	// A prev of another kind, or of another session, is ignored.
	Continue(prev Decoder)
}
