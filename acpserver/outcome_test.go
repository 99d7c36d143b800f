package acpserver_test

import (
	"encoding/json"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub/acpserver"
	"github.com/hubcli/hub/events"
)

// TestOutcome has one row per rule of Outcome.
func TestOutcome(t *testing.T) {
	t.Parallel()
	status := 429
	tests := []struct {
		name    string
		fin     events.RunFinished
		stop    acp.StopReason
		message string // of the error; "" for none
	}{
		{"ok", events.RunFinished{OK: true}, acp.StopReasonEndTurn, ""},
		{"cancelled caller", fail(events.BinCancelled, events.ReasonCaller), acp.StopReasonCancelled, ""},
		{"cancelled by the agent", fail(events.BinCancelled, events.ReasonAgentAborted), acp.StopReasonCancelled, ""},
		{"tokens", fail(events.BinBudgetExceeded, events.ReasonTokens), acp.StopReasonMaxTokens, ""},
		{"turns", fail(events.BinBudgetExceeded, events.ReasonTurns), acp.StopReasonMaxTurnRequests, ""},
		{"tool steps", fail(events.BinBudgetExceeded, events.ReasonToolSteps), acp.StopReasonMaxTurnRequests, ""},
		{"cost", fail(events.BinBudgetExceeded, events.ReasonCost), "", "budget_exceeded/cost: it failed (do this)"},
		{"timeout", fail(events.BinTimeout, events.ReasonWall), "", "timeout/wall: it failed (do this)"},
		{"rate limit", events.RunFinished{Error: events.NewError(events.BinUnavailable, events.ReasonRateLimit, "wait", "429").WithHTTPStatus(status)},
			"", "unavailable/rate_limit: 429 (wait)"},
		{"internal, no reason, no hint", events.RunFinished{Error: events.NewError(events.BinInternal, "", "", "boom")}, "", "internal: boom"},
		{"failed without an error", events.RunFinished{}, "", "internal: the run failed without an error (report this as a hub bug)"},
	}
	for _, tt := range tests {
		stop, err := acpserver.Outcome(tt.fin)
		if stop != tt.stop {
			t.Errorf("%s: Outcome stop = %q, want %q", tt.name, stop, tt.stop)
		}
		switch {
		case tt.message == "" && err != nil:
			t.Errorf("%s: Outcome error = %v, want none", tt.name, err)
		case tt.message != "" && (err == nil || err.Message != tt.message || err.Code != acpserver.RunFailedCode):
			t.Errorf("%s: Outcome error = %v, want %d %q", tt.name, err, acpserver.RunFailedCode, tt.message)
		case tt.message != "" && tt.fin.Error != nil:
			got, _ := json.Marshal(err.Data)
			want, _ := json.Marshal(tt.fin.Error)
			if string(got) != string(want) {
				t.Errorf("%s: Outcome error data = %s, want %s", tt.name, got, want)
			}
		}
	}
}

func fail(bin events.Bin, reason events.Reason) events.RunFinished {
	return events.RunFinished{Error: events.NewError(bin, reason, "do this", "it failed")}
}

func TestToolKind(t *testing.T) {
	t.Parallel()
	for hub, want := range map[events.ToolKind]acp.ToolKind{
		events.ToolShell: acp.ToolKindExecute, events.ToolRead: acp.ToolKindRead,
		events.ToolWrite: acp.ToolKindEdit, events.ToolEdit: acp.ToolKindEdit,
		events.ToolSearch: acp.ToolKindSearch, events.ToolWeb: acp.ToolKindFetch,
		events.ToolMCP: acp.ToolKindOther, events.ToolTask: acp.ToolKindOther, events.ToolOther: acp.ToolKindOther,
		"future": acp.ToolKindOther,
	} {
		if got := acpserver.ToolKind(hub); got != want {
			t.Errorf("ToolKind(%q) = %q, want %q", hub, got, want)
		}
	}
}

// TestUpdates: a stream's updates, one row per rule of Updates.
func TestUpdates(t *testing.T) {
	t.Parallel()
	cost := 0.5
	stream := []events.Body{
		events.RunStarted{},
		events.SessionStarted{SessionID: "s"},
		events.Reasoning{Text: "hmm"},
		events.TextDelta{Text: "Hel"}, events.TextDelta{Text: "lo"},
		events.Message{Text: "Hello"}, // streamed: not again
		events.Message{Text: "Again"}, // not streamed: sent
		events.ToolStarted{CallID: "c1", Name: "bash", Kind: events.ToolShell, Input: json.RawMessage(`{"command":"ls"}`)},
		events.Notice{Kind: events.NoticeStderr, Message: "noise"},
		events.ToolFinished{CallID: "c1", Name: "bash", Kind: events.ToolShell, Status: events.ToolOK, Output: "a\nb"},
		events.ToolFinished{CallID: "c2", Name: "write", Kind: events.ToolWrite, Status: events.ToolDenied}, // never started
		events.Usage{Step: events.Tokens{Input: 10, Output: 5, CacheRead: 3, CacheWrite: 2}, Total: events.Tokens{CostUSD: &cost}},
		events.RunFinished{OK: true},
	}
	var u acpserver.Updates
	var got []string
	for _, b := range stream {
		for _, up := range u.Next(events.Event{Body: b}) {
			j, err := json.Marshal(up)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(j))
		}
	}
	want := []string{
		`{"content":{"text":"hmm","type":"text"},"sessionUpdate":"agent_thought_chunk"}`,
		`{"content":{"text":"Hel","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
		`{"content":{"text":"lo","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
		`{"content":{"text":"Again","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
		`{"kind":"execute","rawInput":{"command":"ls"},"sessionUpdate":"tool_call","status":"in_progress","title":"bash","toolCallId":"c1"}`,
		`{"content":[{"content":{"text":"a\nb","type":"text"},"type":"content"}],"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"c1"}`,
		`{"kind":"edit","sessionUpdate":"tool_call","status":"failed","title":"write","toolCallId":"c2"}`,
		`{"cost":{"amount":0.5,"currency":"USD"},"sessionUpdate":"usage_update","size":0,"used":20}`,
	}
	if len(got) != len(want) {
		t.Fatalf("updates:\n%s\nwant:\n%s", join(got), join(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("update %d = %s, want %s", i, got[i], want[i])
		}
	}
}

func join(s []string) string {
	out := ""
	for _, l := range s {
		out += l + "\n"
	}
	return out
}
