package adapters

import (
	"encoding/json"

	"github.com/hubcli/hub/events"
)

// ToolCall is one tool call an agent asks to make, as hub puts it to an
// approver (hub.WithApprover): the same for every CLI, built by the
// CLI's Live from its own approval request.
type ToolCall struct {
	// Agent is the adapter's name.
	Agent string
	// CallID is the CLI's id of the call (Claude Code's tool_use_id,
	// Codex's item id), as tool.started's call_id.
	CallID string
	// Name is the CLI's tool name ("Write", "commandExecution",
	// "fileChange", …), as tool.started's name.
	Name string
	// Kind is hub's kind of the call (SPEC §3): read, search, edit, write,
	// shell, web, task, mcp, other.
	Kind events.ToolKind
	// Input is the call's input as the CLI gives it: a JSON object.
	Input json.RawMessage
	// Paths are the files the call names, absolute: relative ones joined
	// to the run's working directory.
	Paths []string
	// Diff is the change the call makes, as the CLI shows it (Codex's
	// unified diff of a file change); "" when it shows none.
	Diff string
	// Reason is why the CLI asks, where it says ("" when not).
	Reason string
	// Unconfined: the call would run outside the CLI's own sandbox (Codex
	// asks only to leave it), so no grant below full allows it without
	// asking.
	Unconfined bool
}

// Verdict is an approver's answer to one tool call.
type Verdict string

// The verdicts.
const (
	// AllowOnce lets this call run.
	AllowOnce Verdict = "allow"
	// AllowSession lets this call run, and every later call of the same
	// tool (ToolCall.Name) in the run or session, without asking.
	AllowSession Verdict = "allow_session"
	// Deny refuses the call: the agent is told (Decision.Message) and goes
	// on.
	Deny Verdict = "deny"
	// Stop refuses the call and stops the run:
	// permission_denied/tool_denied.
	Stop Verdict = "stop"
)

// Decision is an approver's answer: a verdict, and for Deny and Stop the
// message the agent (Deny) or the run's error (Stop) gives.
type Decision struct {
	Verdict Verdict
	Message string
	// By names who decided, for approval.decided's "by": "tty", "editor",
	// "policy" (a rule rather than a person: --approve deny|fail); ""
	// is "callback", the library caller's approver.
	By string
}

// Approving is a Live whose CLI can ask before a tool call: Claude Code's
// can_use_tool control request, Codex app-server's approval requests, … A
// Sessioner whose Live is not Approving cannot take an approver, and hub
// refuses the request before anything starts.
type Approving interface {
	// Approvals is called once, before Open, when the run has an
	// approver: the CLI is to ask (its command was built with
	// Request.Approve), and the Live calls ask for each request, from the
	// run's goroutine (Line). ask does not block: it answers through
	// reply, once, from any goroutine; the Live writes the CLI's answer
	// there without waiting for the write.
	Approvals(ask func(call ToolCall, reply func(Decision)))
}
