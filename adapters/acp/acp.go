// Package acp is hub's adapter for any agent that speaks the Agent Client
// Protocol (ACP: JSON-RPC 2.0 over stdio, agentclientprotocol.com) —
// OpenCode's `opencode acp`, Gemini CLI, goose, and the ACP adapters of
// Claude Code, Codex and pi. The caller gives the agent's command
// (Request.Bin and Request.Args; `hub run --agent acp --acp-command
// "opencode acp"`); hub is the ACP client: it starts the agent under the
// same supervisor as every agent, leads one conversation (initialize,
// session/new or session/load, session/set_model with --model, one
// session/prompt), answers the agent's requests (session/request_permission
// and fs/* from the run's grant, inside --cwd; terminal/* refused), and asks
// with session/cancel before it signals the agent. A live session
// (hub.NewSession; NewLive, which OpenCode's adapter uses too) keeps the
// connection: a session/prompt for each turn, session/cancel to interrupt
// one; with an approver (hub.WithApprover) its permission requests are put
// to the approver instead (approve.go). The protocol's plumbing is github.com/coder/acp-go-sdk (v0.13.0),
// shared by both (peer); decoding the agent's updates into events is
// normalize/acp.
package acp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/normalize"
	acpnorm "github.com/hubcli/hub/normalize/acp"
)

// Name is the agent's name in hub.
const Name = "acp"

// MaxPromptBytes is the largest prompt hub sends an ACP agent: 8 MiB, in
// one JSON-RPC line (ACP SDKs read lines of 10 MiB and more; agents vary).
const MaxPromptBytes = 8 << 20

// Adapter runs an ACP agent. Name and Info come from adapters.Base; Detect
// only finds the command (ACP agents have no common --version: the version
// an agent reports in its initialize answer goes into a notice).
type Adapter struct{ adapters.Base }

var _ adapters.Adapter = (*Adapter)(nil)
var _ adapters.RequestChecker = (*Adapter)(nil)

func init() { adapters.Register(&Adapter{adapters.NewBase(info)}) }

// answered is how hub holds an ACP agent to a level it cannot tell the
// agent: it answers the agent's permission requests and file requests
// from the level, and its watch stops the run at a call outside the level
// that the agent runs without asking.
const answered = "each session/request_permission answered from the level (allow what it grants, reject the rest, never wait)"

// unasked is what the watch cannot prevent.
const unasked = "an agent that runs a call outside the level without asking (OpenCode's shell and writes by default) is stopped once the call shows it runs (its output or its end): it may have had its effect; give such an agent ask rules (OpenCode: permission edit and bash \"ask\") so that every call comes to hub first"

var info = adapters.Info{
	Name:          Name,
	CallerCommand: true,
	ReportsCost:   true,
	Grants: map[grant.Level]grant.Rule{
		grant.None:     {How: grant.Watched, Means: answered + "; fs/* refused", Note: unasked},
		grant.ReadOnly: {How: grant.Watched, Means: answered + "; fs/read_text_file inside --cwd", Note: unasked},
		grant.WorkspaceWrite: {How: grant.Watched, Means: answered + "; fs/read_text_file and fs/write_text_file inside --cwd",
			Note: "shell calls are rejected (a shell can write anywhere); " + unasked},
		grant.Full: {How: grant.Native, Means: "every permission request allowed; fs/* anywhere"},
	},
	MaxPromptBytes: MaxPromptBytes,
}

// Detect implements adapters.Adapter: it finds bin (Request.Bin, the
// command's program) without running it. Errors are not_installed.
func (a *Adapter) Detect(_ context.Context, bin string) (adapters.Install, error) {
	if bin == "" {
		return adapters.Install{}, events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			`name the ACP agent's command: hub run --agent acp --acp-command "opencode acp" …`, "no ACP command given")
	}
	path, err := exec.LookPath(bin)
	if err == nil {
		if abs, aerr := filepath.Abs(path); aerr == nil {
			path = abs
		}
		return adapters.Install{Path: path}, nil
	}
	if strings.ContainsRune(bin, '/') {
		if fi, serr := os.Stat(bin); serr == nil {
			what := "is not executable"
			if fi.IsDir() {
				what = "is a directory"
			}
			return adapters.Install{}, events.NewError(events.BinNotInstalled, events.ReasonNotExecutable,
				"fix the file's permissions (chmod +x) or check --acp-command", "%s %s", bin, what)
		}
	}
	return adapters.Install{}, events.NewError(events.BinNotInstalled, events.ReasonNotFound,
		"install the ACP agent, or give its full path in --acp-command", "%s not found (the program of --acp-command)", bin)
}

// CheckRequest implements adapters.RequestChecker: an ACP run needs a
// command, speaks JSON-RPC over pipes (not a terminal: --tty is refused),
// carries no system prompt (invalid_input/bad_request), and takes a prompt of at most MaxPromptBytes. A request without a prompt
// (nor --schema) is left to Command, which refuses it: a live session's
// request has none (its turns are checked one by one: Live.Check).
func (a *Adapter) CheckRequest(req adapters.Request) error {
	if req.Bin == "" {
		_, err := a.Detect(context.Background(), "")
		return err
	}
	if req.TTY {
		return events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"run it without --tty: ACP is JSON-RPC over pipes", "--tty cannot carry the Agent Client Protocol (a terminal echoes and rewrites what it carries)")
	}
	if req.SystemPrompt != "" || req.AppendSystemPrompt != "" {
		// ACP has no system prompt: only some agents read one from
		// session/new's _meta (claude-agent-acp), each its own way.
		return adapters.NoSystemPrompt("an ACP agent", "a system prompt (--system-prompt, --append-system-prompt): the Agent Client Protocol has no field for one; give it to the agent through its own configuration")
	}
	if req.Prompt == "" && req.Schema == nil {
		return nil
	}
	_, err := adapters.PromptWithSchema(Name, req, MaxPromptBytes)
	return err
}

// Command implements adapters.Adapter: the caller's command as given. The
// prompt goes in session/prompt, not on the command line.
func (a *Adapter) Command(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	if err := a.CheckRequest(req); err != nil {
		return adapters.Command{}, err
	}
	if _, err := adapters.PromptWithSchema(Name, req, MaxPromptBytes); err != nil {
		return adapters.Command{}, err
	}
	return adapters.Command{Path: inst.Path, Args: append([]string(nil), req.Args...)}, nil
}

// NewDecoder implements adapters.Adapter: the decoder of the agent's
// updates and, for a live run, the conversation that leads the agent
// (adapters.Conversation).
func (a *Adapter) NewDecoder(req adapters.Request) normalize.Decoder {
	c := &conversation{peer: &peer{req: req}}
	c.Decoder = acpnorm.New(acpnorm.Options{
		Resume: req.Resume, Model: req.Model, Name: Name, Level: string(req.Permission.OrDefault()),
		Allow: allowed(req, a.Info()),
	})
	return c
}

// allowed is the rule both the decoder and the client answer the agent's
// permission requests with: what hub's watch lets through (ToolCheck), but
// a call of kind other (ACP's other, think, switch_mode, or none given)
// only under full. The watch lets other through at read-only (a CLI's
// todo list); an ACP agent asks only for what it deems an effect
// (OpenCode's external_directory, a write outside its directory, has kind
// other and names its path as "filepath", which hub's path check does not
// read).
func allowed(req adapters.Request, info adapters.Info) func(events.ToolStarted) bool {
	check := adapters.ToolCheck(req, info)
	full := req.Permission.OrDefault() == grant.Full
	return func(st events.ToolStarted) bool {
		return (full || st.Kind != events.ToolOther) && check(st) == nil
	}
}
