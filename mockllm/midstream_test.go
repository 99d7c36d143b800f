package mockllm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/hubcli/hub/mockllm"
)

// The errors StreamModel and StreamError carry, as the issue that asked
// for them gives them (OpenAI's Responses error event; OpenAI's error
// object alone), for the model each test request names.
const (
	eventCodex = `{"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,` +
		`"message":"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.","param":"model"}}`
	eventChat = `{"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,` +
		`"message":"The 'mock-model' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.","param":"model"}}`
	eventClaude = `{"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,` +
		`"message":"The 'claude-mock' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.","param":"model"}}`
	bareServerError = `{"message":"The server had an error while processing your request (mid-stream).","type":"server_error","code":"internal_error"}`
	claudeAPIError  = `{"type":"error","error":{"type":"api_error","message":"The server had an error while processing your request (mid-stream)."}}`
)

// sseEvents splits an SSE body into its events' event names ("" when
// none) and data.
func sseEvents(t *testing.T, body string) (names, data []string) {
	t.Helper()
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var name, d string
		for _, line := range strings.Split(ev, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				d = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("SSE line %q in %q", line, body)
			}
		}
		names, data = append(names, name), append(data, d)
	}
	return names, data
}

// TestStreamFailures: StreamModel and StreamError start a stream (200) and
// end it with the provider's error, after the first StallDeltas text
// deltas where the API streams text first; with stream false they are an
// HTTP error with the same error as the body.
func TestStreamFailures(t *testing.T) {
	t.Parallel()
	s := start(t)
	tests := []struct {
		api      string // chat, responses, messages
		scenario mockllm.Scenario
		stream   bool
		pretty   bool
		status   int
		last     string // the last event's data, or the body
		lastName string // the last event's name
	}{
		{"chat", mockllm.StreamModel, true, false, 200, eventChat, ""},
		{"chat", mockllm.StreamError, true, false, 200, `{"error":` + bareServerError + `}`, ""},
		{"chat", mockllm.StreamModel, false, false, 400, eventChat, ""},
		{"chat", mockllm.StreamError, false, false, 500, `{"error":` + bareServerError + `}`, ""},
		{"responses", mockllm.StreamModel, true, false, 200, eventCodex, "response.failed"},
		{"responses", mockllm.StreamModel, true, true, 200, eventCodex, "response.failed"},
		{"responses", mockllm.StreamError, true, false, 200, bareServerError, "response.failed"},
		{"responses", mockllm.StreamModel, false, false, 400, eventCodex, ""},
		{"responses", mockllm.StreamModel, false, true, 400, eventCodex, ""},
		{"responses", mockllm.StreamError, false, false, 500, `{"error":` + bareServerError + `}`, ""},
		{"messages", mockllm.StreamModel, true, false, 200, eventClaude, "error"},
		{"messages", mockllm.StreamError, true, false, 200, claudeAPIError, "error"},
		{"messages", mockllm.StreamModel, false, false, 400, eventClaude, ""},
		{"messages", mockllm.StreamError, false, false, 500, claudeAPIError, ""},
	}
	for _, tt := range tests {
		name := tt.api + "/" + string(tt.scenario)
		if !tt.stream {
			name += "/nostream"
		}
		if tt.pretty {
			name += "/pretty"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prompt := "do it " + string(tt.scenario)
			if tt.pretty {
				prompt += " pretty"
			}
			var url string
			var body []byte
			switch tt.api {
			case "chat":
				url, body = "/v1/chat/completions", chatBody(t, prompt, tt.stream, nil, "")
			case "responses":
				url, body = "/v1/responses", responsesBody(t, prompt, tt.stream, codexTools, nil)
			default:
				url, body = "/v1/messages", messagesBody(t, prompt, tt.stream, claudeTools, nil)
			}
			resp := post(t, bounded(t), s.URL()+url, body)
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != tt.status {
				t.Fatalf("POST(%s) = %d, %v, want %d and the whole body", name, resp.StatusCode, err, tt.status)
			}
			if !tt.stream {
				want := tt.last
				if tt.pretty {
					want = indent(t, want)
				}
				if got := strings.TrimSpace(string(b)); got != want {
					t.Errorf("POST(%s) body = %s, want %s", name, got, want)
				}
				if h := resp.Header.Get("Retry-After"); h != "" {
					t.Errorf("POST(%s) retry-after = %q, want none", name, h)
				}
				return
			}
			names, data := sseEvents(t, string(b))
			n := len(data)
			if n < 3 || names[n-1] != tt.lastName {
				t.Fatalf("POST(%s) events %q, want at least 3, the last %q", name, names, tt.lastName)
			}
			got := data[n-1]
			if tt.api == "responses" {
				// The error, as text, is response.failed's error.message.
				var failed struct {
					Response struct {
						Status string `json:"status"`
						Error  struct {
							Code, Message string
						} `json:"error"`
					} `json:"response"`
				}
				if err := json.Unmarshal([]byte(got), &failed); err != nil {
					t.Fatal(err)
				}
				want := tt.last
				if tt.pretty {
					want = indent(t, want)
				}
				if r := failed.Response; r.Status != "failed" || r.Error.Message != want {
					t.Errorf("POST(%s) response.failed = %+v, want status failed, error.message %s", name, r, want)
				}
				return
			}
			if got != tt.last {
				t.Errorf("POST(%s) last event = %s, want %s", name, got, tt.last)
			}
			// Mid-stream: the answer's first StallDeltas deltas came
			// first, and nothing after the error ([DONE] neither).
			if text := strings.Join(data, ""); !strings.Contains(text, `"Hello"`) || !strings.Contains(text, `" from"`) || strings.Contains(text, `" the"`) {
				t.Errorf("POST(%s) stream %q, want the first %d deltas of %q before the error", name, data, mockllm.StallDeltas, mockllm.TextAnswer)
			}
		})
	}
	// The server records each call's scenario, pretty or not.
	for _, r := range s.Requests() {
		if r.Scenario != mockllm.StreamModel && r.Scenario != mockllm.StreamError {
			t.Errorf("request of scenario %s, want only the two", r.Scenario)
		}
	}
}

// indent is a JSON text indented by two spaces, as Go writes it.
func indent(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
