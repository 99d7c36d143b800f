package pi_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/pi"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// TestCommand: argv always has --print --mode json; the model and session
// map to pi's flags; a prompt pi would read as an option or a file, or one
// too long for one argument, goes on stdin; any other is the last argument.
// The default permission (read-only) offers pi's read tools only, loads
// no extension or package, and pins the session directory to pi's default
// (for HOME /h and the working directory /w/proj).
func TestCommand(t *testing.T) {
	t.Parallel()
	const ro = " --tools read,grep,find,ls --no-extensions --offline --session-dir /h/.pi/agent/sessions/--w-proj--"
	long := strings.Repeat("a", 200<<10)
	tests := []struct {
		req   adapters.Request
		args  string
		stdin string
	}{
		{adapters.Request{Prompt: "hi"}, "--print --mode json" + ro + " hi", ""},
		{adapters.Request{Prompt: "hi", Model: "mock/mock-model"}, "--print --mode json --provider mock --model mock-model" + ro + " hi", ""},
		{adapters.Request{Prompt: "hi", Model: "openrouter/anthropic/claude"}, "--print --mode json --provider openrouter --model anthropic/claude" + ro + " hi", ""},
		{adapters.Request{Prompt: "hi", Model: "sonnet:high"}, "--print --mode json --model sonnet:high" + ro + " hi", ""},
		{adapters.Request{Prompt: "hi", Resume: "01a22b38-0219-7031-832a-16d4def5925b"}, "--print --mode json --session 01a22b38-0219-7031-832a-16d4def5925b" + ro + " hi", ""},
		{adapters.Request{Prompt: "--help"}, "--print --mode json" + ro, "--help"},
		{adapters.Request{Prompt: "-v"}, "--print --mode json" + ro, "-v"},
		{adapters.Request{Prompt: "@file.md"}, "--print --mode json" + ro, "@file.md"},
		{adapters.Request{Prompt: " -x"}, "--print --mode json" + ro + "  -x", ""},
		{adapters.Request{Prompt: long}, "--print --mode json" + ro, long},
	}
	for _, tt := range tests {
		tt.req.Cwd, tt.req.Env = "/w/proj", []string{"HOME=/h"}
		cmd, err := (&pi.Adapter{}).Command(tt.req, adapters.Install{Path: "/bin/pi"})
		if err != nil {
			t.Errorf("Command(%q) error %v", tt.req.Prompt, err)
			continue
		}
		if got := strings.Join(cmd.Args, " "); got != tt.args || string(cmd.Stdin) != tt.stdin || cmd.Path != "/bin/pi" {
			t.Errorf("Command(%.20q) = args %q stdin %.20q, want %q %.20q", tt.req.Prompt, got, cmd.Stdin, tt.args, tt.stdin)
		}
		if tt.stdin == "" && cmd.Stdin != nil {
			t.Errorf("Command(%q) stdin = %q, want nil (/dev/null)", tt.req.Prompt, cmd.Stdin)
		}
	}
}

func TestCommandRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		req    adapters.Request
		reason events.Reason
	}{
		{"blank prompt", adapters.Request{Prompt: "  \n"}, events.ReasonBadRequest},
		{"huge prompt", adapters.Request{Prompt: strings.Repeat("x", pi.MaxPromptBytes+1)}, events.ReasonPromptTooLarge},
		{"model without provider", adapters.Request{Prompt: "hi", Model: "/mock-model"}, events.ReasonBadModel},
		{"provider without model", adapters.Request{Prompt: "hi", Model: "mock/"}, events.ReasonBadModel},
		// pi opens (and writes) a --session value with a '/' or .jsonl as a file.
		{"session file path", adapters.Request{Prompt: "hi", Resume: "/var/tmp/victim.txt"}, events.ReasonBadSession},
		{"relative path", adapters.Request{Prompt: "hi", Resume: "../../etc/passwd"}, events.ReasonBadSession},
		{"jsonl file", adapters.Request{Prompt: "hi", Resume: "s.jsonl"}, events.ReasonBadSession},
		{"flag", adapters.Request{Prompt: "hi", Resume: "-rf"}, events.ReasonBadSession},
		// pi resumes the first of the sessions an id prefix matches.
		{"id prefix", adapters.Request{Prompt: "hi", Resume: "01a22b51-"}, events.ReasonBadSession},
	}
	for _, tt := range tests {
		_, err := (&pi.Adapter{}).Command(tt.req, adapters.Install{Path: "/bin/pi"})
		var e *events.Error
		if !errors.As(err, &e) || e.Bin != events.BinInvalidInput || e.Reason != tt.reason || e.Hint == "" {
			t.Errorf("%s: error = %v, want invalid_input/%s with a hint", tt.name, err, tt.reason)
		}
	}
}

func TestRegistered(t *testing.T) {
	t.Parallel()
	ad, err := adapters.Lookup("pi")
	if err != nil {
		t.Fatal(err)
	}
	if info := ad.Info(); info.Binary != "pi" || info.InstallHint != "npm i -g @mariozechner/pi-coding-agent" || info.MinVersion != pi.MinVersion {
		t.Errorf("Info() = %+v", info)
	}
}

// TestCommandSessionDir: below full the session directory is pi's default
// under the agent directory pi would use; a caller's
// PI_CODING_AGENT_SESSION_DIR, and full, leave it to pi.
func TestCommandSessionDir(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env   []string
		level grant.Level
		want  string // the --session-dir value, "" for none
	}{
		{[]string{"HOME=/h"}, grant.None, "/h/.pi/agent/sessions/--w-a:b--"},
		{[]string{"HOME=/h", "PI_CODING_AGENT_DIR=~/pi"}, grant.ReadOnly, "/h/pi/sessions/--w-a:b--"},
		{[]string{"HOME=/h", "PI_CODING_AGENT_DIR=/etc/pi"}, grant.ReadOnly, "/etc/pi/sessions/--w-a:b--"},
		{[]string{"HOME=/h", "PI_CODING_AGENT_SESSION_DIR=/s"}, grant.ReadOnly, ""},
		{[]string{"HOME=/h"}, grant.Full, ""},
	} {
		cmd, err := (&pi.Adapter{}).Command(adapters.Request{Prompt: "hi", Cwd: "/w/a:b", Env: tt.env, Permission: tt.level}, adapters.Install{Path: "/bin/pi"})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for i, a := range cmd.Args {
			if a == "--session-dir" && i+1 < len(cmd.Args) {
				got = cmd.Args[i+1]
			}
		}
		if want := strings.ReplaceAll(tt.want, ":", "-"); got != want {
			t.Errorf("%v %s: --session-dir %q, want %q", tt.env, tt.level, got, want)
		}
	}
}

// TestCommandApprove: with an approver and a grant below full, pi is
// offered its built-in tools and loads hub's gate alone (no extension of
// the user's or the project's, no package); the session directory is
// pinned as below full. At full nothing changes: hub asks about nothing.
func TestCommandApprove(t *testing.T) {
	t.Parallel()
	const sessions = " --session-dir /h/.pi/agent/sessions/--w-proj--"
	for _, level := range []grant.Level{grant.None, grant.ReadOnly, grant.WorkspaceWrite, grant.Full} {
		req := adapters.Request{Cwd: "/w/proj", Env: []string{"HOME=/h"}, Permission: level, Approve: true}
		cmd, err := (&pi.Adapter{}).SessionCommand(req, adapters.Install{Path: "/bin/pi"})
		if err != nil {
			t.Fatalf("%s: SessionCommand error %v", level, err)
		}
		got := strings.Join(cmd.Args, " ")
		if level == grant.Full {
			if got != "--mode rpc" {
				t.Errorf("%s: SessionCommand args %q, want %q", level, got, "--mode rpc")
			}
			continue
		}
		ext := cmd.Args[len(cmd.Args)-3]
		want := "--mode rpc --tools read,bash,edit,write,grep,find,ls --no-extensions --offline -e " + ext + sessions
		if got != want || !strings.Contains(filepath.Base(ext), "pi-approve-") || !strings.HasSuffix(ext, ".ts") {
			t.Errorf("%s: SessionCommand args %q, want %q with hub's gate", level, got, want)
			continue
		}
		b, err := os.ReadFile(ext)
		if err != nil || !strings.Contains(string(b), `ctx.ui.input("hub-approval"`) {
			t.Errorf("%s: the gate %s: %v, want hub's approve.ts", level, ext, err)
		}
		if fi, err := os.Stat(ext); err != nil {
			t.Error(err)
		} else if fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s: the gate's mode %v, want writable by its owner alone", level, fi.Mode())
		}
	}
}
