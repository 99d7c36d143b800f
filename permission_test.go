package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// toolPart is an OpenCode tool part (what the fake scenario "tool" calls)
// of tool name with input, completed.
func toolPart(name, input string) string {
	return fmt.Sprintf(`{"type":"tool","tool":%q,"callID":"call_w1","state":{"status":"completed","input":%s,"output":"done"}}`, name, input)
}

// TestPermissionWatch runs the fake agent (OpenCode's dialect) calling one
// tool under each level, and checks that hub stops the run at a call the
// grant does not cover (before the agent goes on: its marker file is
// never written) and lets the others through. Paths through symbolic
// links are TestWatchPaths' (OpenCode is refused a working directory with
// a link that leads out).
func TestPermissionWatch(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path string) string { return toolPart("write", fmt.Sprintf(`{"filePath":%q,"content":"x"}`, path)) }
	tests := []struct {
		name  string
		level grant.Level
		part  string
		stop  bool // hub stops the run at the call (effect_not_granted)
	}{
		{"none/read", grant.None, toolPart("read", `{"filePath":"a.txt"}`), true},
		{"read-only/read", grant.ReadOnly, toolPart("read", `{"filePath":"/etc/hostname"}`), false},
		{"read-only/grep", grant.ReadOnly, toolPart("grep", `{"pattern":"x"}`), false},
		{"read-only/webfetch", grant.ReadOnly, toolPart("webfetch", `{"url":"http://127.0.0.1/"}`), false},
		{"read-only/write", grant.ReadOnly, write("a.txt"), true},
		{"read-only/bash", grant.ReadOnly, toolPart("bash", `{"command":"ls"}`), true},
		{"read-only/task", grant.ReadOnly, toolPart("task", `{"prompt":"x"}`), true},
		{"default is read-only", "", write("a.txt"), true},
		{"workspace-write/relative", grant.WorkspaceWrite, write("sub/a.txt"), false},
		{"workspace-write/absolute inside", grant.WorkspaceWrite, write(filepath.Join(cwd, "new", "deep", "a.txt")), false},
		{"workspace-write/edit inside", grant.WorkspaceWrite, toolPart("edit", fmt.Sprintf(`{"filePath":%q}`, filepath.Join(cwd, "sub", "..", "b.txt"))), false},
		{"workspace-write/absolute outside", grant.WorkspaceWrite, write(filepath.Join(outside, "a.txt")), true},
		{"workspace-write/dot-dot", grant.WorkspaceWrite, write("sub/../../escape.txt"), true},
		{"workspace-write/bash", grant.WorkspaceWrite, toolPart("bash", `{"command":"echo x > a.txt"}`), true},
		{"workspace-write/mcp", grant.WorkspaceWrite, toolPart("github_create_issue", `{}`), false}, // OpenCode names MCP tools like any other: kind other
		{"full/bash", grant.Full, toolPart("bash", `{"command":"rm -rf /nonexistent"}`), false},
		{"full/outside", grant.Full, write(filepath.Join(outside, "a.txt")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			marker := filepath.Join(t.TempDir(), "went-on")
			res := runFake(t, t.Context(), "tool", func(r *hub.Request) {
				r.Permission, r.Cwd = tt.level, cwd
				r.Env = []string{"HUB_FAKE_TOOL=" + tt.part, "HUB_FAKE_OUT=" + marker}
				if tt.stop {
					// Far longer than a stop takes: the marker shows
					// the agent was not let go on.
					r.Env = append(r.Env, "HUB_FAKE_HOLD="+(r.Limits.Timeout/2).String())
				}
			})
			_, err := os.Stat(marker)
			if !tt.stop {
				wantBin(t, res.fin, "", "")
				if err != nil {
					t.Errorf("the agent did not go on after the call: %v", err)
				}
				return
			}
			wantBin(t, res.fin, events.BinPermissionDenied, events.ReasonEffectNotGranted)
			if err == nil {
				t.Errorf("the agent went on after a call outside the grant (%s exists)", marker)
			}
			if res.fin.ToolCalls != 1 {
				t.Errorf("tool_calls = %d, want the 1 call the run was stopped at", res.fin.ToolCalls)
			}
		})
	}
}

// TestPermissionDeniedCount checks that a call the CLI refused by a rule
// is counted in run.finished, and that an ask OpenCode rejected (which ends
// its run) is permission_denied/tool_denied naming the tool.
func TestPermissionDeniedCount(t *testing.T) {
	t.Parallel()
	rule := `{"type":"tool","tool":"read","callID":"c1","state":{"status":"error","input":{"filePath":"/etc/x"},"error":"The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules [...]"}}`
	res := runFake(t, t.Context(), "tool", func(r *hub.Request) {
		r.Permission = grant.ReadOnly
		r.Env = []string{"HUB_FAKE_TOOL=" + rule}
	})
	wantBin(t, res.fin, "", "")
	if res.fin.ToolCallsDenied != 1 {
		t.Errorf("tool_calls_denied = %d, want 1", res.fin.ToolCallsDenied)
	}
	res = runFake(t, t.Context(), "denied", nil)
	wantBin(t, res.fin, events.BinPermissionDenied, events.ReasonToolDenied)
	if res.fin.ToolCallsDenied != 1 || !strings.Contains(res.fin.Error.Message, "bash") {
		t.Errorf("tool_calls_denied = %d, error %q: want 1, naming bash", res.fin.ToolCallsDenied, res.fin.Error.Message)
	}
}

// refuser is an agent that refuses read-only and knows no full: its
// grants are what Run checks before anything starts.
type refuser struct{ adapters.Adapter }

func (r refuser) Name() string { return "refuser" }

func (r refuser) Info() adapters.Info {
	info := r.Adapter.Info()
	info.Name = "refuser"
	info.Grants = map[grant.Level]grant.Rule{
		grant.None:     {How: grant.Native},
		grant.ReadOnly: {How: grant.Refused, Note: "use --permission none"},
	}
	return info
}

func init() {
	oc, err := adapters.Lookup("opencode")
	if err != nil {
		panic(err)
	}
	adapters.Register(refuser{oc})
}

// TestPermissionRefused checks that a level the agent refuses, or has no
// grant for, ends the run as permission_denied/effect_not_granted with
// nothing started: not the agent, not even its version probe.
func TestPermissionRefused(t *testing.T) {
	t.Parallel()
	for _, level := range []grant.Level{grant.ReadOnly, grant.Full} {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			bin := filepath.Join(t.TempDir(), "refuser")
			ran := filepath.Join(t.TempDir(), "ran")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\" >> "+ran+"\necho 1.18.33\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			fin := hub.Run(t.Context(), hub.Request{Agent: "refuser", Prompt: "x", Bin: bin, Permission: level},
				func(events.Event) error { return nil })
			wantBin(t, fin, events.BinPermissionDenied, events.ReasonEffectNotGranted)
			if level == grant.ReadOnly && fin.Error.Hint != "use --permission none" {
				t.Errorf("hint = %q, want the grant's note", fin.Error.Hint)
			}
			if b, err := os.ReadFile(ran); err == nil {
				t.Errorf("the agent's binary ran (%q), want nothing started", b)
			}
		})
	}
}

// TestPermissionLinksOut checks that OpenCode under workspace-write is
// refused a working directory holding a link that leads outside it (its
// directory check does not resolve links), and that the agent never runs.
func TestPermissionLinksOut(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A link to a directory deeper than itself cannot lead out.
	if err := os.MkdirAll(filepath.Join(cwd, "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(cwd, "a", "b", "c"), filepath.Join(cwd, "a", "inside")); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "argv")
	run := func() events.RunFinished {
		return runFake(t, t.Context(), "argv", func(r *hub.Request) {
			r.Permission, r.Cwd, r.Env = grant.WorkspaceWrite, cwd, []string{"HUB_FAKE_OUT=" + marker}
		}).fin
	}
	wantBin(t, run(), "", "") // a link that stays inside is fine
	if err := os.Symlink(t.TempDir(), filepath.Join(cwd, "a", "b", "out")); err != nil {
		t.Fatal(err)
	}
	os.Remove(marker)
	fin := run()
	wantBin(t, fin, events.BinPermissionDenied, events.ReasonEffectNotGranted)
	if !strings.Contains(fin.Error.Message, filepath.Join(cwd, "a", "b", "out")) {
		t.Errorf("error %q does not name the link", fin.Error.Message)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent ran")
	}
}

// TestPermissionArgs checks each level's mapping onto the fake OpenCode's
// argv and inline config: hub's own agent with the level's rules, and the
// caller's inline config kept, key order included.
func TestPermissionArgs(t *testing.T) {
	t.Parallel()
	for _, level := range grant.Levels {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "env")
			res := runFake(t, t.Context(), "env", func(r *hub.Request) {
				r.Permission, r.Cwd = level, t.TempDir() // not below a git worktree's top
				r.Env = []string{"HUB_FAKE_OUT=" + out, `OPENCODE_CONFIG_CONTENT={"permission":{"bash":"allow","*":"ask"}}`}
			})
			wantBin(t, res.fin, "", "")
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var inline string
			for _, kv := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(kv, "OPENCODE_CONFIG_CONTENT="); ok {
					inline = v
				}
			}
			if !strings.Contains(inline, `"permission":{"bash":"allow","*":"ask"}`) {
				t.Errorf("inline config %s lost the caller's permission (or its order)", inline)
			}
			var cfg struct {
				Agent map[string]struct {
					Permission map[string]string `json:"permission"`
				} `json:"agent"`
			}
			if err := json.Unmarshal([]byte(inline), &cfg); err != nil {
				t.Fatalf("inline config %s: %v", inline, err)
			}
			rules, ok := cfg.Agent["hub-"+string(level)]
			if !ok || len(rules.Permission) == 0 {
				t.Fatalf("inline config %s does not define hub-%s with rules", inline, level)
			}
			for k, v := range rules.Permission {
				if v != "allow" && v != "deny" {
					t.Errorf("hub-%s rule %s = %q: every rule must be allow or deny (an ask ends opencode run)", level, k, v)
				}
			}
		})
	}
}

// TestAuthLogin checks that --auth login removes the billed keys from the
// agent's environment (and only them), that inherit keeps them, and that a
// key set in Request.Env under login is refused as a conflict.
func TestAuthLogin(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-billed")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-billed")
	t.Setenv("CLAUDE_CODE_OAUTH_TOKEN", "login-token")
	env := func(auth grant.Auth) []string {
		out := filepath.Join(t.TempDir(), "env")
		res := runFake(t, t.Context(), "env", func(r *hub.Request) {
			r.Auth, r.Env = auth, []string{"HUB_FAKE_OUT=" + out}
		})
		wantBin(t, res.fin, "", "")
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(string(b), "\n")
	}
	login := env(grant.AuthLogin)
	for _, kv := range login {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(grant.BilledKeys, k) {
			t.Errorf("--auth login: the agent got %s", k)
		}
	}
	if !slices.Contains(login, "CLAUDE_CODE_OAUTH_TOKEN=login-token") {
		t.Error("--auth login removed the login token too")
	}
	if inherit := env(grant.AuthInherit); !slices.Contains(inherit, "OPENAI_API_KEY=sk-test-billed") {
		t.Error("--auth inherit: the agent did not get OPENAI_API_KEY")
	}
	fin := runFake(t, t.Context(), "ok", func(r *hub.Request) {
		r.Auth, r.Env = grant.AuthLogin, []string{"ANTHROPIC_API_KEY=sk-x"}
	}).fin
	wantBin(t, fin, events.BinInvalidInput, events.ReasonConflict)
}

// TestConfirm checks WithConfirm: an error refuses the run with its bin
// (or confirmation_required) before anything starts, nil lets it run, and
// the grant it is shown is the level's.
func TestConfirm(t *testing.T) {
	t.Parallel()
	var shown grant.Rule
	ok := func(_ context.Context, _ hub.Request, g grant.Rule) error { shown = g; return nil }
	// A --cwd of its own: the package's directory is below its git
	// worktree's top, where OpenCode is refused workspace-write.
	res := runFake(t, t.Context(), "ok", func(r *hub.Request) { r.Permission, r.Cwd = grant.WorkspaceWrite, t.TempDir() }, hub.WithConfirm(ok))
	wantBin(t, res.fin, "", "")
	if shown.Level != grant.WorkspaceWrite || shown.How != grant.Native || shown.Means == "" {
		t.Errorf("confirm was shown %+v, want opencode's workspace-write grant", shown)
	}
	no := func(context.Context, hub.Request, grant.Rule) error { return errors.New("said no") }
	res = runFake(t, t.Context(), "ok", nil, hub.WithConfirm(no))
	wantBin(t, res.fin, events.BinPermissionDenied, events.ReasonConfirmationRequired)
	if res.fin.Error.Message != "said no" || slices.Contains(res.types(), events.TypeMessage) {
		t.Errorf("refused run: %q, events %v", res.fin.Error.Message, res.types())
	}
	if res.fin.ExitCode != nil {
		t.Errorf("exit_code = %d, want null: nothing ran", *res.fin.ExitCode)
	}
}

// TestAgentPWD checks that the agent's PWD names its working directory,
// not hub's: OpenCode resolves paths and its external_directory rule
// against PWD.
func TestAgentPWD(t *testing.T) {
	t.Parallel()
	cwd, out := t.TempDir(), filepath.Join(t.TempDir(), "env")
	res := runFake(t, t.Context(), "env", func(r *hub.Request) {
		r.Cwd, r.Env = cwd, []string{"HUB_FAKE_OUT=" + out, "PWD=/caller/value"}
	})
	wantBin(t, res.fin, "", "")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if env := strings.Split(string(b), "\n"); !slices.Contains(env, "PWD="+cwd) {
		t.Errorf("agent environment has no PWD=%s", cwd)
	}
}
