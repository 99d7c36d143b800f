package adapters

import (
	"io"
	"path/filepath"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// Conversation is a Decoder's other half for an agent that hub talks with
// rather than only listens to: a protocol over the agent's stdin and stdout
// (the Agent Client Protocol, adapters/acp). When the Decoder that
// Adapter.NewDecoder returns implements it, hub.Run keeps the agent's stdin
// open as a pipe (Command.Stdin must be nil), hands it to Open once the
// agent runs, gives Receive every stdout line, and asks Interrupt first
// when it stops the agent: the supervisor's SIGTERM follows a grace period
// later (proc.Spec.Interrupt), so a stopped run takes up to twice
// Limits.Grace before its SIGKILL. The Decoder half still turns the same
// lines into events, as for any agent, so a raw log replays the same.
//
// Open, Receive and Close are called from the run's goroutine, in that
// order; Interrupt from any goroutine, at most once, between Open and
// Close.
type Conversation interface {
	// Open starts the conversation on the agent's stdin, which it writes
	// from goroutines of its own and closes when it has nothing more to
	// say (the agent then ends). It must not block.
	Open(stdin io.WriteCloser)
	// Receive is given each complete stdout line that is a JSON object,
	// whether or not the run still forwards the agent's events (after a
	// stop the conversation still reads the answer to its cancel). line is
	// only valid during the call. It must not block.
	Receive(line []byte)
	// Interrupt asks the agent to stop its turn on its own terms (ACP's
	// session/cancel) and reports whether it asked: false when there is
	// no turn to stop (not begun, or answered), and the SIGTERM is then
	// sent at once. It must not block for long.
	Interrupt() (asked bool)
	// Close ends the conversation once the agent has exited and its
	// stdout has ended; the conversation's goroutines have returned when
	// it returns.
	Close()
}

// ToolCheck is the rule of hub's watch (SPEC §6.1) for req's grant: nil
// when a tool call st is within req.Permission for req.Agent in req.Cwd,
// else the permission_denied/effect_not_granted error the watch stops a run
// with. A Conversation answers an agent's own permission requests with it
// (allow exactly what the watch lets through); it is safe for concurrent
// use. An agent without a grant for the level refuses everything.
func ToolCheck(req Request, info Info) func(st events.ToolStarted) *events.Error {
	g, err := grant.For(info.Name, info.Grants, req.Permission.OrDefault())
	if err != nil {
		return func(events.ToolStarted) *events.Error { return err }
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = "."
	}
	w := grant.NewWatch(req.Agent, g, cwd)
	return func(st events.ToolStarted) *events.Error { return w.Check(st) }
}

// Within reports whether path, resolved as the kernel would (symbolic links
// followed; a part that does not exist yet taken as written), is dir or
// below it, dir resolved too. Relative paths are taken from dir. For a
// Conversation that serves an agent's file requests inside --cwd.
func Within(dir, path string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	root, ok := grant.RealPath(abs)
	if !ok {
		return false
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	real, ok := grant.RealPath(path)
	return ok && grant.Within(root, real)
}
