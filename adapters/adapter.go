package adapters

import (
	"context"
	"strings"
	"time"

	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/internal/framer"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/sandbox"
)

// DefaultMaxLine is the stdout line cap a Request with MaxLine 0 gets:
// 64 MiB. A longer line is skipped to its end with a line_too_long notice.
const DefaultMaxLine = framer.DefaultMaxLine

// Adapter is one agent CLI. Implementations are stateless values, safe for
// concurrent use; per-run state lives in the Decoder.
type Adapter interface {
	// Name is the agent's name in hub: "opencode", "claude", …
	Name() string
	// Info describes the CLI without running it.
	Info() Info
	// Detect finds the agent's binary (bin when not "": a path, or a name
	// looked up in PATH; else the agent's default name in PATH) and probes
	// its version. Errors are *events.Error with bin not_installed or
	// unsupported_version.
	Detect(ctx context.Context, bin string) (Install, error)
	// Command builds the process for req. Errors are *events.Error, for
	// example invalid_input/prompt_too_large.
	Command(req Request, inst Install) (Command, error)
	// NewDecoder returns a decoder for one run of this agent.
	NewDecoder(req Request) normalize.Decoder
}

// RequestChecker is an Adapter that refuses some requests before anything
// of the run starts, the version probe included: what it refuses does not
// depend on the binary installed (a --schema the CLI cannot carry). Run
// calls it after the grant, before Detect; Command makes the same checks.
// Errors are *events.Error.
type RequestChecker interface {
	CheckRequest(req Request) error
}

// Info is what hub knows about an agent CLI without running it.
type Info struct {
	Name        string // the agent's name in hub ("opencode", "claude", …): what Adapter.Name returns
	Binary      string // default executable name looked up in PATH
	Package     string // npm package that provides it
	MinVersion  string // oldest version hub supports: the oldest its tests passed on (CI runs them on it)
	InstallHint string // the command that installs it
	// TestedVersion is the newest version hub's tests run on, the one
	// scripts/install-agents.sh pins ("": none). Newer versions are not
	// refused; MinVersion is the only bound Detect enforces.
	TestedVersion string
	// VersionArgs are the arguments that make the binary print its
	// version; nil means "--version".
	VersionArgs []string
	// ProbeTimeout bounds the version command; 0 means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// ReportsCost says the agent reports its own cost, so hub's price
	// table (Request.Prices) is not used for it.
	ReportsCost bool
	// RetryLimits says how far Request.AgentRetries reaches for this
	// agent when hub cannot set the CLI's own retry count: "" when it can;
	// else what is left unbounded and what to do (the CLI warns with it).
	RetryLimits string
	// Grants says how the agent holds a run to each permission level
	// (Request.Permission): the agent × level table of SPEC §6.1 and
	// README. A level missing here is refused. The map and its slices are
	// shared: do not modify them.
	Grants map[grant.Level]grant.Rule
	// LoginHint is the command that logs the CLI in to its provider
	// ("claude setup-token"): the hint of a run with AuthLogin that failed
	// to authenticate.
	LoginHint string
	// AnswerTool, when not "", says the CLI takes Request.Schema natively
	// and delivers the answer as the input of a tool call of this name
	// (Claude Code's StructuredOutput), which the decoder reports in
	// normalize.Outcome.Answer. With a schema, that tool is no effect (the
	// permission watch lets it through at any level), and an outcome with
	// no Answer gave no structured answer, whatever its text.
	AnswerTool string
	// CallerCommand says the caller gives the agent's command, Request.Bin
	// and Request.Args (adapters/acp): there is no default binary.
	CallerCommand bool
}

// Install is a detected agent binary.
type Install struct {
	Path    string // absolute path of the executable
	Version string // as parsed from its --version output
}

// Command is the process Run starts for one request.
type Command struct {
	Path string
	Args []string // not including argv[0]
	// Env holds variables the adapter adds on top of hub's environment;
	// Request.Env is applied after it and wins.
	Env []string
	// EnvLast holds variables applied after Request.Env: settings a
	// caller's --env must not undo (a final-answer resume's tool rules).
	EnvLast []string
	// Stdin, when not nil, is written to the agent's stdin, which is then
	// closed. When nil, stdin is /dev/null.
	Stdin []byte
}

// Request is the task of one run: what a caller chooses. Only Agent and
// Prompt are required. How the run is carried out (its id, clock, orphan
// reaping, a force-kill channel, a raw log) is set with Options.
type Request struct {
	Agent  string // registered adapter name
	Prompt string
	Model  string // agent-specific model name; "" for the agent's default
	Resume string // session id to resume; "" for a new session
	Cwd    string // working directory; "" for hub's
	Bin    string // the agent binary: a path or a name in PATH; "" for the default
	// Args are the agent's arguments, for an agent whose whole command the
	// caller gives (Info.CallerCommand: an ACP agent, `--acp-command "opencode
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
	// Each adapter maps it onto the CLI's own mechanism (Info.Grants), Run
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

// CheckPrompt is the prompt check every adapter makes: an empty prompt is
// invalid_input/bad_request, one over maxBytes invalid_input/prompt_too_large.
func CheckPrompt(agent, prompt string, maxBytes int) error {
	if strings.TrimSpace(prompt) == "" {
		return events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"pass a prompt: hub run --agent "+agent+" \"…\"", "empty prompt")
	}
	if len(prompt) > maxBytes {
		return events.NewError(events.BinInvalidInput, events.ReasonPromptTooLarge,
			"put the material in files in the working directory and refer to them in a short prompt",
			"prompt is %d bytes; %s accepts at most %d through hub", len(prompt), agent, maxBytes)
	}
	return nil
}

// PromptWithSchema is the prompt an adapter without native schema support
// (OpenCode, pi) sends for req: req.Prompt, followed, when req.Schema is
// set, by the schema and the instruction to reply with one JSON value
// (answer.Schema.WithInstructions). Errors are CheckPrompt's, of the
// caller's prompt (empty) and of the whole (over maxBytes).
func PromptWithSchema(agent string, req Request, maxBytes int) (string, error) {
	if err := CheckPrompt(agent, req.Prompt, maxBytes); err != nil || req.Schema == nil {
		return req.Prompt, err
	}
	p := req.Schema.WithInstructions(req.Prompt)
	return p, CheckPrompt(agent, p, maxBytes)
}
