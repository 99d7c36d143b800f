package acp_test

import (
	"testing"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize/acp"
)

// TestSessionModel: session.started names the model the agent's
// session/new answer gives, from its models (claude-agent-acp) or, without
// them, from its config option of category "model" (OpenCode, codex-acp);
// hub's --model wins. The answers are cut from testdata/acp's recordings.
func TestSessionModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, answer, model, want string
	}{
		{"claude-agent-acp", `{"sessionId":"s","models":{"availableModels":[{"modelId":"default","name":"Default"},{"modelId":"haiku","name":"Haiku"}],"currentModelId":"default"},"configOptions":[{"id":"model","category":"model","type":"select","currentValue":"default","options":[]}]}`, "", "default"},
		{"opencode", `{"sessionId":"s","configOptions":[{"id":"model","name":"Model","category":"model","type":"select","currentValue":"mock/mock-model","options":[{"value":"mock/mock-model","name":"mock-model"}]},{"id":"mode","category":"mode","type":"select","currentValue":"build","options":[]}]}`, "", "mock/mock-model"},
		{"codex-acp", `{"sessionId":"s","modes":{"currentModeId":"read-only","availableModes":[]},"configOptions":[{"id":"mode","category":"mode","type":"select","currentValue":"read-only","options":[]},{"id":"model","category":"model","type":"select","currentValue":"gpt-5.5","options":[]},{"id":"reasoning_effort","category":"thought_level","type":"select","currentValue":"medium","options":[]}]}`, "", "gpt-5.5"},
		{"no model", `{"sessionId":"s","configOptions":[{"id":"mode","category":"mode","type":"select","currentValue":"build","options":[]}]}`, "", ""},
		{"not a string", `{"sessionId":"s","models":{"currentModelId":7},"configOptions":[{"category":"model","currentValue":true}]}`, "", ""},
		{"--model", `{"sessionId":"s","models":{"currentModelId":"default"}}`, "haiku", "haiku"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := acp.New(acp.Options{Model: tt.model})
			var got []events.Body
			got = d.Decode(got, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`))
			got = d.Decode(got, []byte(`{"jsonrpc":"2.0","id":2,"result":`+tt.answer+`}`))
			if len(got) != 1 {
				t.Fatalf("Decode = %+v, want one session.started", got)
			}
			st, ok := got[0].(events.SessionStarted)
			if !ok {
				t.Fatalf("Decode = %+v, want a session.started", got[0])
			}
			model := ""
			if st.Model != nil {
				model = *st.Model
			}
			if model != tt.want {
				t.Errorf("session.started model = %q, want %q", model, tt.want)
			}
		})
	}
}
