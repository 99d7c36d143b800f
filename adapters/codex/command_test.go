package codex_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/codex"
	"github.com/hubcli/hub/events"
)

func TestCommand(t *testing.T) {
	inst := adapters.Install{Path: "/bin/codex", Version: "0.169.0"}
	a := &codex.Adapter{}
	prompt := "--help\n-rf"
	cmd, err := a.Command(adapters.Request{Prompt: prompt, Model: "gpt-5.4", Resume: "01A22AFF-1a95-7700-bf1c-36219f65fb8a"}, inst)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"exec", "--json", "--skip-git-repo-check", "-c", "features.unbounded_connection_retries=false",
		"--model=gpt-5.4", "--sandbox=read-only", "resume", "--", "01A22AFF-1a95-7700-bf1c-36219f65fb8a", "-"}
	if !slices.Equal(cmd.Args, want) {
		t.Errorf("args = %q, want %q", cmd.Args, want)
	}
	if string(cmd.Stdin) != prompt {
		t.Errorf("stdin = %q, want the prompt byte for byte", cmd.Stdin)
	}
	cmd, err = a.Command(adapters.Request{Prompt: "hi"}, inst)
	if err != nil || cmd.Args[len(cmd.Args)-1] != "-" || slices.Contains(cmd.Args, "resume") {
		t.Errorf("new session args = %q, %v", cmd.Args, err)
	}
}

func TestCommandRefuses(t *testing.T) {
	inst := adapters.Install{Path: "/bin/codex"}
	for _, tc := range []struct {
		name   string
		req    adapters.Request
		reason events.Reason
	}{
		{"empty", adapters.Request{Prompt: " \n"}, events.ReasonBadRequest},
		{"too many characters", adapters.Request{Prompt: strings.Repeat("é", codex.MaxPromptChars+1)}, events.ReasonPromptTooLarge},
		{"not UTF-8", adapters.Request{Prompt: "MOCK_TEXT \xff\xfe bad"}, events.ReasonBadRequest},
		{"thread name", adapters.Request{Prompt: "hi", Resume: "my-thread"}, events.ReasonBadSession},
		{"path", adapters.Request{Prompt: "hi", Resume: "../../etc/passwd"}, events.ReasonBadSession},
		{"flag", adapters.Request{Prompt: "hi", Resume: "-rf"}, events.ReasonBadSession},
	} {
		_, err := (&codex.Adapter{}).Command(tc.req, inst)
		var e *events.Error
		if !errors.As(err, &e) || e.Bin != events.BinInvalidInput || e.Reason != tc.reason || e.Hint == "" {
			t.Errorf("%s: err = %v, want invalid_input/%s with a hint", tc.name, err, tc.reason)
		}
	}
	// Exactly at the limit is accepted: characters, not bytes, count.
	if _, err := (&codex.Adapter{}).Command(adapters.Request{Prompt: strings.Repeat("é", codex.MaxPromptChars)}, inst); err != nil {
		t.Errorf("prompt of %d two-byte characters refused: %v", codex.MaxPromptChars, err)
	}
}

func TestConfigModel(t *testing.T) {
	dir := t.TempDir()
	if got := codex.ConfigModel([]string{"CODEX_HOME=" + dir}); got != "" {
		t.Errorf("no config: %q, want \"\"", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("model = \"gpt-5.4\"\n[features]\nplugins = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := codex.ConfigModel([]string{"CODEX_HOME=/elsewhere", "CODEX_HOME=" + dir}); got != "gpt-5.4" {
		t.Errorf("config model = %q, want gpt-5.4 (the last CODEX_HOME wins)", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("model = \"gpt-5.4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := codex.ConfigModel([]string{"CODEX_HOME=" + dir}); got != "" {
		t.Errorf("config that does not parse: %q, want \"\"", got)
	}
}

// TestCommandAgentRetries: --agent-retries reaches only a provider that
// config.toml selects and defines, as its stream retries (request retries
// 0); a built-in or undefined provider gets no -c keys; NoTools adds a
// read-only sandbox.
func TestCommandAgentRetries(t *testing.T) {
	inst := adapters.Install{Path: "/bin/codex", Version: "0.169.0"}
	a := &codex.Adapter{}
	dir := t.TempDir()
	two := 2
	args := func(config string, edit func(*adapters.Request)) []string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		req := adapters.Request{Prompt: "hi", Env: []string{"CODEX_HOME=" + dir}, AgentRetries: &two}
		if edit != nil {
			edit(&req)
		}
		cmd, err := a.Command(req, inst)
		if err != nil {
			t.Fatal(err)
		}
		return cmd.Args
	}
	got := args("model_provider = \"mine\"\n[model_providers.mine]\nname = \"m\"\nbase_url = \"http://x/v1\"\n", nil)
	want := []string{"-c", "model_providers.mine.request_max_retries=0", "-c", "model_providers.mine.stream_max_retries=2"}
	if !strings.Contains(strings.Join(got, "\x00"), strings.Join(want, "\x00")) {
		t.Errorf("defined provider: args %q, want %q in them", got, want)
	}
	for _, cfg := range []string{"model = \"gpt-5.4\"\n", "model_provider = \"openai\"\n", "model_provider = \"ghost\"\n",
		"model_provider = \"a.b\"\n[model_providers.\"a.b\"]\nname = \"x\"\n"} {
		if got := args(cfg, nil); slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "max_retries") }) {
			t.Errorf("config %q: args %q, want no retry keys", cfg, got)
		}
	}
	if got := args("", func(r *adapters.Request) { r.AgentRetries = nil; r.NoTools = true }); !slices.Contains(got, "--sandbox=read-only") {
		t.Errorf("NoTools: args %q, want a read-only sandbox", got)
	}
}

// TestCommandSystemPrompt: the replaced prompt goes through
// model_instructions_file, the appended one through a profile file of
// hub's in CODEX_HOME, both removed by the command's Cleanup.
func TestCommandSystemPrompt(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cmd, err := (&codex.Adapter{}).Command(adapters.Request{Prompt: "hi", Env: []string{"CODEX_HOME=" + home},
		SystemPrompt: "S \"q\"\n", AppendSystemPrompt: "A \\ é\n"}, adapters.Install{Path: "/bin/codex"})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(cmd.Args, " ")
	i := strings.Index(args, `-c model_instructions_file="`)
	j := slices.Index(cmd.Args, "--profile")
	if i < 0 || j < 0 || cmd.Cleanup == nil {
		t.Fatalf("args = %q (Cleanup %v); want model_instructions_file, --profile and a Cleanup", cmd.Args, cmd.Cleanup != nil)
	}
	var sysPath string
	for _, a := range cmd.Args {
		if p, ok := strings.CutPrefix(a, "model_instructions_file="); ok {
			sysPath = strings.Trim(p, `"`)
		}
	}
	if b, err := os.ReadFile(sysPath); err != nil || string(b) != "S \"q\"\n" {
		t.Errorf("model_instructions_file %s = %q, %v", sysPath, b, err)
	}
	profile := filepath.Join(home, cmd.Args[j+1]+".config.toml")
	b, err := os.ReadFile(profile)
	if want := "developer_instructions = \"A \\\\ é\\n\"\n"; err != nil || string(b) != want {
		t.Errorf("profile %s = %q, %v; want %q", profile, b, err, want)
	}
	cmd.Cleanup()
	for _, p := range []string{sysPath, profile} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Cleanup, Stat(%s) = %v; want it removed", p, err)
		}
	}
}
