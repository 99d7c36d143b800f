package events

import (
	"encoding/json"
	"math"
	"time"
)

// Version is the schema version written in every event's "v" field.
const Version = 1

// Type names an event type of SPEC §3.
type Type string

// The event types of schema hub.event/v1.
const (
	TypeRunStarted     Type = "run.started"
	TypeSessionStarted Type = "session.started"
	TypeTextDelta      Type = "text.delta"
	TypeMessage        Type = "message"
	TypeReasoning      Type = "reasoning"
	TypeToolStarted    Type = "tool.started"
	TypeToolFinished   Type = "tool.finished"
	TypeUsage          Type = "usage"
	TypeNotice         Type = "notice"
	TypeFileChanged    Type = "file.changed"
	TypeRunFinished    Type = "run.finished"
	// The turns of a live session (hub.NewSession): each turn's events
	// come between its turn.started and its turn.finished. A one-shot run
	// has neither.
	TypeTurnStarted  Type = "turn.started"
	TypeTurnFinished Type = "turn.finished"
	// The tool calls the agent asked hub about before making them, in a
	// run or session with an approver (hub.WithApprover): each
	// approval.requested is followed by exactly one approval.decided of
	// the same call_id.
	TypeApprovalRequested Type = "approval.requested"
	TypeApprovalDecided   Type = "approval.decided"
)

// Body is the type-specific part of an event: one of the structs below.
type Body interface {
	// Type is the event's "type" field.
	Type() Type
}

// Event is one normalized event: the common fields of SPEC §3 and a Body.
// Seq counts from 0 per run without gaps; TS is when hub produced the event.
type Event struct {
	Seq   int64
	TS    time.Time
	RunID string
	Agent string
	Body  Body
}

// Type returns the type of e's body.
func (e Event) Type() Type { return e.Body.Type() }

// Limits is run.started's "limits" object: nil fields are unset limits.
// Durations are in milliseconds, cost in USD.
type Limits struct {
	TimeoutMS     *int64   `json:"timeout_ms"`
	IdleTimeoutMS *int64   `json:"idle_timeout_ms"`
	MaxCostUSD    *float64 `json:"max_cost_usd"`
	MaxTokens     *int64   `json:"max_tokens"`
	MaxTurns      *int64   `json:"max_turns"`
	MaxToolSteps  *int64   `json:"max_tool_steps"`
}

// RunStarted is the first event of a run. PID and AgentVersion are nil when
// the agent never started (for example it is not installed). Argv has secrets
// redacted.
type RunStarted struct {
	Argv         []string `json:"argv"`
	Cwd          string   `json:"cwd"`
	PID          *int     `json:"pid"`
	AgentVersion *string  `json:"agent_version"`
	Limits       Limits   `json:"limits"`
	// Sandbox, in a sandboxed run (SPEC §6.3), says where: then Cwd is the
	// agent's working directory in the sandbox. Absent from the JSON
	// otherwise.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
}

// Sandbox is run.started's "sandbox" object: the mode ("copy" or
// "worktree"), the original tree the change is relative to (Root) and the
// sandbox's copy of it (Dir), both absolute paths.
type Sandbox struct {
	Mode string `json:"mode"`
	Root string `json:"root"`
	Dir  string `json:"dir"`
}

// Change is how a path of a sandboxed run changed.
type Change string

// The changes of file.changed.
const (
	ChangeAdded    Change = "added"
	ChangeModified Change = "modified"
	ChangeDeleted  Change = "deleted"
	ChangeRenamed  Change = "renamed"
)

// FileChanged is one path a sandboxed run's agent changed, reported after
// the agent exited, before run.finished. Path (and OldPath, for a rename;
// else nil) are slash-separated and relative to the sandbox's root; Bytes
// is the size after the change (a symbolic link's: the length of its
// target), nil when deleted; Binary says the diff holds the content whole.
// Protected, when not "", says why the change is refused (a protected path,
// or one that resolves outside the root); absent from the JSON otherwise.
type FileChanged struct {
	Path      string  `json:"path"`
	Change    Change  `json:"change"`
	OldPath   *string `json:"old_path"`
	Bytes     *int64  `json:"bytes"`
	Binary    bool    `json:"binary"`
	Protected string  `json:"protected,omitempty"`
}

// SessionStarted reports the agent's session id (to resume), model and tools
// when the agent says them; Model and Tools are nil when it does not.
type SessionStarted struct {
	SessionID string   `json:"session_id"`
	Model     *string  `json:"model"`
	Tools     []string `json:"tools"`
	// Mode, in a session of many turns (hub.NewSession), says how hub
	// holds it: SessionLive (one agent process takes every turn) or
	// SessionResume (each turn a new process resuming the session: the
	// CLI or its version cannot hold a live one). "", and absent from the
	// JSON, in a one-shot run.
	Mode SessionMode `json:"mode,omitempty"`
}

// SessionMode is how a session of many turns is held (SessionStarted.Mode).
type SessionMode string

// The session modes.
const (
	SessionLive   SessionMode = "live"
	SessionResume SessionMode = "resume"
)

// TurnStarted opens one turn of a session (hub.Session.Send): Turn counts
// the session's turns from 1.
type TurnStarted struct {
	Turn int64 `json:"turn"`
}

// TurnFinished closes one turn of a session: whether it succeeded (Error
// says why not, as run.finished's would), its answer Text, its own usage
// and cost (not the session's running totals, which usage events and
// run.finished carry), its tool calls and DurationMS, its wall time in
// milliseconds. Interrupted says the turn was cut short by
// hub.Session.Interrupt (then OK is false and Error is cancelled/caller)
// and the session goes on.
type TurnFinished struct {
	Turn        int64      `json:"turn"`
	OK          bool       `json:"ok"`
	Error       *Error     `json:"error"`
	Text        string     `json:"text"`
	DurationMS  int64      `json:"duration_ms"`
	ToolCalls   int64      `json:"tool_calls"`
	Usage       Tokens     `json:"usage"`
	CostUSD     *float64   `json:"cost_usd"`
	CostSource  CostSource `json:"cost_source"`
	Interrupted bool       `json:"interrupted,omitempty"`
}

// ApprovalRequested says the agent asked hub before a tool call (Claude
// Code's can_use_tool, a Codex app-server approval request, hub's pi gate,
// an ACP session/request_permission): the call, with Paths resolved
// against the working directory (absolute), Reason the agent's own
// explanation when it gives one. Its approval.decided follows, at once
// when the grant or an earlier allow_session decides, or when the
// approver answers.
type ApprovalRequested struct {
	CallID string          `json:"call_id"`
	Name   string          `json:"name"`
	Kind   ToolKind        `json:"kind"`
	Input  json.RawMessage `json:"input"`
	Paths  []string        `json:"paths"`
	Reason string          `json:"reason,omitempty"`
}

// ApprovalDecided is hub's answer to an approval.requested: Verdict is
// "allow", "allow_session", "deny" or "stop" (the run stops:
// permission_denied/tool_denied); By who decided: "policy" (the grant, an
// earlier allow_session, hub's own limits, the run's end, or the command
// line's --approve deny|fail), "callback" (the library's approver),
// "tty" (--approve tty) or "editor" (hub acp's client); WaitedMS how long
// the call waited for the answer, in milliseconds (0 for policy); Message
// what the agent (deny) or the run's error (stop) was told.
type ApprovalDecided struct {
	CallID   string   `json:"call_id"`
	Name     string   `json:"name"`
	Kind     ToolKind `json:"kind"`
	Verdict  string   `json:"verdict"`
	By       string   `json:"by"`
	WaitedMS int64    `json:"waited_ms"`
	Message  string   `json:"message"`
}

// Approvals counts a run's approval.decided events (run.finished):
// Requested all of them, Asked those the approver decided (By other than
// "policy": an approval hub overruled, late for a changed target, counts
// as policy's), Allowed those allowed (allow, allow_session), Denied the
// rest (deny, stop).
type Approvals struct {
	Requested int64 `json:"requested"`
	Asked     int64 `json:"asked"`
	Allowed   int64 `json:"allowed"`
	Denied    int64 `json:"denied"`
}

// Count adds d to a.
func (a *Approvals) Count(d ApprovalDecided) {
	a.Requested++
	if d.By != "policy" {
		a.Asked++
	}
	if d.Verdict == "allow" || d.Verdict == "allow_session" {
		a.Allowed++
	} else {
		a.Denied++
	}
}

// TextDelta is a chunk of assistant text as it streams.
type TextDelta struct {
	Text string `json:"text"`
}

// Message is one complete assistant text block.
type Message struct {
	Text string `json:"text"`
}

// Reasoning is thinking or reasoning text, or its summary.
type Reasoning struct {
	Text string `json:"text"`
}

// ToolKind classifies a tool call by its effect (SPEC §3).
type ToolKind string

// The tool kinds of SPEC §3.
const (
	ToolShell  ToolKind = "shell"
	ToolRead   ToolKind = "read"
	ToolWrite  ToolKind = "write"
	ToolEdit   ToolKind = "edit"
	ToolSearch ToolKind = "search"
	ToolWeb    ToolKind = "web"
	ToolMCP    ToolKind = "mcp"
	ToolTask   ToolKind = "task"
	ToolOther  ToolKind = "other"
)

// ToolStarted is a tool call the agent made. Input is the call's arguments as
// a JSON object ({} when the agent gave none).
type ToolStarted struct {
	CallID string          `json:"call_id"`
	Name   string          `json:"name"`
	Kind   ToolKind        `json:"kind"`
	Input  json.RawMessage `json:"input"`
}

// ToolStatus is how a tool call ended.
type ToolStatus string

// The tool statuses of SPEC §3.
const (
	ToolOK     ToolStatus = "ok"
	ToolError  ToolStatus = "error"
	ToolDenied ToolStatus = "denied"
)

// ToolFinished is the end of a tool call. Output is cut to a cap; OutputBytes
// is its length in bytes before cutting and Truncated says whether it was cut.
// ExitCode is the shell exit status when the agent reports one.
type ToolFinished struct {
	CallID      string     `json:"call_id"`
	Name        string     `json:"name"`
	Kind        ToolKind   `json:"kind"`
	Status      ToolStatus `json:"status"`
	Output      string     `json:"output"`
	OutputBytes int64      `json:"output_bytes"`
	Truncated   bool       `json:"truncated"`
	ExitCode    *int       `json:"exit_code"`
}

// Tokens is a usage record: token counts and cost in USD (nil when unknown,
// never 0 for "don't know"). Input counts input tokens neither read from nor
// written to the prompt cache; cache reads and writes are only in their own
// fields (SPEC §3 token conventions).
type Tokens struct {
	Input      int64    `json:"input_tokens"`
	Output     int64    `json:"output_tokens"`
	CacheRead  int64    `json:"cache_read_tokens"`
	CacheWrite int64    `json:"cache_write_tokens"`
	Reasoning  int64    `json:"reasoning_tokens"`
	CostUSD    *float64 `json:"cost_usd"`
}

// Sum returns the token total of t: input + output + cache read + cache write.
// Reasoning tokens are part of output for every agent hub supports and are not
// added again.
func (t Tokens) Sum() int64 { return t.Input + t.Output + t.CacheRead + t.CacheWrite }

// MaxCount is the largest token count hub reports: an agent's larger (or
// negative) count is clamped to [0, MaxCount] by Sane.
const MaxCount = 1 << 50

// Sane returns t with every count clamped to [0, MaxCount] and the cost nil
// (unknown) unless it is a finite number ≥ 0: an agent's 1e400 or -100 must
// not reach the output (JSON has no Inf; the schema has no negative costs)
// or bypass a budget.
func (t Tokens) Sane() Tokens {
	for _, n := range []*int64{&t.Input, &t.Output, &t.CacheRead, &t.CacheWrite, &t.Reasoning} {
		*n = min(max(*n, 0), MaxCount)
	}
	if c := t.CostUSD; c != nil && (math.IsNaN(*c) || math.IsInf(*c, 0) || *c < 0) {
		t.CostUSD = nil
	}
	return t
}

// Add returns t + u. The cost is nil if either cost is nil.
func (t Tokens) Add(u Tokens) Tokens {
	r := Tokens{
		Input:      t.Input + u.Input,
		Output:     t.Output + u.Output,
		CacheRead:  t.CacheRead + u.CacheRead,
		CacheWrite: t.CacheWrite + u.CacheWrite,
		Reasoning:  t.Reasoning + u.Reasoning,
	}
	if t.CostUSD != nil && u.CostUSD != nil {
		c := *t.CostUSD + *u.CostUSD
		r.CostUSD = &c
	}
	return r
}

// CostSource says where a cost came from.
type CostSource string

// The cost sources of SPEC §3.
const (
	CostReported  CostSource = "reported"  // the agent said it
	CostEstimated CostSource = "estimated" // hub priced tokens from its price table
	CostUnknown   CostSource = "unknown"   // nobody knows; cost_usd is null
)

// Usage is the usage of one model call (Step) and the run's running Total.
// Model is nil when the agent did not name it.
type Usage struct {
	Step       Tokens     `json:"step"`
	Total      Tokens     `json:"total"`
	CostSource CostSource `json:"cost_source"`
	Model      *string    `json:"model"`
}

// NoticeKind classifies a notice (SPEC §3).
type NoticeKind string

// The notice kinds of SPEC §3.
const (
	NoticeRetry          NoticeKind = "retry"
	NoticeRateLimit      NoticeKind = "rate_limit"
	NoticeRecoveredError NoticeKind = "recovered_error"
	NoticeNonJSONOutput  NoticeKind = "non_json_output"
	NoticeLineTooLong    NoticeKind = "line_too_long"
	NoticeParseError     NoticeKind = "parse_error"
	NoticeUnknownEvent   NoticeKind = "unknown_event"
	NoticeStderr         NoticeKind = "stderr"
	NoticeCostUnknown    NoticeKind = "cost_unknown"
	NoticeCompaction     NoticeKind = "compaction"
	NoticeLingerKill     NoticeKind = "linger_kill"
	// NoticeSchemaRetry says hub resumes the session because its answer did
	// not match --schema; data has attempt, max_attempts, session_id and
	// problems (each a pointer and a message).
	NoticeSchemaRetry NoticeKind = "schema_retry"
	// NoticeSandboxKept says the sandbox was kept (--keep-sandbox); data
	// has dir, where it is.
	NoticeSandboxKept NoticeKind = "sandbox_kept"
	// NoticeExitStatus says the agent's process ended with a nonzero exit
	// status or a signal after its terminal event said the run succeeded:
	// the terminal event decides (SPEC §4), and the notice keeps what the
	// exit said. data has exit_code or signal.
	NoticeExitStatus NoticeKind = "exit_status"
)

// Notice is something worth knowing that does not end the run. Data is an
// optional JSON object; for retry notices it has attempt, max_attempts,
// delay_ms and http_status.
type Notice struct {
	Kind    NoticeKind      `json:"kind"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// RunFinished is the last event of every run, exactly one per run.
// DurationMS is the run's wall time in milliseconds; CostUSD is in USD and nil
// when unknown; ExitCode is nil when the agent was killed by a signal (then
// Signal names it, e.g. "SIGTERM") or never started.
type RunFinished struct {
	OK         bool    `json:"ok"`
	Error      *Error  `json:"error"`
	Text       string  `json:"text"`
	SessionID  *string `json:"session_id"`
	ExitCode   *int    `json:"exit_code"`
	Signal     *string `json:"signal"`
	DurationMS int64   `json:"duration_ms"`
	Turns      int64   `json:"turns"`
	ToolCalls  int64   `json:"tool_calls"`
	// ToolCallsDenied counts the tool calls the agent's CLI refused
	// (tool.finished with status denied).
	ToolCallsDenied int64      `json:"tool_calls_denied"`
	Usage           Tokens     `json:"usage"`
	CostUSD         *float64   `json:"cost_usd"`
	CostSource      CostSource `json:"cost_source"`
	// Partial marks Text as a partial answer: hub stopped the run at
	// --max-tool-steps and resumed its session once, with tools off, for
	// the agent's best answer so far (then OK is false and Error is
	// budget_exceeded/tool_steps). Absent from the JSON when false.
	Partial bool `json:"partial,omitempty"`
	// Structured is the run's structured answer (SPEC §6.2): nil, and
	// absent from the JSON, when the run had no --schema; with one, the
	// answer's JSON value once it matched the schema (then OK is true), and
	// JSON null otherwise.
	Structured json.RawMessage `json:"structured,omitempty"`
	// Diff is a sandboxed run's change (SPEC §6.3): a git-style unified
	// diff, "" when the agent changed nothing, cut at a line's end to
	// hub.DiffCap bytes; DiffBytes is its whole size. Both are nil,
	// and absent from the JSON, in a run without a sandbox (or when the
	// change could not be read: then the error says why).
	Diff      *string `json:"diff,omitempty"`
	DiffBytes *int64  `json:"diff_bytes,omitempty"`
	// Applied, in a run with --apply, says whether the change was applied
	// to the original tree; absent from the JSON otherwise.
	Applied *bool `json:"applied,omitempty"`
	// Approvals counts the run's approval.decided events; present only in
	// a run or session with an approver (hub.WithApprover, --approve).
	Approvals *Approvals `json:"approvals,omitempty"`
}

func (RunStarted) Type() Type     { return TypeRunStarted }
func (SessionStarted) Type() Type { return TypeSessionStarted }
func (TextDelta) Type() Type      { return TypeTextDelta }
func (Message) Type() Type        { return TypeMessage }
func (Reasoning) Type() Type      { return TypeReasoning }
func (ToolStarted) Type() Type    { return TypeToolStarted }
func (ToolFinished) Type() Type   { return TypeToolFinished }
func (Usage) Type() Type          { return TypeUsage }
func (Notice) Type() Type         { return TypeNotice }
func (FileChanged) Type() Type    { return TypeFileChanged }
func (RunFinished) Type() Type    { return TypeRunFinished }
func (TurnStarted) Type() Type    { return TypeTurnStarted }
func (TurnFinished) Type() Type   { return TypeTurnFinished }
func (ApprovalRequested) Type() Type {
	return TypeApprovalRequested
}
func (ApprovalDecided) Type() Type { return TypeApprovalDecided }
