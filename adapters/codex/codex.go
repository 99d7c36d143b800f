// Package codex is hub's adapter for the Codex CLI (npm package
// @openai/codex): `codex exec --json`. Decoding lives in normalize/codex.
//
// The npm package installs a Node wrapper (bin/codex.js) that spawns the
// native codex binary; hub starts the wrapper in its own process group and
// stops the whole tree (wrapper, native binary, and the tool processes Codex
// starts in process groups of their own) as package hub describes.
package codex

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/normalize"
	cxnorm "github.com/hubcli/hub/normalize/codex"
)

// Name is the agent's name in hub.
const Name = "codex"

// MinVersion is the oldest Codex hub supports: 0.155.0, the oldest version
// its contract tests (TestReal) were run and passed on (2026-12-01), which
// scripts/test.sh (CI) runs them on again after the pinned TestedVersion
// (scripts/install-agents.sh --min). Its JSON events are 0.169.0's; what
// differs is that it retries neither a 429 nor a 503 with
// request_max_retries = 1 (no "Reconnecting" notice): testdata/codex/min-*
// are its transcripts of those. 0.148.0 to 0.154.0 passed every scenario
// but Provider/quota: they print a 429 insufficient_quota as "exceeded
// retry limit, last status: 429", a rate limit, where 0.155.0 says "Quota
// exceeded. Check your plan and billing details."
const MinVersion = "0.155.0"

// TestedVersion is the newest Codex hub's tests run on: the version
// scripts/install-agents.sh pins, recorded in testdata/codex on 2026-11-30.
const TestedVersion = "0.169.0"

// MaxPromptBytes is the largest prompt hub sends to Codex: 16 MiB.
const MaxPromptBytes = 16 << 20

// MaxPromptChars is the most characters Codex 0.169.0 accepts in one user
// input (it fails with input_too_large above 1,048,576).
const MaxPromptChars = 1 << 20

// sessionID is the form of Codex's session (thread) ids: a UUID.
var sessionID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// retryOverrides bound Codex's connection retries: by default (feature
// unbounded_connection_retries) it retries a refused or unresolvable
// connection forever, silently after the first few attempts. They are passed
// with -c and override the user's config for this run only; nothing is
// written to it.
var retryOverrides = []string{"-c", "features.unbounded_connection_retries=false"}

// Adapter runs Codex. Name, Info and Detect come from adapters.Base. Use
// the registered value (adapters.Lookup); the zero Adapter builds commands
// and decoders but has no Info.
type Adapter struct{ adapters.Base }

var _ adapters.Adapter = (*Adapter)(nil)

func init() { adapters.Register(&Adapter{adapters.NewBase(info)}) }

// info describes Codex. Detect runs `codex --version`, which prints
// "codex-cli 0.169.0".
var info = adapters.Info{
	Name:          Name,
	Binary:        "codex",
	Package:       "@openai/codex",
	MinVersion:    MinVersion,
	InstallHint:   "npm i -g @openai/codex",
	TestedVersion: TestedVersion,
	LoginHint:     "run `codex login`",
	Grants: map[grant.Level]grant.Rule{
		grant.None: {How: grant.Watched, Means: "--sandbox=read-only --disable=shell_tool",
			Note: "Codex cannot be given no tools: its shell is removed and its read-only sandbox blocks writes, and hub stops the run at any tool call Codex reports (a patch its sandbox rejects is not reported, and changes nothing)"},
		grant.ReadOnly: {How: grant.Native, Means: "--sandbox=read-only",
			Note:     "the sandbox (bubblewrap, seccomp) lets commands read outside --cwd too; calls it blocks are not reported in --json, so they are not counted as denied",
			Confined: []events.ToolKind{events.ToolShell}},
		grant.WorkspaceWrite: {How: grant.Native, Means: "--sandbox=workspace-write, with /tmp, $TMPDIR and extra writable roots taken out of it",
			Note:     "commands have no network in this sandbox; where the sandbox cannot start (no user namespaces) every command fails and hub stops the run",
			Confined: []events.ToolKind{events.ToolShell}},
		grant.Full: {How: grant.Native, Means: "--sandbox=danger-full-access"},
	},
	MaxPromptBytes: MaxPromptBytes,
}

// Command implements adapters.Adapter. The argv is
//
//	codex exec --json --skip-git-repo-check -c features.unbounded_connection_retries=false [--model=M] SANDBOX… -
//	codex exec … [--model=M] SANDBOX… resume -- SESSION -
//
// where SANDBOX… are the level's flags (sandboxArgs, info.Grants; the
// final-answer resume always runs read-only),
// and the prompt goes on stdin ("-"), which hub then closes: byte for byte,
// with no argv length limit, and never read as a flag. Codex keeps reading an
// open stdin, so it must be closed (Command.Stdin does that). Nothing is
// written to the user's Codex config. Errors: a prompt over MaxPromptBytes
// or MaxPromptChars is invalid_input/prompt_too_large, an empty one
// invalid_input/bad_request; a Resume that is not a UUID is
// invalid_input/bad_session (Codex would read it as a thread name and, when
// no thread has that name, silently start a new session).
func (*Adapter) Command(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	if err := checkPrompt(req.Prompt); err != nil {
		return adapters.Command{}, err
	}
	if req.Resume != "" && !sessionID.MatchString(req.Resume) {
		return adapters.Command{}, events.NewError(events.BinInvalidInput, events.ReasonBadSession,
			"pass the session_id of an earlier codex run (a UUID such as 01a22aff-1a95-7700-bf1c-36219f65fb8a)",
			"--resume %q is not a codex session id (a UUID); hub does not resume codex sessions by thread name", req.Resume)
	}
	args := append([]string{"exec", "--json", "--skip-git-repo-check"}, retryOverrides...)
	if req.Model != "" {
		args = append(args, "--model="+req.Model)
	}
	if req.AgentRetries != nil {
		args = append(args, retryArgs(req.Env, *req.AgentRetries)...)
	}
	level := req.Permission.OrDefault()
	if req.NoTools {
		// Codex has no switch that takes its tools away: a read-only
		// sandbox limits what a tool call can do before hub stops it.
		level = grant.ReadOnly
	}
	args = append(args, sandboxArgs(level)...)
	schema, err := schemaArgs(req.Schema)
	if err != nil {
		return adapters.Command{}, err
	}
	var files adapters.TempFiles
	instr, err := instructionArgs(req, &files)
	if err != nil {
		return adapters.WithTempFiles(adapters.Command{}, err, &files)
	}
	args = append(args, instr...)
	if req.Resume != "" {
		// A session id starting with "-" would be read as a flag: "--"
		// ends the options of `resume`, which takes --output-schema
		// itself.
		args = append(append(append(args, "resume"), schema...), "--", req.Resume, "-")
	} else {
		args = append(append(args, schema...), "-")
	}
	return adapters.WithTempFiles(adapters.Command{Path: inst.Path, Args: args, Stdin: []byte(req.Prompt)}, nil, &files)
}

// instructionArgs are the options of a one-shot command that carry
// Request.SystemPrompt and Request.AppendSystemPrompt, each through a file
// (no argv limit): -c model_instructions_file=PATH, a file of files, which
// replaces Codex's base instructions ("You are Codex…"; 0.169.0 sends them
// as the first developer input item); and --profile NAME, a profile file
// hub writes in CODEX_HOME (NAME.config.toml, mode 0600, removed with
// files: 0.169.0 takes a profile only by plain name, from CODEX_HOME)
// setting developer_instructions, which Codex sends as a developer message
// of its own after the base instructions. -c developer_instructions=TEXT
// would put the text in argv, limited to 128 KiB. A live session puts both
// in thread/start instead. Errors are internal: a file not written.
func instructionArgs(req adapters.Request, files *adapters.TempFiles) ([]string, error) {
	var args []string
	if req.SystemPrompt != "" {
		p, err := files.Write("model-instructions.md", []byte(req.SystemPrompt))
		if err != nil {
			return nil, err
		}
		args = append(args, "-c", "model_instructions_file="+tomlString(p))
	}
	if req.AppendSystemPrompt != "" {
		home := codexHome(req.Env)
		if home == "" {
			return nil, events.NewError(events.BinInternal, "",
				"set HOME or CODEX_HOME: hub writes --append-system-prompt to a profile file in Codex's home",
				"codex: no CODEX_HOME and no HOME")
		}
		_ = os.MkdirAll(home, 0o700) // as Codex makes it; WriteIn says why not
		name, err := files.WriteIn(home, "hub-instructions-", ".config.toml",
			[]byte("developer_instructions = "+tomlString(req.AppendSystemPrompt)+"\n"))
		if err != nil {
			return nil, err
		}
		args = append(args, "--profile", strings.TrimSuffix(filepath.Base(name), ".config.toml"))
	}
	return args, nil
}

// tomlString is s as a TOML basic string: JSON's string escapes (\", \\,
// \n, \uXXXX) are all TOML's.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// checkPrompt refuses a prompt Codex would refuse or cut: over
// MaxPromptBytes or MaxPromptChars (invalid_input/prompt_too_large), empty
// or not UTF-8 (invalid_input/bad_request).
func checkPrompt(prompt string) error {
	if err := adapters.CheckPrompt(Name, prompt, MaxPromptBytes); err != nil {
		return err
	}
	if !utf8.ValidString(prompt) {
		return events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"send the prompt as UTF-8 text", "codex accepts only UTF-8 prompts; this one has invalid bytes")
	}
	if n := utf8.RuneCountInString(prompt); n > MaxPromptChars {
		return events.NewError(events.BinInvalidInput, events.ReasonPromptTooLarge,
			"put the material in files in the working directory and refer to them in a short prompt",
			"prompt is %d characters; codex accepts at most %d", n, MaxPromptChars)
	}
	return nil
}

// sandboxArgs map a permission level onto Codex's sandbox (see
// info.Grants; measured with 0.169.0). `codex exec` never asks for an
// approval (its policy is "never": a command that needs more than the
// sandbox gives fails), so nothing can wait for an answer. Under
// workspace-write Codex would also let commands write /tmp and $TMPDIR, and
// any writable_roots of the user's config: the overrides take them out, so
// only --cwd is writable.
func sandboxArgs(level grant.Level) []string {
	switch level {
	case grant.None:
		return []string{"--sandbox=read-only", "--disable=shell_tool"}
	case grant.ReadOnly:
		return []string{"--sandbox=read-only"}
	case grant.WorkspaceWrite:
		return []string{"--sandbox=workspace-write",
			"-c", "sandbox_workspace_write.exclude_slash_tmp=true",
			"-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
			"-c", "sandbox_workspace_write.writable_roots=[]"}
	case grant.Full:
		return []string{"--sandbox=danger-full-access"}
	}
	return nil // not reached: hub.Run refuses a level without a grant
}

// NewDecoder implements adapters.Adapter. The decoder's model, which names
// the usage events and by which hub prices their tokens (Codex reports no
// cost), is req.Model, or else the one Codex's config names (see
// ConfigModel).
func (*Adapter) NewDecoder(req adapters.Request) normalize.Decoder {
	model := req.Model
	if model == "" {
		model = ConfigModel(req.Env)
	}
	return cxnorm.New(cxnorm.Options{Model: model, Resume: req.Resume, FailFast: !req.NoFailFast})
}

// ConfigModel returns the model Codex will use when hub passes none: the
// top-level `model` of $CODEX_HOME/config.toml (default ~/.codex). CODEX_HOME
// and HOME are taken from extra (the run's K=V additions) before hub's
// environment. The file is only read. "" when there is none, it does not
// parse, or it names no model (Codex then uses its built-in default, which
// hub cannot price). Codex 0.169.0 refuses the older in-file profiles, and
// hub passes no --profile, so profiles do not change the model here.
func ConfigModel(extra []string) string {
	return readConfig(extra).Model
}

// config is what hub reads of Codex's config.toml.
type config struct {
	Model          string                    `toml:"model"`
	ModelProvider  string                    `toml:"model_provider"`
	ModelProviders map[string]toml.Primitive `toml:"model_providers"`
}

// readConfig reads $CODEX_HOME/config.toml as ConfigModel describes; the
// zero config when there is none or it does not parse.
func readConfig(extra []string) config {
	dir := codexHome(extra)
	if dir == "" {
		return config{}
	}
	var cfg config
	if _, err := toml.DecodeFile(filepath.Join(dir, "config.toml"), &cfg); err != nil {
		return config{}
	}
	return cfg
}

// codexHome is Codex's home directory: CODEX_HOME, else ~/.codex, with
// CODEX_HOME and HOME taken from extra (the run's K=V additions) before
// hub's environment; "" when neither is set.
func codexHome(extra []string) string {
	if dir := adapters.Getenv(extra, "CODEX_HOME"); dir != "" {
		return dir
	}
	if home := adapters.Getenv(extra, "HOME"); home != "" {
		return filepath.Join(home, ".codex")
	}
	return ""
}

// retryArgs makes Codex retry a failed model call at most n times in this
// run: stream_max_retries=n and request_max_retries=0 for the model provider
// that config.toml selects and defines. The two counts multiply (each stream
// attempt makes up to request_max_retries+1 requests: measured with 0.169.0,
// n=1 for both gave 4 calls to a failing server), and only the stream
// retries show as "Reconnecting… n/m" events, so all retries go there.
// Codex ignores such keys for its built-in providers (openai, oss), and a key
// for a provider the file does not define would make Codex refuse the
// config, so then there are none: hub's count of retry notices
// (Request.AgentRetries) still applies.
func retryArgs(extra []string, n int) []string {
	cfg := readConfig(extra)
	if _, defined := cfg.ModelProviders[cfg.ModelProvider]; !defined || !bareKey.MatchString(cfg.ModelProvider) {
		return nil
	}
	key := "model_providers." + cfg.ModelProvider + "."
	return []string{"-c", key + "request_max_retries=0", "-c", fmt.Sprintf("%sstream_max_retries=%d", key, n)}
}

// bareKey is a TOML bare key, the only provider ids hub writes into -c.
var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
