package adapters

import (
	"context"
	"strings"
	"time"

	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/normalize"
)

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
// depend on the binary installed (a --schema the CLI cannot carry). hub.Run
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
	// table (hub.Request.Prices) is not used for it.
	ReportsCost bool
	// RetryLimits says how far Request.AgentRetries reaches for this
	// agent when hub cannot set the CLI's own retry count: "" when it can;
	// else what is left unbounded and what to do (the CLI warns with it).
	RetryLimits string
	// Grants says how the agent holds a run to each permission level
	// (Request.Permission): the agent × level table of SPEC §6.1 and
	// docs/permissions.md. A level missing here is refused. The map and its slices are
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
	// MaxPromptBytes is the largest prompt the adapter sends the CLI (0:
	// not known). hub.Run refuses a run whose prompt with its files
	// (Request.Files) is larger before anything starts.
	MaxPromptBytes int
}

// Install is a detected agent binary.
type Install struct {
	Path    string // absolute path of the executable
	Version string // as parsed from its --version output
}

// Command is the process hub.Run starts for one request.
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
	// Cleanup, when not nil, removes what building the command wrote for
	// the process (its TempFiles: the system prompt's files). The run
	// calls it once, after the process has ended, or when it does not
	// start.
	Cleanup func()
}

// Request is what an adapter sees of a run's request (hub.Request, whose
// fields of the same names say more): what shapes the CLI's command and
// its decoder. The run engine builds it for each attempt, so Prompt,
// Resume, Cwd and NoTools are the attempt's (a final-answer or repair
// resume, a sandbox's directory).
type Request struct {
	Agent  string // registered adapter name
	Prompt string // the prompt of this attempt, with Files inlined ahead of it
	Model  string // agent-specific model name; "" for the agent's default
	Resume string // session id to resume; "" for a new session
	Cwd    string // the agent's working directory; "" for hub's
	Bin    string // the agent binary: a path or a name in PATH; "" for the default
	// Args are the agent's arguments, only for an agent whose whole command
	// the caller gives (Info.CallerCommand).
	Args []string
	// Env is the caller's K=V pairs for the agent's environment, applied
	// over hub's environment and Command.Env.
	Env []string
	// TTY: the agent runs on pseudo-terminals (hub.Request.TTY).
	TTY bool
	// NoTools asks the agent to run no tool: the final-answer resume
	// (hub.Request.NoTools says how each CLI refuses them).
	NoTools bool
	// AgentRetries, when not nil, is how many times the agent may retry a
	// failed model call, where the CLI has a setting for it.
	AgentRetries *int
	// NoFailFast keeps the agent retrying errors retrying cannot fix.
	NoFailFast bool
	// Permission is the run's level ("" means grant.ReadOnly), mapped onto
	// the CLI's own mechanism as Info.Grants says.
	Permission grant.Level
	// Auth is how the agent authenticates (grant.AuthInherit for "").
	Auth grant.Auth
	// Approve: the run has an approver (hub.WithApprover), and the CLI is
	// to ask before each tool call (an adapters.Approving Live's CLI).
	Approve bool
	// Schema, when not nil, is the JSON Schema the answer must match: the
	// CLI's own structured output where there is one, else the prompt
	// (PromptWithSchema).
	Schema *answer.Schema
	// Files are the run's read-only context files (hub.Request.Files), in
	// the first attempt only (not a resume for a final answer or a
	// repair). hub has already inlined them into Prompt (InlineFiles): an
	// adapter must not send them again.
	Files []File
	// SystemPrompt, when not "", replaces the agent's own system prompt
	// (hub.Request.SystemPrompt); AppendSystemPrompt, when not "", is added
	// after it. Each adapter passes them to the CLI through a file it
	// writes (TempFiles), never in argv or one environment variable, or
	// refuses them (invalid_input/bad_request) where the CLI has no way.
	SystemPrompt       string
	AppendSystemPrompt string
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
