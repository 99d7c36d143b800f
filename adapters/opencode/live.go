package opencode

import (
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/acp"
)

var _ adapters.Sessioner = (*Adapter)(nil)

// SessionCommand implements adapters.Sessioner: `opencode acp`, OpenCode's
// own Agent Client Protocol server, in the environment Command gives a
// one-shot run (the same checks of --cwd first), with one more setting in
// its inline config: default_agent names hub's agent for the level, so
// that the ACP session's mode (its agent) is hub-LEVEL and its permission
// rules hold exactly as in a one-shot run's `--agent=hub-LEVEL`. No
// session is named: hub's ACP client opens it (session/new), or loads
// Request.Resume (session/load).
//
// Why `opencode acp` and not `opencode serve` (prompt_async, the
// session.idle event, /abort): both keep one OpenCode process for many
// turns. serve starts a follow-up turn's answer about 50 ms sooner (its
// first message.part.delta at a median 191 ms against acp's first
// session/update at 247 ms, against mockllm on this machine; neither
// within 100 ms: BENCHMARKS.md, issue 35), but acp speaks a protocol hub
// already speaks (its ACP client and decoder, adapters/acp and
// normalize/acp, tested against OpenCode by TestRealACP), approvals
// included (session/request_permission), over the agent's stdin and
// stdout, which hub's supervisor already holds, where serve needs a port,
// an HTTP client and an SSE decoder of OpenCode's own event bus (whose
// events are of every session of the server), and its end is the process
// tree's to find: acp exits when its stdin closes (testdata/live/opencode).
func (a *Adapter) SessionCommand(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	cmd, err := a.command(req, inst, true)
	if err != nil {
		return adapters.Command{}, err
	}
	return cmd, nil
}

// NewLive implements adapters.Sessioner: hub's ACP client's live session
// (acp.NewLive), answering OpenCode's permission requests from OpenCode's
// grants (it asks none under hub's agents, whose rules allow or deny), and
// refusing a prompt over MaxPromptBytes as a one-shot run does.
//
// With an approver (Request.Approve) below full, hub's agent asks where it
// would deny (approvalRules), and each of OpenCode's permission requests
// is put to the approver (the Live is adapters.Approving). OpenCode 1.18.33
// (testdata/approvals/opencode): a refusal ends its turn at once, with no
// further model call (stopReason end_turn; the model reads the refusal in
// the next turn's request), so the turn ends ok with the call denied and
// no answer; an approved edit writes the content OpenCode computed when it
// asked, over a change made meanwhile, which hub's broker refuses to let
// happen (a target changed since the request is denied, not approved:
// TestRealApprovalChangedEdit); a write outside --cwd is asked about as
// external_directory first (kind other, the file and its directory), then,
// where the level does not allow edits, as the edit, under the same call
// id; a session/cancel leaves a pending request live (a late allow still
// writes), so an interrupt answers it cancelled; "always" would be
// remembered for the whole process and per pattern, so hub never answers
// it (adapters/acp's Approvals).
func (a *Adapter) NewLive(req adapters.Request) adapters.Live {
	return acp.NewLive(req, acp.LiveOptions{Info: a.Info(), MaxPromptBytes: MaxPromptBytes})
}
