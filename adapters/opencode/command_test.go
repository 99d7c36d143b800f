package opencode_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/opencode"
)

// TestCommandNoTools: NoTools runs hub's own agent, whose permission "*":
// "ask" makes `opencode run` reject every tool call; its inline config is
// merged into the caller's (from --env, else hub's environment) and comes
// after --env, so the caller cannot undo it.
func TestCommandNoTools(t *testing.T) {
	inst := adapters.Install{Path: "/bin/opencode", Version: "1.18.33"}
	a := &opencode.Adapter{}
	inline := func(env ...string) (map[string]any, []string) {
		t.Helper()
		cmd, err := a.Command(adapters.Request{Prompt: "hi", NoTools: true, Env: env}, inst)
		if err != nil {
			t.Fatal(err)
		}
		// The inline config, then (below full) the project config off.
		if len(cmd.EnvLast) != 2 || cmd.EnvLast[1] != "OPENCODE_DISABLE_PROJECT_CONFIG=1" {
			t.Fatalf("EnvLast = %q, want the inline config and OPENCODE_DISABLE_PROJECT_CONFIG=1", cmd.EnvLast)
		}
		v, ok := strings.CutPrefix(cmd.EnvLast[0], "OPENCODE_CONFIG_CONTENT=")
		var cfg map[string]any
		if err := json.Unmarshal([]byte(v), &cfg); !ok || err != nil {
			t.Fatalf("EnvLast %q: %v", cmd.EnvLast, err)
		}
		return cfg, cmd.Args
	}
	askAll := `{"description":"hub's final-answer resume: no tool may run","mode":"primary","permission":{"*":"ask"}}`
	t.Setenv("OPENCODE_CONFIG_CONTENT", `{"model":"a/b"}`)
	cfg, args := inline()
	if got, _ := json.Marshal(cfg["agent"].(map[string]any)["hub-final-answer"]); string(got) != askAll || cfg["model"] != "a/b" {
		t.Errorf("inline config = %v, want hub's agent %s and the environment's model kept", cfg, askAll)
	}
	if !slices.Contains(args, "--agent=hub-final-answer") {
		t.Errorf("args = %q, want --agent=hub-final-answer", args)
	}
	cfg, _ = inline(`OPENCODE_CONFIG_CONTENT={"agent":{"build":{"permission":{"bash":"allow"}},"hub-final-answer":{"permission":{"*":"allow"}}}}`)
	agents := cfg["agent"].(map[string]any)
	if got, _ := json.Marshal(agents["hub-final-answer"]); string(got) != askAll || agents["build"] == nil || cfg["model"] != nil {
		t.Errorf("inline config from --env = %v, want the caller's build agent kept and hub's agent replaced", cfg)
	}
	// Without NoTools, the agent is the grant's (read-only by default).
	cmd, err := a.Command(adapters.Request{Prompt: "hi"}, inst)
	if err != nil || len(cmd.EnvLast) != 2 || !strings.Contains(cmd.EnvLast[0], `"hub-read-only":`) || strings.Contains(cmd.EnvLast[0], "hub-final-answer") ||
		!slices.Contains(cmd.Args, "--agent=hub-read-only") {
		t.Errorf("without NoTools: args %q, EnvLast %q, %v; want --agent=hub-read-only and only that agent defined", cmd.Args, cmd.EnvLast, err)
	}
}

// TestSessionCommandApprove: a live session with an approver below full
// runs hub's agent with "ask" where the level denies (OpenCode puts those
// calls to hub), what the level allows still allowed and task denied; a
// one-shot run (`opencode run` rejects every ask), a session without an
// approver and one at full keep the level's own rules.
func TestSessionCommandApprove(t *testing.T) {
	inst := adapters.Install{Path: "/bin/opencode", Version: "1.18.33"}
	a := &opencode.Adapter{}
	t.Setenv("OPENCODE_CONFIG_CONTENT", "")
	rules := func(live bool, req adapters.Request) string {
		t.Helper()
		cmd, err := a.Command(req, inst)
		if live {
			cmd, err = a.SessionCommand(req, inst)
		}
		if err != nil {
			t.Fatal(err)
		}
		v, _ := strings.CutPrefix(cmd.EnvLast[0], "OPENCODE_CONFIG_CONTENT=")
		var cfg struct {
			Agent map[string]struct {
				Permission json.RawMessage `json:"permission"`
			} `json:"agent"`
		}
		if err := json.Unmarshal([]byte(v), &cfg); err != nil {
			t.Fatalf("inline config %q: %v", v, err)
		}
		return string(cfg.Agent["hub-"+string(req.Permission.OrDefault())].Permission)
	}
	for _, tt := range []struct {
		live bool
		req  adapters.Request
		want string
	}{
		{true, adapters.Request{Approve: true}, `{"*":"ask","read":"allow","glob":"allow","grep":"allow","list":"allow","external_directory":"ask","task":"deny"}`},
		{true, adapters.Request{Approve: true, Permission: "none"}, `{"*":"ask","task":"deny"}`},
		{true, adapters.Request{}, `{"*":"deny","read":"allow","glob":"allow","grep":"allow","list":"allow","external_directory":"deny"}`},
		{false, adapters.Request{Prompt: "hi", Approve: true}, `{"*":"deny","read":"allow","glob":"allow","grep":"allow","list":"allow","external_directory":"deny"}`},
		{true, adapters.Request{Approve: true, Permission: "full"}, `{"*":"allow"}`},
	} {
		if got := rules(tt.live, tt.req); got != tt.want {
			t.Errorf("live %v, %+v: rules %s, want %s", tt.live, tt.req, got, tt.want)
		}
	}
}
