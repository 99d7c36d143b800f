package hub

import (
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/internal/framer"
	"github.com/hubcli/hub/sandbox"
)

// DefaultMaxLine is the stdout line cap a Request with MaxLine 0 gets:
// 64 MiB. A longer line is skipped to its end with a line_too_long notice.
const DefaultMaxLine = framer.DefaultMaxLine

// Request is the task of one run: what a caller chooses. Only Agent and
// Prompt are required. How the run is carried out (its id, clock, orphan
// reaping, a force-kill channel, a raw log) is set with Options. The agent's
// adapter sees the part of it that shapes the CLI's command, an
// adapters.Request.
type Request struct {
	Agent  string // registered adapter name
	Prompt string
	Model  string // agent-specific model name; "" for the agent's default
	Resume string // session id to resume; "" for a new session
	Cwd    string // working directory; "" for hub's
	Bin    string // the agent binary: a path or a name in PATH; "" for the default
	// Args are the agent's arguments, for an agent whose whole command the
	// caller gives (adapters.Info.CallerCommand: an ACP agent, `--acp-command "opencode
	// acp"` is Bin "opencode", Args ["acp"]); a run of any other agent with
	// Args is refused (invalid_input/bad_request).
	Args []string
	// Env is extra K=V pairs for the agent's environment; they win over
	// hub's own environment and the adapter's additions.
	Env    []string
	Limits budget.Limits
	// Prices prices the tokens of agents that report no cost (Codex); nil
	// means budget.DefaultPrices().
	Prices *budget.PriceTable
	// MaxLine is the stdout line cap in bytes; 0 means 64 MiB.
	MaxLine int
	// TTY runs the agent on pseudo-terminals (SPEC §6.4, proc.Spec.TTY):
	// its stdout and stderr are terminals of proc.TTYCols × proc.TTYRows,
	// for CLIs or builds that behave differently without one; stdin stays
	// a pipe or /dev/null. Its output goes through the same framing,
	// decoder, limits and kills as without; the raw log (WithRawLog) holds
	// the bytes the agent wrote, the terminal's "\r\n" for "\n" undone.
	TTY bool
	// NoTools asks the agent to run no tool, for the final-answer resume
	// after MaxToolSteps. The tools stay defined in the model request (the
	// Anthropic API and Amazon Bedrock refuse a conversation that holds tool
	// calls but defines no tools), so the request itself says not to call
	// one (FinalAnswerPrompt), Run stops the agent at a tool call, and
	// adapters refuse execution where the CLI can: OpenCode, which reports
	// a tool call only once it has run, asks for permission and so rejects
	// every call (an agent of hub's own with permission "*": "ask"); Codex
	// runs in a read-only sandbox.
	NoTools bool
	// AgentRetries, when not nil, is how many times the agent may retry a
	// failed model call. Hub sets the CLI's own count where it has one
	// (Claude Code CLAUDE_CODE_MAX_RETRIES; Codex request_max_retries and
	// stream_max_retries of a provider defined in its config.toml) and
	// stops the run at the retry notice numbered *AgentRetries+1 (pi and
	// codex's built-in providers have no setting hub can pass; OpenCode
	// reports no retries, so its silence is bounded only by the idle
	// timeout). nil leaves each CLI's default.
	AgentRetries *int
	// NoFailFast keeps the agent retrying errors that retrying cannot fix
	// (HTTP 401/403); by default hub stops it at the first such retry.
	NoFailFast bool
	// Permission is what the agent may do; "" means grant.ReadOnly.
	// Each adapter maps it onto the CLI's own mechanism (adapters.Info.Grants), Run
	// refuses a level the agent cannot be held to before anything starts,
	// and watches every tool call against it (see Guard).
	Permission grant.Level
	// Auth says whether the agent keeps hub's API keys (AuthInherit, the
	// default for "") or uses its saved login (AuthLogin: BilledKeys are
	// removed from its environment, and Env may not set one).
	Auth grant.Auth
	// Schema, when not nil, is the JSON Schema the run's answer must match
	// (SPEC §6.2): each adapter passes it to the CLI's own structured
	// output where there is one (Claude Code, Codex) and into the prompt
	// where there is not (answer.Schema.WithInstructions); Run checks every
	// answer itself and reports the value in run.finished.structured.
	Schema *answer.Schema
	// SchemaRetries is how many times Run resumes the session of an answer
	// that does not match Schema, with its problems (answer.RepairPrompt):
	// 0 means DefaultSchemaRetries, a negative count none.
	SchemaRetries int
	// SystemPrompt, when not "", replaces the agent's own system prompt;
	// AppendSystemPrompt, when not "", is added after the agent's (or
	// SystemPrompt). Both are the text itself (the CLI's --system-prompt
	// @FILE is read by hub's command). Each adapter gives it to the CLI
	// through a file it writes in a private temporary directory, removed
	// when the agent's process ends, so no argv or environment limit
	// applies (docs/agents.md has the table): Claude Code
	// --system-prompt-file / --append-system-prompt-file (a replaced prompt
	// keeps Claude Code's one-line identity block), Codex
	// model_instructions_file / developer_instructions (a profile file of
	// hub's in CODEX_HOME; a live session's thread/start fields), OpenCode
	// hub's agent's prompt / instructions, pi --system-prompt /
	// --append-system-prompt with the file's path. An ACP agent refuses
	// them (invalid_input/bad_request) before anything starts.
	SystemPrompt       string
	AppendSystemPrompt string
	// Sandbox, when Copy or Worktree, runs the agent in a sandbox of Cwd
	// (SPEC §6.3, package sandbox): the agent's working directory is the
	// sandbox's, every change it made there is reported (file.changed,
	// run.finished.diff), and the original tree is left as it was unless
	// Apply. "" means sandbox.None.
	Sandbox sandbox.Mode
	// Protect are globs of paths (relative to the sandbox's root) the
	// agent may not change: a change to one, to a .git path, or to a path
	// that resolves outside the root ends the run
	// permission_denied/protected_path. Only with Sandbox.
	Protect []string
	// Apply applies the change to the original tree after an ok run, all
	// or nothing, only where every path it touches is still as it was when
	// the sandbox was made (else invalid_input/conflict). Only with Sandbox.
	Apply bool
	// KeepSandbox keeps the sandbox after the run (a sandbox_kept notice
	// says where) instead of removing it.
	KeepSandbox bool
	// Files are read-only context files for the agent (--file): each a
	// path (as the agent is to know it; ReadFile gives the absolute path)
	// and its content, UTF-8 text of at most MaxFileBytes. hub inlines
	// them ahead of Prompt (adapters.InlineFiles) for every agent, the one
	// form each CLI carries whole (docs/cli.md, "Context files"), in a
	// session's first turn only. A prompt with its files over the agent's
	// adapters.Info.MaxPromptBytes is refused before anything starts
	// (invalid_input/prompt_too_large), never cut.
	Files []adapters.File
}

// DefaultSchemaRetries is how many repairs of an answer that does not
// match Request.Schema a run asks for when Request.SchemaRetries is 0.
const DefaultSchemaRetries = 1

// SchemaRetriesOrDefault is r.SchemaRetries with 0 read as
// DefaultSchemaRetries and a negative count as 0.
func (r Request) SchemaRetriesOrDefault() int {
	switch {
	case r.SchemaRetries == 0:
		return DefaultSchemaRetries
	case r.SchemaRetries < 0:
		return 0
	}
	return r.SchemaRetries
}

// adapterRequest is the part of r the agent's adapter sees.
// adapterRequest is the run's request as its adapter takes it: the
// Request's, and whether an approver asks about tool calls.
func (r *runner) adapterRequest() adapters.Request {
	a := r.req.adapterRequest()
	a.Approve = r.opt.approver != nil
	return a
}

func (r Request) adapterRequest() adapters.Request {
	return adapters.Request{
		Agent: r.Agent, Prompt: adapters.InlineFiles(r.Files, r.Prompt), Model: r.Model, Resume: r.Resume, Cwd: r.Cwd,
		Bin: r.Bin, Args: r.Args, Env: r.Env, TTY: r.TTY, NoTools: r.NoTools,
		AgentRetries: r.AgentRetries, NoFailFast: r.NoFailFast, Permission: r.Permission,
		Auth: r.Auth, Schema: r.Schema, Files: r.Files, SystemPrompt: r.SystemPrompt, AppendSystemPrompt: r.AppendSystemPrompt,
	}
}
