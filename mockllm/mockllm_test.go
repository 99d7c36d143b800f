package mockllm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/mockllm"
)

// prompt bounds how long an unblocked request may take to return.
const prompt = 3 * time.Second

func start(t *testing.T) *mockllm.Server {
	t.Helper()
	s, err := mockllm.Start()
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// chatBody builds a chat.completions request. tools maps a tool name to its
// parameters schema; toolResult, if not empty, adds a tool call and result.
func chatBody(t *testing.T, text string, stream bool, tools map[string]string, toolResult string) []byte {
	t.Helper()
	messages := []any{
		map[string]any{"role": "system", "content": "You are a test."},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}},
	}
	if toolResult != "" {
		messages = append(messages,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": mockllm.ToolCallID, "type": "function",
				"function": map[string]any{"name": "bash", "arguments": "{}"},
			}}},
			map[string]any{"role": "tool", "tool_call_id": mockllm.ToolCallID, "content": toolResult},
		)
	}
	var ts []any
	for name, schema := range tools {
		ts = append(ts, map[string]any{"type": "function", "function": map[string]any{
			"name": name, "parameters": json.RawMessage(schema),
		}})
	}
	b, err := json.Marshal(map[string]any{
		"model": "mock-model", "stream": stream, "messages": messages, "tools": ts,
		"stream_options": map[string]any{"include_usage": true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func post(t *testing.T, ctx context.Context, url string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s error = %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type chunk struct {
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Role      string `json:"role"`
			Content   string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		Message struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// stream is what a streamed answer added up to.
type stream struct {
	text, toolID, toolName, args string
	argPieces                    int
	finish                       string
	usage                        [4]int // prompt, cached, completion, total
	done                         bool   // ended with data: [DONE]
}

// readStream reads an SSE body, checking its framing.
func readStream(t *testing.T, body io.Reader) stream {
	t.Helper()
	var st stream
	r := bufio.NewReader(body)
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil {
			t.Fatalf("reading stream: %v", err)
		}
		blank, _ := r.ReadString('\n')
		if !strings.HasPrefix(line, "data: ") || blank != "\n" {
			t.Fatalf("SSE event = %q then %q, want \"data: …\\n\" then \"\\n\"", line, blank)
		}
		data := strings.TrimSuffix(strings.TrimPrefix(line, "data: "), "\n")
		if st.done {
			t.Fatalf("event %q after [DONE]", data)
		}
		if data == "[DONE]" {
			st.done = true
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("json.Unmarshal(%q) error = %v", data, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("chunk object = %q, want chat.completion.chunk", c.Object)
		}
		for _, ch := range c.Choices {
			st.text += ch.Delta.Content
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					st.toolID, st.toolName = tc.ID, tc.Function.Name
				}
				if tc.Function.Arguments != "" {
					st.args += tc.Function.Arguments
					st.argPieces++
				}
			}
			if ch.FinishReason != nil {
				st.finish = *ch.FinishReason
			}
		}
		if u := c.Usage; u != nil {
			st.usage = [4]int{u.PromptTokens, u.PromptTokensDetails.CachedTokens, u.CompletionTokens, u.TotalTokens}
		}
	}
	return st
}

var (
	normalUsage = [4]int{mockllm.PromptTokens, mockllm.CachedTokens, mockllm.CompletionTokens, mockllm.TotalTokens}
	bigUsage    = [4]int{mockllm.BigPromptTokens, mockllm.BigCachedTokens, mockllm.BigCompletionTokens, mockllm.BigTotalTokens}
)

func TestStreamText(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct {
		name, prompt string
		usage        [4]int
	}{
		{"text", "say hi MOCK_TEXT", normalUsage},
		{"no marker", "say hi", normalUsage},
		{"big usage", "say hi MOCK_BIGUSAGE", bigUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := post(t, t.Context(), s.URL()+"/v1/chat/completions", chatBody(t, tt.prompt, true, nil, ""))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST(%q) status = %d, want 200", tt.prompt, resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("POST(%q) Content-Type = %q, want text/event-stream", tt.prompt, ct)
			}
			st := readStream(t, resp.Body)
			want := stream{text: mockllm.TextAnswer, finish: "stop", usage: tt.usage, done: true}
			if st != want {
				t.Errorf("POST(%q) stream = %+v, want %+v", tt.prompt, st, want)
			}
		})
	}
}

func TestNoStream(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct {
		name, prompt, toolResult string
		tools                    map[string]string
		content, tool, finish    string
	}{
		{name: "text", prompt: "MOCK_TEXT", content: mockllm.TextAnswer, finish: "stop"},
		{name: "tool call", prompt: "MOCK_TOOL", tools: map[string]string{"bash": "{}"}, tool: "bash", finish: "tool_calls"},
		{name: "tool answer", prompt: "MOCK_TOOL", tools: map[string]string{"bash": "{}"}, toolResult: "ok",
			content: mockllm.ToolAnswerPrefix + "ok", finish: "stop"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := post(t, t.Context(), s.URL()+"/chat/completions", chatBody(t, tt.prompt, false, tt.tools, tt.toolResult))
			var c chunk
			if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("POST(%q) = %d, %v, want 200 and JSON", tt.prompt, resp.StatusCode, err)
			}
			if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Usage == nil {
				t.Fatalf("POST(%q) = %+v, want one chat.completion choice with usage", tt.prompt, c)
			}
			ch := c.Choices[0]
			var tool string
			if len(ch.Message.ToolCalls) == 1 {
				tool = ch.Message.ToolCalls[0].Function.Name
			}
			if ch.Message.Content != tt.content || tool != tt.tool || ch.FinishReason == nil || *ch.FinishReason != tt.finish {
				t.Errorf("POST(%q) message = %+v, want content %q, tool %q, finish %q", tt.prompt, ch, tt.content, tt.tool, tt.finish)
			}
			if c.Usage.PromptTokens != mockllm.PromptTokens || c.Usage.TotalTokens != mockllm.TotalTokens {
				t.Errorf("POST(%q) usage = %+v, want %v", tt.prompt, *c.Usage, normalUsage)
			}
		})
	}
}

func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct {
		name      string
		tools     map[string]string
		wantTool  string
		wantArgs  string
		wantFirst string // the answer to the first call when it is text
	}{
		{
			name:     "bash preferred",
			tools:    map[string]string{"read": "{}", "bash": `{"type":"object"}`, "exec_command": "{}"},
			wantTool: "bash",
			wantArgs: `{"command":"echo mock-tool-ok","description":"Print a marker"}`,
		},
		{
			name:     "exec_command",
			tools:    map[string]string{"read": "{}", "exec_command": `{"type":"object","properties":{"cmd":{"type":"string"}}}`},
			wantTool: "exec_command",
			wantArgs: `{"cmd":"echo mock-tool-ok"}`,
		},
		{
			name:     "shell with argv",
			tools:    map[string]string{"shell": `{"type":"object","properties":{"command":{"type":"array"}}}`},
			wantTool: "shell",
			wantArgs: `{"command":["bash","-lc","echo mock-tool-ok"]}`,
		},
		{
			name:     "read",
			tools:    map[string]string{"read": `{"type":"object","properties":{"path":{"type":"string"}}}`, "write": "{}"},
			wantTool: "read",
			wantArgs: `{"path":"/etc/hostname"}`,
		},
		{
			name:     "malformed schema",
			tools:    map[string]string{"Shell": `{"properties":"none"}`},
			wantTool: "Shell",
			wantArgs: `{"command":"echo mock-tool-ok"}`,
		},
		{
			name:      "no tools",
			wantFirst: mockllm.TextAnswer,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := s.URL() + "/v1/chat/completions"
			resp := post(t, t.Context(), url, chatBody(t, "run it MOCK_TOOL", true, tt.tools, ""))
			st := readStream(t, resp.Body)
			if tt.wantFirst != "" {
				if st.text != tt.wantFirst || st.finish != "stop" {
					t.Errorf("first call = %+v, want text %q, finish stop", st, tt.wantFirst)
				}
				return
			}
			want := stream{toolID: mockllm.ToolCallID, toolName: tt.wantTool, args: tt.wantArgs, argPieces: st.argPieces,
				finish: "tool_calls", usage: normalUsage, done: true}
			if st != want {
				t.Errorf("first call = %+v, want %+v", st, want)
			}
			if st.argPieces < 2 {
				t.Errorf("first call arguments in %d pieces, want 2 or more", st.argPieces)
			}

			output := "  " + mockllm.ToolOutput + "\n" + strings.Repeat("x", 300)
			resp = post(t, t.Context(), url, chatBody(t, "run it MOCK_TOOL", true, tt.tools, output))
			st = readStream(t, resp.Body)
			wantText := mockllm.ToolAnswerPrefix + strings.TrimSpace(output)[:mockllm.ToolResultMax]
			want = stream{text: wantText, finish: "stop", usage: normalUsage, done: true}
			if st != want {
				t.Errorf("second call = %+v, want %+v", st, want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct {
		scenario mockllm.Scenario
		status   int
		code     string
		header   map[string]string
	}{
		{mockllm.Unauthorized, 401, "invalid_api_key", nil},
		{mockllm.RateLimited, 429, "rate_limit_exceeded", map[string]string{"Retry-After": "1", "Retry-After-Ms": "1000"}},
		{mockllm.ServerError, 500, "", map[string]string{"Retry-After": "", "Retry-After-Ms": ""}},
		{mockllm.Overloaded, 503, "overloaded", map[string]string{"Retry-After": "", "Retry-After-Ms": ""}},
		{mockllm.Overflow, 400, "context_length_exceeded", nil},
		{mockllm.Quota, 429, "insufficient_quota", map[string]string{"Retry-After": "", "Retry-After-Ms": ""}},
		{mockllm.NoModel, 404, "model_not_found", nil},
		{mockllm.ResetTime, 429, "rate_limit_exceeded", map[string]string{"Retry-After": "20", "Retry-After-Ms": "20000",
			"X-Ratelimit-Reset-Requests": "20s", "X-Ratelimit-Remaining-Requests": "0"}},
		{mockllm.UsageLimit, 429, "", map[string]string{"Retry-After": ""}},
	} {
		for _, streaming := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.scenario, streaming), func(t *testing.T) {
				t.Parallel()
				resp := post(t, t.Context(), s.URL()+"/v1/chat/completions", chatBody(t, "hi "+string(tt.scenario), streaming, nil, ""))
				var body struct {
					Error struct {
						Message string  `json:"message"`
						Type    string  `json:"type"`
						Code    *string `json:"code"`
					} `json:"error"`
				}
				err := json.NewDecoder(resp.Body).Decode(&body)
				if resp.StatusCode != tt.status || err != nil || body.Error.Message == "" {
					t.Fatalf("POST(%s, stream %v) = %d, %+v, %v; want %d and an error body", tt.scenario, streaming, resp.StatusCode, body, err, tt.status)
				}
				var code string
				if body.Error.Code != nil {
					code = *body.Error.Code
				}
				if code != tt.code {
					t.Errorf("POST(%s) error code = %q, want %q", tt.scenario, code, tt.code)
				}
				for k, v := range tt.header {
					if got := resp.Header.Get(k); got != v {
						t.Errorf("POST(%s) header %s = %q, want %q", tt.scenario, k, got, v)
					}
				}
			})
		}
	}
}

// TestHangStall checks that a hanging or stalled answer is released as soon
// as the client gives up.
func TestHangStall(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct {
		scenario mockllm.Scenario
		stream   bool
	}{
		{mockllm.Hang, true},
		{mockllm.Hang, false},
		{mockllm.Stall, true},
		{mockllm.Stall, false},
	} {
		t.Run(string(tt.scenario), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			body := chatBody(t, string(tt.scenario), tt.stream, nil, "")
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/chat/completions", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}

			if tt.scenario == mockllm.Hang {
				wantNoResponse(t, req, cancel)
				return
			}

			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST(%s) error = %v", tt.scenario, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST(%s) status = %d, want 200", tt.scenario, resp.StatusCode)
			}
			r := bufio.NewReader(resp.Body)
			var got string
			if tt.stream { // the role chunk and StallDeltas text chunks
				for range 2 * (1 + mockllm.StallDeltas) {
					line, err := r.ReadString('\n')
					if err != nil {
						t.Fatalf("reading stalled stream after %q: %v", got, err)
					}
					got += line
				}
				if !strings.Contains(got, `"content":"Hello"`) || !strings.Contains(got, `"content":" from"`) {
					t.Errorf("stalled stream = %q, want the first %d deltas", got, mockllm.StallDeltas)
				}
			}
			time.AfterFunc(200*time.Millisecond, cancel)
			begin := time.Now()
			rest, err := io.ReadAll(r)
			if d := time.Since(begin); err == nil || d > prompt {
				t.Errorf("reading stalled %s after %q = %q, %v after %v, want an error within %v", tt.scenario, got, rest, err, d, prompt)
			}
		})
	}
}

func TestCloseReleasesHangingRequests(t *testing.T) {
	t.Parallel()
	s, err := mockllm.Start()
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	errc := make(chan error, 2)
	for _, sc := range []mockllm.Scenario{mockllm.Hang, mockllm.Stall} {
		body := chatBody(t, string(sc), true, nil, "")
		go func() {
			resp, err := http.Post(s.URL()+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			errc <- err
		}()
	}
	for deadline := time.Now().Add(prompt); len(s.Requests()) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Requests() = %v, want 2 within %v", s.Requests(), prompt)
		}
	}
	time.Sleep(50 * time.Millisecond) // let the stall write its first deltas

	closed := make(chan struct{})
	go func() { s.Close(); s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(prompt):
		t.Fatalf("Close() with a hanging request did not return within %v", prompt)
	}
	for range 2 {
		select {
		case err := <-errc:
			if err == nil {
				t.Errorf("request cut by Close() error = nil, want an error")
			}
		case <-time.After(prompt):
			t.Fatalf("request cut by Close() did not return within %v", prompt)
		}
	}
	if _, err := http.Get(s.URL() + "/v1/models"); err == nil {
		t.Errorf("GET after Close() error = nil, want connection refused")
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct {
		method, path, body string
		status             int
		contains           string
	}{
		{"GET", "/v1/models", "", 200, `"id":"mock-model"`},
		{"GET", "/models", "", 200, `"id":"mock-model"`},
		{"GET", "/v1/nothing", "", 404, `"error"`},
		{"POST", "/v1/responses", "{}", 200, `"object":"response"`},
		{"POST", "/v1/messages", "{}", 200, `"type":"message"`},
		{"POST", "/v1/messages?beta=true", "{}", 200, `"type":"message"`},
		{"GET", "/v1/messages", "", 405, `"type":"invalid_request_error"`},
		{"POST", "/v1/messages", "not json", 400, `"type":"invalid_request_error"`},
		{"POST", "/v1/messages", `{"messages":{"role":"user"}}`, 400, `"type":"error"`},
		{"POST", "/v1/messages", `{"messages":[{"role":"user","content":42}]}`, 200, `Hello from`},
		{"POST", "/v1/messages", `{"system":7,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":[{"type":"image"},{"type":"tool_result","content":{"x":1}}]}]}`, 200, `Hello from`},
		{"POST", "/v1/messages", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`, 400, "must define tools"},
		{"POST", "/v1/messages", `{"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},{"role":"user","content":"go on"}]}`, 400, "ids were found without `tool_result` blocks immediately after: t1"},
		{"POST", "/v1/messages/count_tokens?beta=true", `{"messages":[{"role":"user","content":"hi MOCK_401"}]}`, 200, `{"input_tokens":1000}`},
		{"POST", "/v1/messages/count_tokens", `{"messages":[{"role":"user","content":"hi MOCK_BIGUSAGE"}]}`, 200, `{"input_tokens":1500000}`},
		{"POST", "/v1/messages/count_tokens", `[]`, 400, `"type":"invalid_request_error"`},
		{"GET", "/v1/messages/count_tokens", "", 405, `"type":"invalid_request_error"`},
		{"GET", "/v1/chat/completions", "", 405, `"error"`},
		{"POST", "/v1/chat/completions", "not json", 400, `"invalid_request_error"`},
		{"POST", "/v1/chat/completions", `{"messages":{"role":"user"}}`, 400, `"invalid_request_error"`},
		{"POST", "/v1/chat/completions", `[]`, 400, `"invalid_request_error"`},
		{"POST", "/v1/chat/completions", ``, 400, `"invalid_request_error"`},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":42}]}`, 200, `Hello from`},
		{"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":null},{"role":"tool"}]}`, 200, `Hello from`},
	} {
		t.Run(tt.method+tt.path+tt.body, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(t.Context(), tt.method, s.URL()+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s error = %v", tt.method, tt.path, err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.contains) {
				t.Errorf("%s %s %q = %d %s, want %d containing %s", tt.method, tt.path, tt.body, resp.StatusCode, b, tt.status, tt.contains)
			}
		})
	}
}

func TestRequests(t *testing.T) {
	t.Parallel()
	s := start(t)
	url := s.URL() + "/v1/chat/completions"
	readStream(t, post(t, t.Context(), url, chatBody(t, "MOCK_TOOL", true, map[string]string{"bash": "{}"}, "")).Body)
	io.Copy(io.Discard, post(t, t.Context(), url, chatBody(t, "MOCK_TOOL", false, map[string]string{"bash": "{}"}, "out")).Body)
	io.Copy(io.Discard, post(t, t.Context(), url, chatBody(t, "MOCK_401", true, nil, "")).Body)

	got := s.Requests()
	want := []mockllm.Request{
		{Method: "POST", Path: "/v1/chat/completions", Scenario: mockllm.Tool, Model: "mock-model", Stream: true, Tools: []string{"bash"}},
		{Method: "POST", Path: "/v1/chat/completions", Scenario: mockllm.Tool, Model: "mock-model", Stream: false, Tools: []string{"bash"}, ToolResult: true},
		{Method: "POST", Path: "/v1/chat/completions", Scenario: mockllm.Unauthorized, Model: "mock-model", Stream: true},
	}
	if len(got) != len(want) {
		t.Fatalf("Requests() = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Method != w.Method || g.Path != w.Path || g.Scenario != w.Scenario || g.Model != w.Model ||
			g.Stream != w.Stream || g.ToolResult != w.ToolResult || strings.Join(g.Tools, ",") != strings.Join(w.Tools, ",") {
			t.Errorf("Requests()[%d] = %+v, want %+v", i, g, w)
		}
	}
}

func TestScenarioChoice(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		body string
		want mockllm.Scenario
	}{
		{"string content", `{"messages":[{"role":"user","content":"x MOCK_500"}]}`, mockllm.ServerError},
		{"parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"MOCK_HANG"}]}]}`, mockllm.Hang},
		{"latest user wins", `{"messages":[{"role":"user","content":"MOCK_401"},{"role":"assistant","content":"MOCK_500"},{"role":"user","content":"MOCK_BIGUSAGE"}]}`, mockllm.BigUsage},
		{"earlier user when latest has none", `{"messages":[{"role":"user","content":"MOCK_429"},{"role":"user","content":"go on"}]}`, mockllm.RateLimited},
		{"system fallback", `{"messages":[{"role":"system","content":"MOCK_OVERFLOW"},{"role":"user","content":"hi"}]}`, mockllm.Overflow},
		{"user over system", `{"messages":[{"role":"system","content":"MOCK_OVERFLOW"},{"role":"user","content":"MOCK_503"}]}`, mockllm.Overloaded},
		{"unknown marker skipped", `{"messages":[{"role":"user","content":"MOCK_NOPE MOCK_TEXTS then MOCK_STALL"}]}`, mockllm.Stall},
		{"default", `{"messages":[{"role":"user","content":"hello"}]}`, mockllm.Text},
		{"no messages", `{}`, mockllm.Text},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Each subtest has its own server so Requests() is its own.
			s := start(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/chat/completions", strings.NewReader(tt.body))
			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			// The hang and stall scenarios never end: stop the client once
			// the server has recorded the call (it records a call before
			// answering it), or once it has its whole answer.
		wait:
			for len(s.Requests()) == 0 {
				select {
				case <-done:
					break wait
				case <-t.Context().Done():
					break wait
				case <-time.After(time.Millisecond):
				}
			}
			cancel()
			<-done
			if got := s.Requests(); len(got) != 1 || got[0].Scenario != tt.want {
				t.Errorf("POST(%s) Requests() = %+v, want one with scenario %s", tt.body, got, tt.want)
			}
		})
	}
}

func TestParseScenario(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		text   string
		want   mockllm.Scenario
		wantOK bool
	}{
		{"MOCK_TEXT", mockllm.Text, true},
		{"please MOCK_TOOL.", mockllm.Tool, true},
		{"(MOCK_401)", mockllm.Unauthorized, true},
		{"MOCK_4010 MOCK_429", mockllm.RateLimited, true},
		{"MOCK_", "", false},
		{"mock_text", "", false},
		{"", "", false},
	} {
		got, ok := mockllm.ParseScenario(tt.text)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseScenario(%q) = %q, %v, want %q, %v", tt.text, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestStartWith(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		addr   string
		wantOK bool
	}{
		{"", true},
		{"127.0.0.1:0", true},
		{"[::1]:0", true},
		{"0.0.0.0:0", false},
		{":0", false},
		{"localhost:0", false},
		{"127.0.0.1", false},
	} {
		s, err := mockllm.StartWith(mockllm.Options{Addr: tt.addr})
		if (err == nil) != tt.wantOK {
			t.Errorf("StartWith(Addr %q) error = %v, want ok %v", tt.addr, err, tt.wantOK)
		}
		if err == nil {
			if tt.addr == "" && !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
				t.Errorf("StartWith(Addr %q).URL() = %q, want http://127.0.0.1:PORT", tt.addr, s.URL())
			}
			s.Close()
		}
	}
}

func TestChunkDelay(t *testing.T) {
	t.Parallel()
	const delay = 30 * time.Millisecond
	s, err := mockllm.StartWith(mockllm.Options{ChunkDelay: delay})
	if err != nil {
		t.Fatalf("StartWith() error = %v", err)
	}
	t.Cleanup(s.Close)
	begin := time.Now()
	st := readStream(t, post(t, t.Context(), s.URL()+"/v1/chat/completions", chatBody(t, "MOCK_TEXT", true, nil, "")).Body)
	// 5 text deltas, a finish chunk, a usage chunk and [DONE] follow the role chunk.
	if d := time.Since(begin); st.text != mockllm.TextAnswer || d < 8*delay {
		t.Errorf("stream with ChunkDelay %v = %q after %v, want %q after at least %v", delay, st.text, d, mockllm.TextAnswer, 8*delay)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	s, err := mockllm.StartWith(mockllm.Options{RetryAfter: 1500 * time.Millisecond})
	if err != nil {
		t.Fatalf("StartWith() error = %v", err)
	}
	t.Cleanup(s.Close)
	for _, tt := range []struct {
		scenario          mockllm.Scenario
		wantMS, wantAfter string
	}{
		{mockllm.RateLimited, "1500", "2"},
		{mockllm.ServerError, "1500", "2"},
		{mockllm.Overloaded, "1500", "2"},
		{mockllm.Unauthorized, "", ""},
		{mockllm.Overflow, "", ""},
	} {
		t.Run(string(tt.scenario), func(t *testing.T) {
			t.Parallel()
			resp := post(t, t.Context(), s.URL()+"/v1/chat/completions", chatBody(t, string(tt.scenario), true, nil, ""))
			ms, after := resp.Header.Get("Retry-After-Ms"), resp.Header.Get("Retry-After")
			if ms != tt.wantMS || after != tt.wantAfter {
				t.Errorf("POST(%s) retry-after-ms, retry-after = %q, %q, want %q, %q", tt.scenario, ms, after, tt.wantMS, tt.wantAfter)
			}
		})
	}
}

func TestScenariosAllParse(t *testing.T) {
	t.Parallel()
	all := mockllm.Scenarios()
	if len(all) != 25 {
		t.Errorf("len(Scenarios()) = %d, want 25", len(all))
	}
	for _, s := range all {
		if got, ok := mockllm.ParseScenario("x " + string(s) + " y"); got != s || !ok {
			t.Errorf("ParseScenario(%q) = %q, %v, want %q, true", s, got, ok, s)
		}
	}
	all[0] = "MOCK_CHANGED"
	if mockllm.Scenarios()[0] == "MOCK_CHANGED" {
		t.Errorf("Scenarios() shares its array with the caller")
	}
}

// wantNoResponse sends req to a hanging scenario, cancels it after 200 ms and
// fails t unless the request got no response and ended promptly with
// context.Canceled.
func wantNoResponse(t *testing.T, req *http.Request, cancel context.CancelFunc) {
	t.Helper()
	time.AfterFunc(200*time.Millisecond, cancel)
	begin := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("POST = %d, want no response", resp.StatusCode)
	}
	if d := time.Since(begin); !errors.Is(err, context.Canceled) || d > prompt {
		t.Errorf("POST = %v after %v, want context.Canceled within %v", err, d, prompt)
	}
}

// TestToolLoop: in each wire API, ToolLoop calls the shell tool with a new
// call id while the conversation ends in a tool result (or in the prompt with
// the marker), and answers LoopAnswer to a later user message or when no
// tools are offered.
func TestToolLoop(t *testing.T) {
	t.Parallel()
	s := start(t)
	const prompt = "loop MOCK_TOOLLOOP"
	const finish = "stop using tools and answer now"
	user := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
	chatTools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "bash", "parameters": map[string]any{}}}}
	msgTools := []any{map[string]any{"name": "Bash", "input_schema": map[string]any{}}}
	respTools := []any{map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{}}}
	// Each API's conversation after n tool calls and results, and where to
	// find the answer's tool call id and text in a non-streamed reply.
	apis := []struct {
		path           string
		tools          []any
		conv           func(n int) []any
		key            string // "messages" or "input"
		idPath, txPath string // gjson paths
	}{
		{"/v1/chat/completions", chatTools, func(n int) []any {
			c := []any{user(prompt)}
			for i := 1; i <= n; i++ {
				c = append(c, map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": mockllm.LoopCallID(i), "type": "function",
					"function": map[string]any{"name": "bash", "arguments": "{}"}}}},
					map[string]any{"role": "tool", "tool_call_id": mockllm.LoopCallID(i), "content": "out"})
			}
			return c
		}, "messages", "choices.0.message.tool_calls.0.id", "choices.0.message.content"},
		{"/v1/messages", msgTools, func(n int) []any {
			c := []any{user(prompt)}
			for i := 1; i <= n; i++ {
				c = append(c, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": mockllm.LoopCallID(i), "name": "Bash", "input": map[string]any{}}}},
					map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": mockllm.LoopCallID(i), "content": "out"}}})
			}
			return c
		}, "messages", "content.#(type==\"tool_use\").id", "content.#(type==\"text\").text"},
		{"/v1/responses", respTools, func(n int) []any {
			c := []any{map[string]any{"type": "message", "role": "user", "content": prompt}}
			for i := 1; i <= n; i++ {
				c = append(c, map[string]any{"type": "function_call", "call_id": mockllm.LoopCallID(i), "name": "exec_command", "arguments": "{}"},
					map[string]any{"type": "reasoning", "summary": []any{}},
					map[string]any{"type": "function_call_output", "call_id": mockllm.LoopCallID(i), "output": "out"})
			}
			return c
		}, "input", "output.#(type==\"function_call\").call_id", "output.#(type==\"message\").content.0.text"},
	}
	for _, api := range apis {
		post := func(conv []any, tools []any) (id, text string) {
			t.Helper()
			body, err := json.Marshal(map[string]any{"model": "m", "stream": false, api.key: conv, "tools": tools})
			if err != nil {
				t.Fatal(err)
			}
			resp := post(t, t.Context(), s.URL()+api.path, body)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("POST %s = %d %s", api.path, resp.StatusCode, b)
			}
			return gjson.GetBytes(b, api.idPath).String(), gjson.GetBytes(b, api.txPath).String()
		}
		for n := 0; n <= 2; n++ {
			if id, text := post(api.conv(n), api.tools); id != mockllm.LoopCallID(n+1) || text != "" {
				t.Errorf("%s after %d tool results: tool call %q, text %q; want call %q and no text", api.path, n, id, text, mockllm.LoopCallID(n+1))
			}
		}
		finishItem := user(finish)
		if api.key == "input" {
			finishItem = map[string]any{"type": "message", "role": "user", "content": finish}
		}
		if id, text := post(append(api.conv(2), finishItem), api.tools); id != "" || text != mockllm.LoopAnswer {
			t.Errorf("%s with a later user message: tool call %q, text %q; want no call and %q", api.path, id, text, mockllm.LoopAnswer)
		}
		// (With no tools, the Messages API refuses a tool history: see
		// TestRoutes; so the conversation here has none.)
		if id, text := post(api.conv(0), nil); id != "" || text != mockllm.LoopAnswer {
			t.Errorf("%s with no tools offered: tool call %q, text %q; want no call and %q", api.path, id, text, mockllm.LoopAnswer)
		}
	}
}

// TestToolForever: ToolForever calls a tool even after a later user message
// asks it to stop, and answers only when no tools are offered.
func TestToolForever(t *testing.T) {
	t.Parallel()
	s := start(t)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "bash", "parameters": map[string]any{}}}}
	conv := []any{
		map[string]any{"role": "user", "content": "go MOCK_TOOLFOREVER"},
		map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "bash", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": "out"},
		map[string]any{"role": "user", "content": "stop using tools and answer now"},
	}
	for _, tt := range []struct {
		tools    []any
		id, text string
	}{{tools, mockllm.LoopCallID(2), ""}, {nil, "", mockllm.LoopAnswer}} {
		body, err := json.Marshal(map[string]any{"model": "m", "messages": conv, "tools": tt.tools})
		if err != nil {
			t.Fatal(err)
		}
		resp := post(t, t.Context(), s.URL()+"/v1/chat/completions", body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if id, text := gjson.GetBytes(b, "choices.0.message.tool_calls.0.id").String(), gjson.GetBytes(b, "choices.0.message.content").String(); id != tt.id || text != tt.text {
			t.Errorf("tools %v: call %q text %q, want %q %q", tt.tools != nil, id, text, tt.id, tt.text)
		}
	}
}

// TestErrorBodies checks the error bodies that name the request or the
// time, or that are not OpenAI's own shape.
func TestErrorBodies(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			body := func(sc mockllm.Scenario) (int, map[string]any) {
				var b []byte
				if path == "/v1/responses" {
					b = responsesBody(t, "hi "+string(sc), true, nil, nil)
				} else {
					b = chatBody(t, "hi "+string(sc), true, nil, "")
				}
				resp := post(t, t.Context(), s.URL()+path, b)
				defer resp.Body.Close()
				var v struct {
					Error map[string]any `json:"error"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
					t.Fatalf("POST(%s) body: %v", sc, err)
				}
				return resp.StatusCode, v.Error
			}
			if st, e := body(mockllm.PaymentRequired); st != 402 || e["code"] != float64(402) || e["message"] != mockllm.PaymentRequiredMessage {
				t.Errorf("402: %d %v, want 402 with code 402 and %q", st, e, mockllm.PaymentRequiredMessage)
			}
			if st, e := body(mockllm.Quota); st != 429 || e["type"] != "insufficient_quota" || e["message"] != mockllm.QuotaMessage {
				t.Errorf("quota: %d %v, want 429 insufficient_quota %q", st, e, mockllm.QuotaMessage)
			}
			if _, e := body(mockllm.NoModel); !strings.Contains(fmt.Sprint(e["message"]), "does not exist") || !strings.Contains(fmt.Sprint(e["message"]), "`") {
				t.Errorf("no model: %v, want the model named", e)
			}
			if _, e := body(mockllm.ResetTime); !strings.Contains(fmt.Sprint(e["message"]), "Please try again in 20s.") {
				t.Errorf("reset time: %v, want \"Please try again in 20s.\"", e)
			}
			before := time.Now()
			st, e := body(mockllm.UsageLimit)
			at, _ := e["resets_at"].(float64)
			if want := before.Add(mockllm.ResetAfter).Unix(); st != 429 || e["type"] != "usage_limit_reached" || e["plan_type"] != "plus" ||
				int64(at) < want || int64(at) > want+2 || e["resets_in_seconds"] != float64(20) {
				t.Errorf("usage limit: %d %v, want 429 usage_limit_reached, plan plus, resets_at about %d, resets_in_seconds 20", st, e, want)
			}
		})
	}
}

// TestBrokenConnections checks that [Drop] and [Reset] end the connection
// without a response, and [Cut] mid-stream, at once, not at a timeout.
func TestBrokenConnections(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct {
		scenario  mockllm.Scenario
		stream    bool
		wantReset bool
	}{
		{mockllm.Drop, true, false},
		{mockllm.Reset, true, true},
		{mockllm.Cut, true, false},
		{mockllm.Cut, false, false},
	} {
		t.Run(fmt.Sprintf("%s/stream=%v", tt.scenario, tt.stream), func(t *testing.T) {
			t.Parallel()
			client := &http.Client{Timeout: prompt}
			begin := time.Now()
			resp, err := client.Post(s.URL()+"/v1/chat/completions", "application/json", bytes.NewReader(chatBody(t, string(tt.scenario), tt.stream, nil, "")))
			if tt.scenario != mockllm.Cut {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("POST(%s) = %d, want no response", tt.scenario, resp.StatusCode)
				}
				if isTimeout(err) || time.Since(begin) > prompt {
					t.Errorf("POST(%s) = %v after %v, want an error at once", tt.scenario, err, time.Since(begin))
				}
				if reset := strings.Contains(err.Error(), "connection reset"); reset != tt.wantReset {
					t.Errorf("POST(%s) = %v, want a reset: %v", tt.scenario, err, tt.wantReset)
				}
				return
			}
			if err != nil {
				t.Fatalf("POST(%s) error = %v", tt.scenario, err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || err == nil || isTimeout(err) {
				t.Errorf("POST(%s) = %d, %q, %v, want 200 and an error that is not a timeout", tt.scenario, resp.StatusCode, b, err)
			}
			if tt.stream && (!strings.Contains(string(b), `"content":"Hello"`) || strings.Contains(string(b), "[DONE]")) {
				t.Errorf("cut stream = %q, want the first deltas and no end", b)
			}
		})
	}
}

func TestRequestSystem(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, path, body, want string
	}{
		{"messages string", "/v1/messages", `{"model":"m","max_tokens":1,"system":"SYS","messages":[{"role":"user","content":"hi"}]}`, "SYS"},
		{"messages blocks", "/v1/messages", `{"model":"m","max_tokens":1,"system":[{"type":"text","text":"A"},{"type":"text","text":"B"}],"messages":[{"role":"user","content":"hi"}]}`, "A\nB"},
		{"messages none", "/v1/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"chat system and developer", "/v1/chat/completions", `{"messages":[{"role":"system","content":"S1"},{"role":"user","content":"hi"},{"role":"developer","content":[{"type":"text","text":"D1"}]}]}`, "S1\n\nD1"},
		{"responses instructions and developer", "/v1/responses", `{"model":"m","instructions":"INS","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"DEV"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`, "INS\n\nDEV"},
		{"responses string input", "/v1/responses", `{"model":"m","input":"hi"}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := start(t)
			io.Copy(io.Discard, post(t, t.Context(), s.URL()+tt.path, []byte(tt.body)).Body)
			if got := s.Requests(); len(got) != 1 || got[0].System != tt.want {
				t.Errorf("POST %s %s: Requests() = %+v, want one with System %q", tt.path, tt.body, got, tt.want)
			}
		})
	}
}
