package hubtemporal

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/grant"
)

func TestRequestAdapters(t *testing.T) {
	t.Parallel()
	retries := 2
	in := Request{Agent: "acp", Prompt: "p", Model: "m", Resume: "ses", Cwd: "/w", Bin: "opencode", Args: []string{"acp"},
		Env: []string{"K=V"}, Permission: "workspace-write", Auth: "login", AgentRetries: &retries, MaxLine: 1 << 20,
		Limits:  Limits{Timeout: time.Minute, IdleTimeout: time.Second, MaxCostUSD: 1.5, MaxTokens: 10, MaxTurns: 3, MaxToolSteps: 4, Grace: -1},
		Sandbox: "copy", Protect: []string{"go.mod"}, Schema: json.RawMessage(`{"type":"object"}`)}
	// The request crosses Temporal as JSON: what arrives is what was sent.
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var got Request
	if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("JSON round trip = %+v (%v), want %+v", got, err, in)
	}
	req, err := got.Hub()
	if err != nil {
		t.Fatalf("Hub() = %v", err)
	}
	want := budget.Limits{Timeout: time.Minute, IdleTimeout: time.Second, MaxCostUSD: 1.5, MaxTokens: 10, MaxTurns: 3, MaxToolSteps: 4, Grace: -1}
	if req.Agent != "acp" || req.Bin != "opencode" || !reflect.DeepEqual(req.Args, []string{"acp"}) || req.Permission != grant.WorkspaceWrite ||
		req.Auth != grant.AuthLogin || req.Limits != want || *req.AgentRetries != 2 || req.Schema == nil || req.Sandbox != "copy" || req.Cwd != "/w" {
		t.Errorf("Hub() = %+v, want every field mapped", req)
	}
	if req, _ := (Request{Agent: "opencode", Prompt: "p"}).Hub(); req.Permission != grant.ReadOnly || req.Prices != nil {
		t.Errorf("Hub() of a bare request = %+v, want read-only and hub's prices", req)
	}
	for _, bad := range []Request{
		{Permission: "most"}, {Auth: "key"}, {Sandbox: "vm"}, {Limits: Limits{Timeout: -time.Second}},
		{PricesFile: "/nonexistent"}, {Schema: json.RawMessage(`[]`)}, {AgentRetries: new(-1)},
	} {
		if _, err := bad.Hub(); err == nil {
			t.Errorf("Adapters(%+v) = nil error, want one", bad)
		}
	}
}

func TestRequestFor(t *testing.T) {
	t.Parallel()
	task := Request{Agent: "x", Prompt: "p", Model: "m", Env: []string{"A=1"}}
	got := task.For(Target{Agent: "codex", Env: []string{"B=2"}})
	if got.Agent != "codex" || got.Model != "m" || !reflect.DeepEqual(got.Env, []string{"A=1", "B=2"}) || len(task.Env) != 1 {
		t.Errorf("For = %+v, want codex, model m, env A=1 B=2, the task untouched", got)
	}
	if got := task.For(Target{Agent: "claude", Model: "opus", Bin: "/b"}); got.Model != "opus" || got.Bin != "/b" {
		t.Errorf("For = %+v, want the target's model and bin", got)
	}
}
