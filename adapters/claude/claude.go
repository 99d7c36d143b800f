// Package claude is hub's adapter for Claude Code (npm package
// @anthropic-ai/claude-code): `claude -p --output-format stream-json
// --verbose --include-partial-messages`. Decoding lives in normalize/claude.
package claude

import (
	"fmt"
	"os"
	"strings"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/normalize"
	clnorm "github.com/hubcli/hub/normalize/claude"
)

// Name is the agent's name in hub.
const Name = "claude"

// MinVersion is the oldest Claude Code hub supports: 2.1.200, the oldest
// version its contract tests (TestReal) were run and passed on
// (2026-12-01), which scripts/test.sh (CI) runs them on again after the
// pinned TestedVersion (scripts/install-agents.sh --min). Its stream-json
// differs from 2.1.328's in fields hub reads around (an API error's
// synthetic assistant message has no api_error_status, and its result says
// terminal_reason "completed"): testdata/claude/min-* are its transcripts.
// Older ones failed the contract tests: hub got no HTTP status from
// 2.1.100's result of a 401 it had retried, and 2.1.0 makes hidden "Warmup"
// model calls and prints no api_retry lines.
const MinVersion = "2.1.200"

// TestedVersion is the newest Claude Code hub's tests run on: the version
// scripts/install-agents.sh pins, recorded in testdata/claude on 2026-11-30.
const TestedVersion = "2.1.328"

// MaxPromptBytes is the largest prompt hub sends to Claude Code: 16 MiB.
const MaxPromptBytes = 16 << 20

// Adapter runs Claude Code. Name, Info and Detect come from adapters.Base. Use
// the registered value (adapters.Lookup); the zero Adapter builds commands
// and decoders but has no Info.
type Adapter struct{ adapters.Base }

var _ adapters.Adapter = (*Adapter)(nil)

func init() { adapters.Register(&Adapter{adapters.NewBase(info)}) }

// info describes Claude Code. Detect runs `claude --version`, which prints
// "2.1.328 (Claude Code)".
var info = adapters.Info{
	Name:          Name,
	Binary:        "claude",
	Package:       "@anthropic-ai/claude-code",
	MinVersion:    MinVersion,
	InstallHint:   "npm i -g @anthropic-ai/claude-code",
	TestedVersion: TestedVersion,
	ReportsCost:   true,
	LoginHint:     "run `claude setup-token` (or `claude` and /login)",
	AnswerTool:    "StructuredOutput",
	Grants: map[grant.Level]grant.Rule{
		grant.None: {How: grant.Native, Means: "--tools= (no tool is offered to the model)" + untrustedMeans},
		grant.ReadOnly: {How: grant.Native, Means: "--tools=Read,Glob,Grep --permission-mode=dontAsk" + untrustedMeans,
			Note: "reads are confined to --cwd as well: Claude Code denies a read outside it"},
		grant.WorkspaceWrite: {How: grant.Native, Means: "--permission-mode=acceptEdits" + untrustedMeans,
			Note:     "Claude Code accepts edits and the Bash commands it can check (redirects, rm, cp…) under --cwd, symbolic links resolved, and denies the rest, commands it cannot parse included (tool.finished status denied)",
			Confined: []events.ToolKind{events.ToolShell, events.ToolTask}},
		grant.Full: {How: grant.Native, Means: "--permission-mode=bypassPermissions; as root, which Claude Code refuses it to, --permission-mode=acceptEdits --allowedTools=" + rootFullTools + " --add-dir=/",
			Note: "as root, MCP tools still need approval and are denied"},
	},
	MaxPromptBytes: MaxPromptBytes,
}

// untrustedMeans is how the grants below full keep the working directory's
// own settings and MCP servers out (see permissionArgs).
const untrustedMeans = " --setting-sources=user --strict-mcp-config (the project's settings, hooks and MCP servers are not loaded)"

// rootFullTools are the tools pre-approved for --permission full when hub
// runs as root: Claude Code refuses bypassPermissions to root ("cannot be
// used with root/sudo privileges for security reasons", 2.1.328) unless
// IS_SANDBOX is set, which would claim a sandbox hub does not provide.
// Pre-approved tools still may not write through a symbolic link that
// leads outside the working directories ("… resolves through a symlink to
// …, which is outside the allowed working directories", Write and Bash
// alike, 2.1.328): --add-dir=/ makes every directory a working one.
const rootFullTools = "Bash,Edit,Write,NotebookEdit,WebFetch,WebSearch,Read,Glob,Grep,Task,Agent"

// Command implements adapters.Adapter. The argv is
//
//	claude -p --output-format stream-json --verbose --include-partial-messages [--model=M] [--resume=S] PERMISSION…
//
// where PERMISSION… are the level's flags (permissionArgs, info.Grants),
// and the prompt goes on stdin, which hub then closes: -p reads the prompt
// from stdin when none is given in argv, byte for byte, with no argv length
// limit and no way to be read as a flag. Values use the --flag=value form so
// one starting with "-" stays a value. --include-partial-messages makes text
// stream as text.delta and gives per-call output tokens. A prompt over
// MaxPromptBytes is refused as invalid_input/prompt_too_large.
func (*Adapter) Command(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	if err := adapters.CheckPrompt(Name, req.Prompt, MaxPromptBytes); err != nil {
		return adapters.Command{}, err
	}
	var schema string
	if req.Schema != nil {
		var err error
		if schema, err = schemaArg(req.Schema); err != nil {
			return adapters.Command{}, err
		}
	}
	cmd, err := runCommand(req, inst, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages")
	if err != nil {
		return cmd, err
	}
	if schema != "" {
		cmd.Args = append(cmd.Args, "--json-schema="+schema)
	}
	cmd.Stdin = []byte(req.Prompt)
	return cmd, nil
}

// runCommand is the command of every Claude Code process hub starts for
// req, one-shot or live (SessionCommand): head, then model, session, the
// system prompt's files and the permission level's flags; and its
// environment. Request.SystemPrompt and Request.AppendSystemPrompt go
// through files of hub's (adapters.TempFiles, removed by the command's
// Cleanup): --system-prompt-file and --append-system-prompt-file (hidden
// from --help in 2.1.328, read whole: no argv limit). A replaced prompt
// still starts with Claude Code's one-line identity block ("You are a
// Claude agent, built on Anthropic's Claude Agent SDK.") and is followed
// by its environment section (working directory, platform, model, date),
// which Claude Code always sends; on --resume Claude Code reuses the prompt it first rendered
// (--system-prompt-snapshot, on by default). Errors are internal: a file
// that could not be written.
func runCommand(req adapters.Request, inst adapters.Install, head ...string) (adapters.Command, error) {
	var files adapters.TempFiles
	system, appended, err := adapters.SystemPromptFiles(&files, req)
	if err != nil {
		return adapters.Command{}, err
	}
	args := head
	if system != "" {
		args = append(args, "--system-prompt-file="+system)
	}
	if appended != "" {
		args = append(args, "--append-system-prompt-file="+appended)
	}
	if req.Model != "" {
		args = append(args, "--model="+req.Model)
	}
	if req.Resume != "" {
		args = append(args, "--resume="+req.Resume)
	}
	if level := req.Permission.OrDefault(); req.Approve && level != grant.Full {
		args = append(args, approvalArgs...)
	} else {
		args = append(args, permissionArgs(level, os.Geteuid() == 0)...)
	}
	// A run must not update the binary under hub's feet.
	env := []string{"DISABLE_AUTOUPDATER=1"}
	if req.AgentRetries != nil {
		env = append(env, fmt.Sprintf("CLAUDE_CODE_MAX_RETRIES=%d", *req.AgentRetries))
	}
	return adapters.WithTempFiles(adapters.Command{Path: inst.Path, Args: args, Env: env}, nil, &files)
}

// approvalArgs are a run's permission flags when it has an approver
// (hub.WithApprover) and a grant below full: Claude Code asks hub about
// every call of every tool it is offered (--permission-prompt-tool stdio,
// and an ask rule for each: without one it runs reads, and the Bash
// commands it deems safe, unasked; "dontAsk" would deny the asked ones
// instead), and hub answers what the grant allows itself and puts the rest
// to the approver (recorded with 2.1.328 in testdata/approvals/claude:
// read-cwd, askall-read-cwd, bash-echo, dontask-askall-write). The
// project's settings and MCP servers stay out, as below full.
var approvalArgs = []string{"--tools=" + approvalTools, "--permission-mode=default", "--permission-prompt-tool", "stdio",
	"--settings", `{"permissions":{"ask":["` + strings.ReplaceAll(approvalTools, ",", `","`) + `"]}}`,
	"--setting-sources=user", "--strict-mcp-config"}

// approvalTools are the tools a run with an approver offers.
const approvalTools = "Read,Glob,Grep,Write,Edit,Bash"

// permissionArgs map a permission level onto Claude Code's flags (see
// info.Grants; measured with 2.1.328): --tools is the real allowlist of
// built-in tools (--allowedTools only pre-approves, it restricts nothing),
// and the permission mode decides what needs an approval, which in -p mode
// nobody gives: the call is denied and the model told so.
//
// Below full, the working directory's own settings (.claude/settings.json
// and settings.local.json: hooks, which run commands, and permission rules)
// and MCP servers (.mcp.json) are not loaded: a repository hub is asked to
// look at must not run its code, nor widen the grant. The user's own
// settings still load.
func permissionArgs(level grant.Level, root bool) []string {
	untrusted := []string{"--setting-sources=user", "--strict-mcp-config"}
	switch level {
	case grant.None:
		return append([]string{"--tools="}, untrusted...)
	case grant.ReadOnly:
		return append([]string{"--tools=Read,Glob,Grep", "--permission-mode=dontAsk"}, untrusted...)
	case grant.WorkspaceWrite:
		return append([]string{"--permission-mode=acceptEdits"}, untrusted...)
	case grant.Full:
		if root {
			return []string{"--permission-mode=acceptEdits", "--allowedTools=" + rootFullTools, "--add-dir=/"}
		}
		return []string{"--permission-mode=bypassPermissions"}
	}
	return nil // not reached: hub.Run refuses a level without a grant
}

// NewDecoder implements adapters.Adapter.
func (*Adapter) NewDecoder(req adapters.Request) normalize.Decoder {
	return clnorm.New(req.Model, !req.NoFailFast)
}
