// Package pi is hub's adapter for the pi coding agent (npm package
// @mariozechner/pi-coding-agent): `pi --print --mode json`. Decoding lives in
// normalize/pi.
package pi

import (
	_ "embed"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/normalize"
	pinorm "github.com/hubcli/hub/normalize/pi"
)

// Name is the agent's name in hub.
const Name = "pi"

// MinVersion is the oldest pi hub supports: 0.70.6, the oldest version its
// contract tests (TestReal) were run and passed on (2026-12-01), which
// scripts/test.sh (CI) runs them on again after the pinned TestedVersion
// (scripts/install-agents.sh --min). Its JSON output is 0.73.1's, event for
// event and field for field, in every scenario of testdata/pi (the session
// header line, auto_retry_* and compaction_* events, the leading HTTP status
// in errorMessage: what hub relies on); see its README. 0.70.0 failed them:
// it ignores settings.json's retry.provider.maxRetries, so the provider SDK
// retries each failed call twice where hub's tests turn retries off.
const MinVersion = "0.70.6"

// TestedVersion is the newest pi hub's tests run on: the version
// scripts/install-agents.sh pins, recorded in testdata/pi on 2026-11-30.
const TestedVersion = "0.73.1"

// MaxPromptBytes is the largest prompt hub sends to pi: 16 MiB.
const MaxPromptBytes = 16 << 20

// maxArgBytes is the largest prompt hub puts in argv. Linux refuses a single
// argument of MAX_ARG_STRLEN (128 KiB, including its NUL) or more with E2BIG;
// hub stays well under it.
const maxArgBytes = 100 << 10

// Adapter runs pi. Name, Info and Detect come from adapters.Base. Use
// the registered value (adapters.Lookup); the zero Adapter builds commands
// and decoders but has no Info.
type Adapter struct{ adapters.Base }

var _ adapters.Adapter = (*Adapter)(nil)

func init() { adapters.Register(&Adapter{adapters.NewBase(info)}) }

// info describes pi. Detect runs `pi --version`, which prints "0.73.1" on
// stderr (pi sends everything but its JSON stream to stderr) and nothing on
// stdout; the probe reads both.
var info = adapters.Info{
	Name:          Name,
	Binary:        "pi",
	Package:       "@mariozechner/pi-coding-agent",
	MinVersion:    MinVersion,
	InstallHint:   "npm i -g @mariozechner/pi-coding-agent",
	TestedVersion: TestedVersion,
	ReportsCost:   true,
	RetryLimits:   "pi takes its retry counts only from settings.json: hub stops it at retry notice N+1, but the provider SDK's own retries inside each attempt are not seen; set retry.provider.maxRetries in pi's settings.json",
	LoginHint:     "run `pi` and log in with /login",
	Grants: map[grant.Level]grant.Rule{
		grant.None:     {How: grant.Native, Means: "--no-tools --no-extensions --offline"},
		grant.ReadOnly: {How: grant.Native, Means: "--tools " + readTools + " --no-extensions --offline", Note: "pi's read tools read outside --cwd too"},
		grant.WorkspaceWrite: {How: grant.Native, Means: "--tools " + writeTools + " --no-extensions --offline -e <hub's extension>",
			Note: "pi has no sandbox, so no shell: hub's extension blocks a write or edit whose path, symbolic links resolved, is outside --cwd, before it runs"},
		grant.Full: {How: grant.Native, Means: "pi's default tools and the extensions it finds (the user's and the project's)"},
	},
	MaxPromptBytes: MaxPromptBytes,
}

// The tools of pi's read-only and workspace-write grants: --tools is an
// allowlist that applies to built-in, extension and custom tools alike.
const (
	readTools  = "read,grep,find,ls"
	writeTools = readTools + ",edit,write"
)

// Command implements adapters.Adapter. The argv is
//
//	pi --print --mode json [--provider P] [--model M] [--session S] TOOLS… PROMPT
//
// where TOOLS… are the level's tool flags (toolArgs, info.Grants).
// --print makes pi exit after answering (without it pi stays interactive).
// Request.Model "provider/model" becomes --provider and --model; a model
// without "/" is passed as --model alone (pi then also accepts its own
// "provider/id" and ":thinking" forms). Request.Resume becomes --session,
// which takes a session id (or a unique prefix of one) or a session file.
// pi takes the value after each of these flags whatever it looks like.
//
// pi 0.73.1 has no "--" and reads any argument starting with "-" as an
// option and one starting with "@" as a file to attach, so a prompt
// starting with either, or one too long for one argument (maxArgBytes), goes
// on stdin instead, which hub then closes: pi reads a piped stdin in print
// mode and sends it as the prompt, with its leading and trailing whitespace
// trimmed (its readPipedStdin). Any other prompt is the last argument, byte
// for byte, and stdin is /dev/null.
//
// Errors: a prompt over MaxPromptBytes is invalid_input/prompt_too_large, an
// empty one invalid_input/bad_request; a model "/m" or "p/" is
// invalid_input/bad_model; a Resume that is not id-shaped is
// invalid_input/bad_session; under workspace-write or with an approver,
// hub's extension that cannot be written to the cache directory, or is
// there but could be changed by another user, is internal
// (extensionFile).
func (*Adapter) Command(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	prompt, err := adapters.PromptWithSchema(Name, req, MaxPromptBytes)
	if err != nil {
		return adapters.Command{}, err
	}
	var files adapters.TempFiles
	args, err := runArgs(req, &files)
	if err != nil {
		return adapters.WithTempFiles(adapters.Command{}, err, &files)
	}
	cmd := adapters.Command{Path: inst.Path, Args: append([]string{"--print", "--mode", "json"}, args...)}
	if argSafe(prompt) {
		cmd.Args = append(cmd.Args, prompt)
	} else {
		cmd.Stdin = []byte(prompt)
	}
	return adapters.WithTempFiles(cmd, nil, &files)
}

// runArgs are the arguments of every pi process hub starts for req, one-shot
// or live (SessionCommand): model, session, the system prompt's files and
// the permission level's tool flags, or with an approver below full hub's
// gate's (approvalArgs; in a one-shot command, print mode, pi gives
// extensions no UI, and the gate blocks every call). Request.SystemPrompt
// and Request.AppendSystemPrompt are written to files of files
// (adapters.SystemPromptFiles) whose absolute paths go to --system-prompt
// and --append-system-prompt: pi 0.73.1 reads a value that names an
// existing file as that file and any other as text (resolvePromptInput),
// so the text itself, which could be a path, never goes in argv. pi still
// adds its context files, skills, date and working directory after a
// replaced prompt. Errors are Command's: bad_model, bad_session, internal.
func runArgs(req adapters.Request, files *adapters.TempFiles) ([]string, error) {
	var args []string
	system, appended, err := adapters.SystemPromptFiles(files, req)
	if err != nil {
		return nil, err
	}
	if system != "" {
		args = append(args, "--system-prompt", system)
	}
	if appended != "" {
		args = append(args, "--append-system-prompt", appended)
	}
	if provider, model, ok := strings.Cut(req.Model, "/"); ok {
		if provider == "" || model == "" {
			return nil, events.NewError(events.BinInvalidInput, events.ReasonBadModel,
				"pass --model provider/model, e.g. anthropic/claude-haiku-4-5 (`pi --list-models`)",
				"--model %q: want provider/model with both parts", req.Model)
		}
		args = append(args, "--provider", provider, "--model", model)
	} else if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	if req.Resume != "" && !sessionID.MatchString(req.Resume) {
		return nil, events.NewError(events.BinInvalidInput, events.ReasonBadSession,
			"pass the session_id of an earlier pi run (run.finished.session_id)",
			"--resume %q is not a whole pi session id (a UUID); hub passes pi neither session file paths nor id prefixes", req.Resume)
	}
	if req.Resume != "" {
		args = append(args, "--session", req.Resume)
	}
	level := req.Permission.OrDefault()
	var toolFlags []string
	if gated(req) {
		toolFlags, err = approvalArgs()
	} else {
		toolFlags, err = toolArgs(level)
	}
	if err != nil {
		return nil, err
	}
	if level != grant.Full {
		toolFlags = append(toolFlags, sessionDirArgs(req)...)
	}
	return append(args, toolFlags...), nil
}

// gated reports whether req's pi loads hub's approval gate (approvalArgs):
// the run has an approver and a grant below full (at full hub allows every
// call unasked, and pi runs as it is configured).
func gated(req adapters.Request) bool {
	return req.Approve && req.Permission.OrDefault() != grant.Full
}

// toolArgs map a permission level onto pi's tool flags (see info.Grants;
// measured with 0.73.1: pi drops unknown names from --tools silently, and
// the names here are its built-in ones). Below full, no extension is
// discovered (the project's .pi/extensions, the user's): an extension is
// code that runs in pi, outside any tool allowlist, and a repository hub is
// asked to look at must not run its own; nor are the packages of a
// settings.json installed (--offline): pi installs them at start with the
// settings' own npmCommand, which a project's .pi/settings.json sets too.
func toolArgs(level grant.Level) ([]string, error) {
	switch level {
	case grant.None:
		return []string{"--no-tools", "--no-extensions", "--offline"}, nil
	case grant.ReadOnly:
		return []string{"--tools", readTools, "--no-extensions", "--offline"}, nil
	case grant.WorkspaceWrite:
		ext, err := confineExtension()
		if err != nil {
			return nil, err
		}
		// -e loads hub's extension under --no-extensions too.
		return []string{"--tools", writeTools, "--no-extensions", "--offline", "-e", ext}, nil
	}
	return nil, nil
}

// sessionDirArgs pin pi's session directory, below full, to where pi keeps
// it by default (getDefaultSessionDir in 0.73.1's session-manager.js:
// <agent dir>/sessions/--<real cwd without its leading "/", "/" and ":"
// made "-">--), so that a project's .pi/settings.json sessionDir cannot
// choose where the run's transcript is written. A caller's
// PI_CODING_AGENT_SESSION_DIR already wins over the settings and is left
// alone; so is a run without HOME (pi then asks the password database).
func sessionDirArgs(req adapters.Request) []string {
	if adapters.Getenv(req.Env, "PI_CODING_AGENT_SESSION_DIR") != "" {
		return nil
	}
	home, dir := adapters.Getenv(req.Env, "HOME"), adapters.Getenv(req.Env, "PI_CODING_AGENT_DIR")
	switch {
	case dir == "" && home == "":
		return nil
	case dir == "":
		dir = filepath.Join(home, ".pi", "agent")
	case dir == "~":
		dir = home
	case strings.HasPrefix(dir, "~/"):
		dir = home + dir[1:]
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real // pi's process.cwd()
	}
	safe := "--" + strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(strings.TrimPrefix(cwd, "/")) + "--"
	return []string{"--session-dir", filepath.Join(dir, "sessions", safe)}
}

// confineTS is hub's pi extension for workspace-write (confine.ts).
//
//go:embed confine.ts
var confineTS []byte

// confineExtension returns the path of confine.ts on disk, where pi can
// load it (extensionFile). Errors are *events.Error (internal).
func confineExtension() (string, error) {
	return extensionFile("pi-workspace-write-", confineTS, "hub's pi extension for --permission workspace-write")
}

// sessionID is what hub passes to pi's --session: a whole session id, a
// UUID (pi 0.73.1 makes UUIDv7 ids). pi would read a path as a session file,
// and a prefix shared by sessions of the same minute as the first of them.
var sessionID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// argSafe reports whether pi's argument parser reads prompt as a message.
func argSafe(prompt string) bool {
	return len(prompt) <= maxArgBytes && !strings.HasPrefix(prompt, "-") && !strings.HasPrefix(prompt, "@")
}

// NewDecoder implements adapters.Adapter.
func (*Adapter) NewDecoder(req adapters.Request) normalize.Decoder {
	return pinorm.New(req.Model, !req.NoFailFast)
}
