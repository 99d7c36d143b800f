// Package opencode is hub's adapter for the OpenCode CLI (npm package
// opencode-ai): `opencode run --format json`. Decoding lives in
// normalize/opencode.
package opencode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/normalize"
	ocnorm "github.com/hubcli/hub/normalize/opencode"
)

// Name is the agent's name in hub.
const Name = "opencode"

// MinVersion is the oldest OpenCode hub supports: 1.18.18, the oldest
// version its contract tests (TestReal) were run and passed on
// (2026-12-01), which scripts/test.sh (CI) runs them on again after the
// pinned TestedVersion (scripts/install-agents.sh --min). Its JSON output is
// 1.18.33's, line type for line type and field for field, in the scenarios
// of testdata/opencode (see its README). 1.18.14, 1.18.10 and 1.18.3 failed
// them: they retry a 5xx (1.18.14 a 429 too) without end and silently
// (1.18.10: 245 model calls in 40 s with retry-after-ms 100), where 1.18.33
// gives up after 5 retries.
const MinVersion = "1.18.18"

// TestedVersion is the newest OpenCode hub's tests run on: the version
// scripts/install-agents.sh pins, recorded in testdata/opencode on 2026-11-30.
const TestedVersion = "1.18.33"

// MaxPromptBytes is the largest prompt hub sends to OpenCode: 16 MiB.
const MaxPromptBytes = 16 << 20

// Adapter runs OpenCode. Name, Info and Detect come from adapters.Base. Use
// the registered value (adapters.Lookup); the zero Adapter builds commands
// and decoders but has no Info.
type Adapter struct{ adapters.Base }

var _ adapters.Adapter = (*Adapter)(nil)

func init() { adapters.Register(&Adapter{adapters.NewBase(info)}) }

// info describes OpenCode. Detect runs `opencode --version`, which prints
// "1.18.33".
var info = adapters.Info{
	Name:          Name,
	Binary:        "opencode",
	Package:       "opencode-ai",
	MinVersion:    MinVersion,
	InstallHint:   "npm i -g opencode-ai",
	TestedVersion: TestedVersion,
	ReportsCost:   true,
	LoginHint:     "run `opencode auth login`",
	Grants: map[grant.Level]grant.Rule{
		grant.None: {How: grant.Native, Means: `an agent of hub's own (--agent=hub-none) with permission {"*":"deny"}: no tool is offered` + untrustedMeans},
		grant.ReadOnly: {How: grant.Native, Means: `--agent=hub-read-only: {"*":"deny"} but read, glob, grep and list` + untrustedMeans,
			Note: "reads outside --cwd are denied (external_directory), but not in the rest of its git worktree, nor through a link"},
		grant.WorkspaceWrite: {How: grant.Native, Means: `--agent=hub-workspace-write: {"*":"deny"} but read, glob, grep, list, edit (write, edit, patch) and todowrite; external_directory denied; no bash` + untrustedMeans,
			Note: "OpenCode checks paths by their letters and lets writes through anywhere in the git worktree, so a --cwd holding a link that could lead outside it, or one below the top of its git worktree, is refused before the run; bash is not granted (a shell redirect escapes OpenCode's directory check)"},
		grant.Full: {How: grant.Native, Means: `--agent=hub-full: {"*":"allow"}`},
	},
	MaxPromptBytes: MaxPromptBytes,
}

// Command implements adapters.Adapter. The argv is
//
//	opencode run --format json --title=T [--model=P/M] [--session=S] --agent=hub-LEVEL
//
// with OPENCODE_CONFIG_CONTENT defining that agent and its permission
// rules (permissionRules; hub-final-answer for the final-answer resume),
// and the prompt goes on stdin, which hub then closes. OpenCode reads stdin
// when it is not a terminal and passes it on byte for byte, while a prompt
// given in argv is rewritten (1.18.33 wraps an argument holding a space in
// double quotes and escapes the quotes inside it); stdin also has no argv
// length limit and can never be read as a flag. Values use the --flag=value
// form for the same reason. --title stops OpenCode from spending an
// unreported model call on generating a session title. A prompt over
// MaxPromptBytes is refused as invalid_input/prompt_too_large; an empty one as
// invalid_input/bad_request. Under workspace-write, a working directory
// holding a symbolic link that leads outside it is
// permission_denied/effect_not_granted (grant.CheckLinks): OpenCode's
// directory check does not resolve links.
func (a *Adapter) Command(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	return a.command(req, inst, false)
}

// command is the process of a one-shot run (Command) or, live, of a live
// session (SessionCommand: `opencode acp`, the prompts sent as turns): the
// same checks of --cwd, environment and inline config, which live also
// makes hub's agent the default one (default_agent: ACP's session takes
// it) and rids of the hidden title agent (a session/new has no --title).
func (*Adapter) command(req adapters.Request, inst adapters.Install, live bool) (adapters.Command, error) {
	var args []string
	var prompt string
	if live {
		args = []string{"acp"}
	} else {
		var err error
		if prompt, err = adapters.PromptWithSchema(Name, req, MaxPromptBytes); err != nil {
			return adapters.Command{}, err
		}
		// --print-logs --log-level=ERROR: OpenCode says only in its log (on
		// stderr) why a model call failed while it retries it; hub reads those
		// lines (normalize/opencode.Decoder.DecodeStderr). A clean run logs
		// nothing at that level.
		args = []string{"run", "--format", "json", "--title=" + title(strings.TrimPrefix(req.Prompt, adapters.InlineFiles(req.Files, ""))), "--print-logs", "--log-level=ERROR"}
		if req.Model != "" {
			args = append(args, "--model="+req.Model)
		}
		if req.Resume != "" {
			args = append(args, "--session="+req.Resume)
		}
	}
	level := req.Permission.OrDefault()
	if level != grant.Full {
		if err := checkPlugins(req.Cwd); err != nil {
			return adapters.Command{}, err
		}
	}
	if level == grant.WorkspaceWrite {
		if err := grant.CheckLinks(Name, req.Cwd); err != nil {
			return adapters.Command{}, err
		}
		if err := checkWorktree(req.Cwd); err != nil {
			return adapters.Command{}, err
		}
	}
	name, rules, about := "hub-"+string(level), permissionRules(level), "hub's grant: --permission "+string(level)
	if live && req.Approve && level != grant.Full {
		rules, about = approvalRules(level), about+"; the rest asked of hub's approver"
	}
	if req.NoTools {
		name, rules, about = finalAgent, `{"*":"ask"}`, "hub's final-answer resume: no tool may run"
	}
	var files adapters.TempFiles
	system, appended, err := adapters.SystemPromptFiles(&files, req)
	if err != nil {
		return adapters.Command{}, err
	}
	// A run must not update the binary under hub's feet.
	cmd := adapters.Command{Path: inst.Path, Args: append(args, "--agent="+name), Stdin: []byte(prompt), Env: []string{"OPENCODE_DISABLE_AUTOUPDATE=1"}}
	inline := withAgent(adapters.Getenv(req.Env, "OPENCODE_CONFIG_CONTENT"), name, rules, about, system)
	inline = withInstructions(inline, appended)
	if live {
		cmd.Args, cmd.Stdin = args, nil
		inline = asDefault(inline, name)
	}
	cmd.EnvLast = []string{"OPENCODE_CONFIG_CONTENT=" + inline}
	if level != grant.Full {
		// The working directory's own config (opencode.json, .opencode/
		// with its plugins, which are code OpenCode runs at start) is
		// not loaded: a repository hub is asked to look at must not run
		// its code, nor widen the grant.
		cmd.EnvLast = append(cmd.EnvLast, "OPENCODE_DISABLE_PROJECT_CONFIG=1")
	}
	return adapters.WithTempFiles(cmd, nil, &files)
}

// untrustedMeans is how the grants below full keep the working directory's
// own config out (see Command).
const untrustedMeans = "; OPENCODE_DISABLE_PROJECT_CONFIG=1 (the project's opencode.json and .opencode plugins are not loaded)"

// realDir is dir ("" for hub's) as an absolute path, links resolved where
// it exists: where OpenCode, started there, finds itself.
func realDir(dir string) string {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}

// checkPlugins refuses a level below full in a working directory (dir, ""
// for hub's) where OpenCode would find the project's own plugins: a
// .opencode/plugin or .opencode/plugins directory in it or in a directory
// above it, up to the top of its git worktree (or to / outside git), where
// OpenCode looks; the home directory's is the user's own and is not
// counted. They are code, run when loaded, and OpenCode 1.18.33
// loaded them in about one run in three even with
// OPENCODE_DISABLE_PROJECT_CONFIG=1 (TestRealPermissionProjectCode). The
// error is permission_denied/effect_not_granted naming the directory.
func checkPlugins(dir string) error {
	abs := realDir(dir)
	home, _ := os.UserHomeDir() // ~/.opencode is the user's own, trusted
	for d := abs; ; d = filepath.Dir(d) {
		for _, sub := range []string{"plugin", "plugins"} {
			if d == home {
				break
			}
			p := filepath.Join(d, ".opencode", sub)
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
					"remove or rename "+p+" if you do not need it, or run with --permission full (with --yes) if you trust its code",
					"%s holds OpenCode plugins, code that OpenCode may run at start below --permission full despite hub turning project config off; hub does not run it", p)
			}
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil || d == filepath.Dir(d) {
			return nil
		}
	}
}

// checkWorktree refuses workspace-write in a working directory (dir, ""
// for hub's) that is not the top of its git worktree: OpenCode's
// external_directory rule lets through any path in the project's worktree
// (`git rev-parse --show-toplevel`, 1.18.33), so a write anywhere in a
// repository whose subdirectory is --cwd, or above a repository whose
// .git/config sets core.worktree higher, would not be refused. The
// error is permission_denied/effect_not_granted naming the worktree.
func checkWorktree(dir string) error {
	abs := realDir(dir)
	refuse := func(top string) error {
		return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
			"point --cwd at the top of the git worktree ("+top+"), or use --permission full (with --yes)",
			"opencode lets writes through anywhere in the git worktree %s, which holds more than --cwd %s: --permission workspace-write cannot be held, so hub does not run it", top, abs)
	}
	// git takes the nearest .git, --cwd's own first.
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			if d != abs {
				return refuse(d)
			}
			if worktree := coreWorktree(filepath.Join(d, ".git")); worktree != "" {
				return refuse(worktree)
			}
			return nil
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// coreWorktree is the core.worktree a repository's config sets ("" when
// none, or when it cannot be read): git names the worktree's top there.
// dotGit is the .git directory, or a .git file that names it ("gitdir: …",
// a linked worktree or a submodule).
func coreWorktree(dotGit string) string {
	if b, err := os.ReadFile(dotGit); err == nil {
		if d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
			d = strings.TrimSpace(d)
			if !filepath.IsAbs(d) {
				d = filepath.Join(filepath.Dir(dotGit), d)
			}
			dotGit = d
		}
	}
	cfg, err := os.ReadFile(filepath.Join(dotGit, "config"))
	if err != nil {
		return ""
	}
	core := false
	for _, line := range strings.Split(string(cfg), "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "[") {
			core = strings.EqualFold(strings.Trim(l, "[] \t"), "core")
			continue
		}
		if k, v, ok := strings.Cut(l, "="); core && ok && strings.EqualFold(strings.TrimSpace(k), "worktree") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// finalAgent is the OpenCode agent of hub's final-answer resume, with
// permission {"*": "ask"}: its tools stay in the model request, and
// `opencode run`, which cannot ask anyone, rejects every call without
// running it (measured with 1.18.33, also when the user's config allows
// them).
const finalAgent = "hub-final-answer"

// permissionRules is the permission ruleset (OpenCode config JSON, in
// order) of the agent hub runs for level (see info.Grants). OpenCode
// applies the last rule that matches a call, so "*" comes first; no rule is
// "ask", which `opencode run` answers by rejecting the call and ending the
// run (a live session with an approver asks: approvalRules). An agent's
// rules win over the user's and the project's top-level permission config
// (measured with 1.18.33).
func permissionRules(level grant.Level) string {
	const reads = `"read":"allow","glob":"allow","grep":"allow","list":"allow"`
	switch level {
	case grant.None:
		return `{"*":"deny"}`
	case grant.ReadOnly:
		return `{"*":"deny",` + reads + `,"external_directory":"deny"}`
	case grant.WorkspaceWrite:
		return `{"*":"deny",` + reads + `,"edit":"allow","todowrite":"allow","todoread":"allow","external_directory":"deny"}`
	}
	return `{"*":"allow"}`
}

// approvalRules is the permission ruleset of hub's agent for level in a
// live session with an approver (Request.Approve), below full: what the
// level allows stays allow, and the rest is "ask" instead of "deny", which
// `opencode acp` puts to hub's client as session/request_permission (the
// approver's: adapters/acp's Approvals). task stays deny: a sub-agent runs
// under OpenCode's own agents' rules, not hub's, so allowing the call
// would allow everything it does unasked (and its calls are not in the
// session's stream). OpenCode's question tool is not offered in an ACP
// session (1.18.33 offers it to the app, cli and desktop clients only).
func approvalRules(level grant.Level) string {
	const reads = `"read":"allow","glob":"allow","grep":"allow","list":"allow"`
	switch level {
	case grant.None:
		return `{"*":"ask","task":"deny"}`
	case grant.ReadOnly:
		return `{"*":"ask",` + reads + `,"external_directory":"ask","task":"deny"}`
	case grant.WorkspaceWrite:
		return `{"*":"ask",` + reads + `,"edit":"allow","todowrite":"allow","todoread":"allow","external_directory":"ask","task":"deny"}`
	}
	return `{"*":"allow"}`
}

// withAgent returns OpenCode inline config (OPENCODE_CONFIG_CONTENT, the
// config OpenCode merges last) that defines the primary agent name with
// the permission rules (a JSON object), merged into the inline config the
// caller set when that is a JSON object. The caller's values are kept as
// they were written: the order of a permission object's keys is its
// meaning. promptFile, when not "", is the absolute path of the agent's
// system prompt (Request.SystemPrompt), given as "{file:PATH}": OpenCode
// substitutes the file's text when it loads the config, so the text is in
// no environment variable, and an agent's prompt replaces the provider's
// default one (1.18.33's LLMRequestPrep).
func withAgent(inline, name, rules, about, promptFile string) string {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal([]byte(inline), &cfg); err != nil || cfg == nil {
		cfg = map[string]json.RawMessage{}
	}
	var agents map[string]json.RawMessage
	if err := json.Unmarshal(cfg["agent"], &agents); err != nil || agents == nil {
		agents = map[string]json.RawMessage{}
	}
	def := map[string]any{"mode": "primary", "permission": json.RawMessage(rules), "description": about}
	if promptFile != "" {
		def["prompt"] = "{file:" + promptFile + "}"
	}
	agent, _ := json.Marshal(def)
	agents[name] = agent
	cfg["agent"], _ = json.Marshal(agents)
	b, _ := json.Marshal(cfg) // maps of JSON values always marshal
	return string(b)
}

// withInstructions returns inline config (withAgent's) with the file path
// added to its instructions, after the caller's: OpenCode adds each
// instructions file's text to the system prompt, after the agent's
// (Request.AppendSystemPrompt). path "" leaves inline as it is.
func withInstructions(inline, path string) string {
	if path == "" {
		return inline
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal([]byte(inline), &cfg); err != nil || cfg == nil {
		return inline // not reached: withAgent's is an object
	}
	var list []json.RawMessage
	_ = json.Unmarshal(cfg["instructions"], &list) // a caller's that is no array is replaced
	p, _ := json.Marshal(path)
	cfg["instructions"], _ = json.Marshal(append(list, p))
	b, _ := json.Marshal(cfg)
	return string(b)
}

// asDefault returns inline config (withAgent's) with default_agent set to
// name, the agent an ACP session of `opencode acp` starts in (its mode;
// 1.18.33 takes the default agent's), and the hidden title agent disabled:
// OpenCode names a new session with an extra model call of that agent,
// which no ACP message reports (a one-shot run passes --title instead).
func asDefault(inline, name string) string {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal([]byte(inline), &cfg); err != nil || cfg == nil {
		return inline
	}
	cfg["default_agent"], _ = json.Marshal(name)
	var agents map[string]json.RawMessage
	if err := json.Unmarshal(cfg["agent"], &agents); err != nil || agents == nil {
		agents = map[string]json.RawMessage{}
	}
	agents["title"] = json.RawMessage(`{"disable":true}`)
	cfg["agent"], _ = json.Marshal(agents)
	b, _ := json.Marshal(cfg)
	return string(b)
}

// title is the session title: the prompt's first line, at most 60 bytes.
func title(prompt string) string {
	t := strings.TrimSpace(prompt)
	if i := strings.IndexAny(t, "\r\n"); i >= 0 {
		t = t[:i]
	}
	t = string(bytes.ToValidUTF8([]byte(normalize.Shorten(t, 60)), nil))
	t = strings.ReplaceAll(t, "\x00", "")
	if t == "" {
		t = "hub run"
	}
	return t
}

// NewDecoder implements adapters.Adapter.
func (*Adapter) NewDecoder(req adapters.Request) normalize.Decoder {
	return ocnorm.New(req.Model, !req.NoFailFast)
}
