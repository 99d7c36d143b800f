package opencode_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/opencode"
)

// TestCommandNoTools: NoTools sets OpenCode inline config that switches every
// tool off, merged into inline config already in hub's environment.
func TestCommandNoTools(t *testing.T) {
	inst := adapters.Install{Path: "/bin/opencode", Version: "1.18.33"}
	a := &opencode.Adapter{}
	inline := func() map[string]any {
		t.Helper()
		cmd, err := a.Command(adapters.Request{Prompt: "hi", NoTools: true}, inst)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range cmd.Env {
			if v, ok := strings.CutPrefix(kv, "OPENCODE_CONFIG_CONTENT="); ok {
				var cfg map[string]any
				if err := json.Unmarshal([]byte(v), &cfg); err != nil {
					t.Fatalf("OPENCODE_CONFIG_CONTENT %q: %v", v, err)
				}
				return cfg
			}
		}
		t.Fatalf("env %q has no OPENCODE_CONFIG_CONTENT", cmd.Env)
		return nil
	}
	t.Setenv("OPENCODE_CONFIG_CONTENT", "")
	if got, _ := json.Marshal(inline()); string(got) != `{"tools":{"*":false}}` {
		t.Errorf("inline config = %s, want every tool off", got)
	}
	t.Setenv("OPENCODE_CONFIG_CONTENT", `{"model":"a/b","tools":{"bash":true}}`)
	if got, _ := json.Marshal(inline()); string(got) != `{"model":"a/b","tools":{"*":false}}` {
		t.Errorf("merged inline config = %s, want the caller's model kept and every tool off", got)
	}
	cmd, err := a.Command(adapters.Request{Prompt: "hi"}, inst)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range cmd.Env {
		if strings.HasPrefix(kv, "OPENCODE_CONFIG_CONTENT=") {
			t.Errorf("without NoTools env has %q", kv)
		}
	}
}
