package mockllm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/mockllm"
)

// claudeTools are the schemas of two of Claude Code's tools.
var claudeTools = map[string]string{
	"Bash": `{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"},"timeout":{"type":"number"}},"required":["command"]}`,
	"Read": `{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"number"}},"required":["file_path"]}`,
}

// messagesBody builds a Messages request the way Claude Code does: system
// and user content as arrays of text blocks. tools maps a tool name to its
// input schema; toolResult, if not nil, adds a tool_use and a tool_result
// block whose content it is (a string or an array of blocks).
func messagesBody(t *testing.T, text string, stream bool, tools map[string]string, toolResult any) []byte {
	t.Helper()
	messages := []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<system-reminder>context</system-reminder>"},
			map[string]any{"type": "text", "text": text, "cache_control": map[string]any{"type": "ephemeral"}},
		}},
	}
	if toolResult != nil {
		messages = append(messages,
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "Running it."},
				map[string]any{"type": "tool_use", "id": mockllm.ToolCallID, "name": "Bash", "input": map[string]any{"command": "x"}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": mockllm.ToolCallID, "content": toolResult, "is_error": false},
			}},
		)
	}
	var ts []any
	for _, name := range slices.Sorted(maps.Keys(tools)) { // in a fixed order, for MOCK_LISTTOOLS
		ts = append(ts, map[string]any{"name": name, "description": "a tool", "input_schema": json.RawMessage(tools[name])})
	}
	b, err := json.Marshal(map[string]any{
		"model": "claude-mock", "max_tokens": 32000, "stream": stream, "messages": messages, "tools": ts,
		"system": []any{map[string]any{"type": "text", "text": "You are Claude Code."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// msgUsage is input, cache creation, cache read and output tokens.
type msgUsage [4]int

type msgUsageJSON struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

func (u msgUsageJSON) array() msgUsage {
	return msgUsage{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens}
}

type msgBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type msgMessage struct {
	ID         string       `json:"id"`
	Type       string       `json:"type"`
	Role       string       `json:"role"`
	Model      string       `json:"model"`
	Content    []msgBlock   `json:"content"`
	StopReason *string      `json:"stop_reason"`
	Usage      msgUsageJSON `json:"usage"`
}

type msgEvent struct {
	Type         string      `json:"type"`
	Message      *msgMessage `json:"message"`
	Index        *int        `json:"index"`
	ContentBlock *msgBlock   `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *msgUsageJSON `json:"usage"`
}

// msgStream is what a streamed Messages answer added up to.
type msgStream struct {
	shape                  string // event types in order, a run of deltas as one "delta*"
	model                  string
	text, toolID, toolName string
	args                   string
	pieces                 int // content_block_delta events
	stop                   string
	start, end             msgUsage // of message_start and message_delta
}

// readMessagesEvent reads one SSE event, checking its framing; io.EOF at a
// clean end.
func readMessagesEvent(t *testing.T, r *bufio.Reader) (msgEvent, error) {
	t.Helper()
	name, err := r.ReadString('\n')
	if err == io.EOF && name == "" {
		return msgEvent{}, io.EOF
	}
	if err != nil {
		return msgEvent{}, err
	}
	data, err := r.ReadString('\n')
	if err != nil {
		return msgEvent{}, err
	}
	blank, err := r.ReadString('\n')
	if err != nil {
		return msgEvent{}, err
	}
	if !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") || blank != "\n" {
		t.Fatalf("SSE event = %q, %q, %q, want \"event: …\\n\", \"data: …\\n\", \"\\n\"", name, data, blank)
	}
	var e msgEvent
	if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &e); err != nil {
		t.Fatalf("json.Unmarshal(%q) error = %v", data, err)
	}
	if want := strings.TrimSuffix(strings.TrimPrefix(name, "event: "), "\n"); e.Type != want {
		t.Fatalf("event %q has data type %q", want, e.Type)
	}
	if strings.HasPrefix(e.Type, "content_block_") && (e.Index == nil || *e.Index != 0) {
		t.Errorf("%s index = %v, want 0", e.Type, e.Index)
	}
	return e, nil
}

// readMessagesStream reads a whole SSE body.
func readMessagesStream(t *testing.T, body io.Reader) msgStream {
	t.Helper()
	var st msgStream
	var shape []string
	r := bufio.NewReader(body)
	for {
		e, err := readMessagesEvent(t, r)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading stream after %q: %v", shape, err)
		}
		name := e.Type
		switch e.Type {
		case "message_start":
			m := e.Message
			if m == nil || m.Type != "message" || m.Role != "assistant" || len(m.Content) != 0 || m.StopReason != nil || !strings.HasPrefix(m.ID, "msg_") {
				t.Errorf("message_start message = %+v, want an empty assistant message", m)
			}
			if m != nil {
				st.model, st.start = m.Model, m.Usage.array()
			}
		case "content_block_start":
			b := e.ContentBlock
			switch {
			case b != nil && b.Type == "text" && b.Text != nil && *b.Text == "":
			case b != nil && b.Type == "tool_use" && string(b.Input) == "{}":
				st.toolID, st.toolName = b.ID, b.Name
			default:
				t.Errorf("content_block_start block = %+v, want an empty text or tool_use block", b)
			}
		case "content_block_delta":
			name = "delta*"
			st.pieces++
			switch e.Delta.Type {
			case "text_delta":
				st.text += e.Delta.Text
			case "input_json_delta":
				st.args += e.Delta.PartialJSON
			default:
				t.Errorf("content_block_delta type = %q", e.Delta.Type)
			}
		case "message_delta":
			st.stop = e.Delta.StopReason
			if e.Usage != nil {
				st.end = e.Usage.array()
			}
		}
		if len(shape) == 0 || shape[len(shape)-1] != name || name != "delta*" {
			shape = append(shape, name)
		}
	}
	st.shape = strings.Join(shape, " ")
	return st
}

const (
	textShape  = "message_start ping content_block_start delta* content_block_stop message_delta message_stop"
	stallShape = "message_start ping content_block_start delta*"
)

var (
	msgNormalStart = msgUsage{mockllm.PromptTokens - mockllm.CachedTokens, 0, mockllm.CachedTokens, 1}
	msgNormalEnd   = msgUsage{mockllm.PromptTokens - mockllm.CachedTokens, 0, mockllm.CachedTokens, mockllm.CompletionTokens}
	msgBigStart    = msgUsage{mockllm.BigPromptTokens - mockllm.BigCachedTokens, 0, mockllm.BigCachedTokens, 1}
	msgBigEnd      = msgUsage{mockllm.BigPromptTokens - mockllm.BigCachedTokens, 0, mockllm.BigCachedTokens, mockllm.BigCompletionTokens}
)

type msgErrorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestMessagesScenarios runs every scenario once, streaming, through the
// Messages API as Claude Code calls it.
func TestMessagesScenarios(t *testing.T) {
	t.Parallel()
	s := start(t)
	tests := []struct {
		scenario mockllm.Scenario
		status   int // 0: no response (hang)
		want     msgStream
		errType  string
		errMsg   string
		args     string // after the marker in the prompt
	}{
		{scenario: mockllm.Text, status: 200, want: msgStream{shape: textShape, model: "claude-mock", text: mockllm.TextAnswer, pieces: 5,
			stop: "end_turn", start: msgNormalStart, end: msgNormalEnd}},
		{scenario: mockllm.BigUsage, status: 200, want: msgStream{shape: textShape, model: "claude-mock", text: mockllm.TextAnswer, pieces: 5,
			stop: "end_turn", start: msgBigStart, end: msgBigEnd}},
		{scenario: mockllm.Tool, status: 200, want: msgStream{shape: textShape, model: "claude-mock", toolID: mockllm.ToolCallID, toolName: "Bash",
			args: `{"command":"echo mock-tool-ok","description":"Print a marker"}`, pieces: 3, stop: "tool_use", start: msgNormalStart, end: msgNormalEnd}},
		{scenario: mockllm.ToolForever, status: 200, want: msgStream{shape: textShape, model: "claude-mock", toolID: mockllm.LoopCallID(1), toolName: "Bash",
			args: `{"command":"echo mock-tool-ok","description":"Print a marker"}`, pieces: 3, stop: "tool_use", start: msgNormalStart, end: msgNormalEnd}},
		{scenario: mockllm.ToolLoop, status: 200, want: msgStream{shape: textShape, model: "claude-mock", toolID: mockllm.LoopCallID(1), toolName: "Bash",
			args: `{"command":"echo mock-tool-ok","description":"Print a marker"}`, pieces: 3, stop: "tool_use", start: msgNormalStart, end: msgNormalEnd}},
		{scenario: mockllm.Unauthorized, status: 401, errType: "authentication_error", errMsg: "invalid x-api-key"},
		{scenario: mockllm.RateLimited, status: 429, errType: "rate_limit_error", errMsg: "rate limit"},
		{scenario: mockllm.ServerError, status: 500, errType: "api_error", errMsg: "Internal server error"},
		{scenario: mockllm.Overloaded, status: 529, errType: "overloaded_error", errMsg: "Overloaded"},
		{scenario: mockllm.Overflow, status: 400, errType: "invalid_request_error", errMsg: "prompt is too long: 200000 tokens > 128000 maximum"},
		{scenario: mockllm.Quota, status: 400, errType: "invalid_request_error", errMsg: mockllm.CreditMessage},
		{scenario: mockllm.PaymentRequired, status: 402, errType: "billing_error", errMsg: mockllm.PaymentRequiredMessage},
		{scenario: mockllm.NoModel, status: 404, errType: "not_found_error", errMsg: "model: claude-mock"},
		{scenario: mockllm.ResetTime, status: 429, errType: "rate_limit_error", errMsg: "rate limit"},
		{scenario: mockllm.UsageLimit, status: 429, errType: "rate_limit_error", errMsg: "Rate limit exceeded"},
		{scenario: mockllm.Hang, status: 0},
		{scenario: mockllm.Drop, status: 0},
		{scenario: mockllm.Reset, status: 0},
		{scenario: mockllm.Stall, status: 200, want: msgStream{shape: stallShape, model: "claude-mock", text: "Hello from", pieces: mockllm.StallDeltas,
			start: msgNormalStart}},
		{scenario: mockllm.Cut, status: 200, want: msgStream{shape: stallShape, model: "claude-mock", text: "Hello from", pieces: mockllm.StallDeltas,
			start: msgNormalStart}},
		{scenario: mockllm.Call, status: 200, args: ` read {"file_path":"/x"}`, want: msgStream{shape: textShape, model: "claude-mock", toolID: mockllm.ToolCallID,
			toolName: "Read", args: `{"file_path":"/x"}`, pieces: 3, stop: "tool_use", start: msgNormalStart, end: msgNormalEnd}},
		{scenario: mockllm.ListTools, status: 200, want: msgStream{shape: textShape, model: "claude-mock", text: "TOOLS: [Bash,Read]", pieces: 2,
			stop: "end_turn", start: msgNormalStart, end: msgNormalEnd}},
		{scenario: mockllm.Answer, status: 200, args: ` {"score":3}`, want: msgStream{shape: textShape, model: "claude-mock", text: `{"score":3}`, pieces: 3,
			stop: "end_turn", start: msgNormalStart, end: msgNormalEnd}},
	}
	var covered []mockllm.Scenario
	for _, tt := range tests {
		covered = append(covered, tt.scenario)
		t.Run(string(tt.scenario), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages?beta=true",
				bytes.NewReader(messagesBody(t, "do it "+string(tt.scenario)+tt.args, true, claudeTools, nil)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("x-api-key", "x")
			resp, err := http.DefaultClient.Do(req)
			if tt.status == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("POST(%s) = %d, want no response", tt.scenario, resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("POST(%s) error = %v", tt.scenario, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("POST(%s) status = %d, want %d", tt.scenario, resp.StatusCode, tt.status)
			}
			if tt.errType != "" {
				var body msgErrorBody
				err := json.NewDecoder(resp.Body).Decode(&body)
				if err != nil || body.Type != "error" || body.Error.Type != tt.errType ||
					!strings.Contains(strings.ToLower(body.Error.Message), strings.ToLower(tt.errMsg)) {
					t.Errorf("POST(%s) body = %+v, %v, want error type %s, message containing %q", tt.scenario, body, err, tt.errType, tt.errMsg)
				}
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("POST(%s) Content-Type = %q, want text/event-stream", tt.scenario, ct)
			}
			if tt.scenario == mockllm.Stall || tt.scenario == mockllm.Cut {
				// readMessagesStream fails on the cut; read what precedes it.
				r := bufio.NewReader(resp.Body)
				var st msgStream
				for range 3 + mockllm.StallDeltas {
					e, err := readMessagesEvent(t, r)
					if err != nil {
						t.Fatalf("reading stalled stream: %v", err)
					}
					st.text += e.Delta.Text
					if e.Message != nil {
						st.model, st.start = e.Message.Model, e.Message.Usage.array()
					}
				}
				st.shape, st.pieces = stallShape, mockllm.StallDeltas
				if st != tt.want {
					t.Errorf("stalled stream = %+v, want %+v", st, tt.want)
				}
				_, err := readMessagesEvent(t, r)
				if err == nil || err == io.EOF {
					t.Errorf("%s stream after its deltas: %v, want an error", tt.scenario, err)
				}
				if tt.scenario == mockllm.Cut && ctx.Err() != nil {
					t.Errorf("cut stream after its deltas: %v at the deadline, want an error at once", err)
				}
				return
			}
			if st := readMessagesStream(t, resp.Body); st != tt.want {
				t.Errorf("POST(%s) stream = %+v, want %+v", tt.scenario, st, tt.want)
			}
		})
	}
	covered = append(covered, mockllm.StreamModel, mockllm.StreamError) // TestStreamFailures
	for _, sc := range mockllm.Scenarios() {
		if !slices.Contains(covered, sc) {
			t.Errorf("scenario %s is not covered", sc)
		}
	}
}

func TestMessagesNoStream(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct {
		name, prompt string
		toolResult   any
		wantType     string
		wantText     string
		wantTool     string
		wantInput    string
		stop         string
		usage        msgUsage
	}{
		{name: "text", prompt: "MOCK_TEXT", wantType: "text", wantText: mockllm.TextAnswer, stop: "end_turn", usage: msgNormalEnd},
		{name: "big usage", prompt: "MOCK_BIGUSAGE", wantType: "text", wantText: mockllm.TextAnswer, stop: "end_turn", usage: msgBigEnd},
		{name: "tool call", prompt: "MOCK_TOOL", wantType: "tool_use", wantTool: "Bash",
			wantInput: `{"command":"echo mock-tool-ok","description":"Print a marker"}`, stop: "tool_use", usage: msgNormalEnd},
		{name: "tool answer", prompt: "MOCK_TOOL", toolResult: "ok\n", wantType: "text", wantText: mockllm.ToolAnswerPrefix + "ok",
			stop: "end_turn", usage: msgNormalEnd},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := post(t, t.Context(), s.URL()+"/v1/messages", messagesBody(t, tt.prompt, false, claudeTools, tt.toolResult))
			var m msgMessage
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("POST(%q) = %d, %v, want 200 and JSON", tt.prompt, resp.StatusCode, err)
			}
			if m.Type != "message" || m.Role != "assistant" || m.Model != "claude-mock" || len(m.Content) != 1 {
				t.Fatalf("POST(%q) = %+v, want an assistant message with one block", tt.prompt, m)
			}
			b := m.Content[0]
			var text string
			if b.Text != nil {
				text = *b.Text
			}
			if b.Type != tt.wantType || text != tt.wantText || b.Name != tt.wantTool || string(b.Input) != tt.wantInput {
				t.Errorf("POST(%q) block = %+v (text %q, input %s), want %s %q %q %s", tt.prompt, b, text, b.Input, tt.wantType, tt.wantText, tt.wantTool, tt.wantInput)
			}
			if tt.wantTool != "" && b.ID != mockllm.ToolCallID {
				t.Errorf("POST(%q) tool id = %q, want %q", tt.prompt, b.ID, mockllm.ToolCallID)
			}
			if m.StopReason == nil || *m.StopReason != tt.stop || m.Usage.array() != tt.usage {
				t.Errorf("POST(%q) stop, usage = %v, %v, want %s, %v", tt.prompt, m.StopReason, m.Usage.array(), tt.stop, tt.usage)
			}
		})
	}
}

func TestMessagesToolRoundTrip(t *testing.T) {
	t.Parallel()
	s := start(t)
	output := "  " + mockllm.ToolOutput + "\n" + strings.Repeat("x", 300)
	answer := mockllm.ToolAnswerPrefix + strings.TrimSpace(output)[:mockllm.ToolResultMax]
	for _, tt := range []struct {
		name       string
		tools      map[string]string
		toolResult any // the second request's tool_result content
		wantTool   string
		wantArgs   string
	}{
		{
			name:       "claude Bash, string result",
			tools:      map[string]string{"Bash": claudeTools["Bash"], "Read": claudeTools["Read"], "Glob": "{}", "TodoWrite": "{}"},
			toolResult: output,
			wantTool:   "Bash",
			wantArgs:   `{"command":"echo mock-tool-ok","description":"Print a marker"}`,
		},
		{
			name:  "claude Bash, block result",
			tools: map[string]string{"Bash": claudeTools["Bash"]},
			toolResult: []any{
				map[string]any{"type": "text", "text": "  " + mockllm.ToolOutput},
				map[string]any{"type": "image", "source": map[string]any{}},
				map[string]any{"type": "text", "text": strings.Repeat("x", 300)},
			},
			wantTool: "Bash",
			wantArgs: `{"command":"echo mock-tool-ok","description":"Print a marker"}`,
		},
		{
			name:       "claude Read only",
			tools:      map[string]string{"Read": claudeTools["Read"], "Write": "{}"},
			toolResult: output,
			wantTool:   "Read",
			wantArgs:   `{"file_path":"/etc/hostname"}`,
		},
		{
			name:       "exec_command",
			tools:      map[string]string{"Read": "{}", "exec_command": `{"type":"object","properties":{"cmd":{"type":"string"}}}`},
			toolResult: output,
			wantTool:   "exec_command",
			wantArgs:   `{"cmd":"echo mock-tool-ok"}`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := s.URL() + "/v1/messages?beta=true"
			st := readMessagesStream(t, post(t, t.Context(), url, messagesBody(t, "run it MOCK_TOOL", true, tt.tools, nil)).Body)
			want := msgStream{shape: textShape, model: "claude-mock", toolID: mockllm.ToolCallID, toolName: tt.wantTool, args: tt.wantArgs,
				pieces: st.pieces, stop: "tool_use", start: msgNormalStart, end: msgNormalEnd}
			if st != want {
				t.Errorf("first call = %+v, want %+v", st, want)
			}
			if st.pieces < 2 {
				t.Errorf("first call input in %d pieces, want 2 or more", st.pieces)
			}
			if !json.Valid([]byte(st.args)) {
				t.Errorf("first call input %q is not JSON", st.args)
			}

			st = readMessagesStream(t, post(t, t.Context(), url, messagesBody(t, "run it MOCK_TOOL", true, tt.tools, tt.toolResult)).Body)
			want = msgStream{shape: textShape, model: "claude-mock", text: answer, pieces: st.pieces, stop: "end_turn", start: msgNormalStart, end: msgNormalEnd}
			if st != want {
				t.Errorf("second call = %+v, want %+v", st, want)
			}
		})
	}
	t.Run("no tools", func(t *testing.T) {
		t.Parallel()
		st := readMessagesStream(t, post(t, t.Context(), s.URL()+"/v1/messages", messagesBody(t, "MOCK_TOOL", true, nil, nil)).Body)
		if st.text != mockllm.TextAnswer || st.stop != "end_turn" || st.toolName != "" {
			t.Errorf("call without tools = %+v, want text %q, stop end_turn", st, mockllm.TextAnswer)
		}
	})
}

func TestMessagesErrors(t *testing.T) {
	t.Parallel()
	plain := start(t)
	fast, err := mockllm.StartWith(mockllm.Options{RetryAfter: 1500 * time.Millisecond})
	if err != nil {
		t.Fatalf("StartWith() error = %v", err)
	}
	t.Cleanup(fast.Close)
	for _, tt := range []struct {
		scenario          mockllm.Scenario
		status            int
		errType           string
		after, ms         string // retry-after, retry-after-ms without Options.RetryAfter
		fastAfter, fastMS string // with Options.RetryAfter 1.5 s
	}{
		{mockllm.Unauthorized, 401, "authentication_error", "", "", "", ""},
		{mockllm.RateLimited, 429, "rate_limit_error", "1", "1000", "2", "1500"},
		{mockllm.ServerError, 500, "api_error", "", "", "2", "1500"},
		{mockllm.Overloaded, 529, "overloaded_error", "", "", "2", "1500"},
		{mockllm.Overflow, 400, "invalid_request_error", "", "", "", ""},
	} {
		for _, streaming := range []bool{true, false} {
			for _, s := range []*mockllm.Server{plain, fast} {
				after, ms := tt.after, tt.ms
				if s == fast {
					after, ms = tt.fastAfter, tt.fastMS
				}
				t.Run(fmt.Sprintf("%s/stream=%v/retry-after=%q", tt.scenario, streaming, ms), func(t *testing.T) {
					t.Parallel()
					resp := post(t, t.Context(), s.URL()+"/v1/messages", messagesBody(t, "hi "+string(tt.scenario), streaming, claudeTools, nil))
					var body msgErrorBody
					err := json.NewDecoder(resp.Body).Decode(&body)
					if resp.StatusCode != tt.status || err != nil || body.Type != "error" || body.Error.Type != tt.errType || body.Error.Message == "" {
						t.Fatalf("POST(%s, stream %v) = %d, %+v, %v; want %d and an %s body", tt.scenario, streaming, resp.StatusCode, body, err, tt.status, tt.errType)
					}
					if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
						t.Errorf("POST(%s) Content-Type = %q, want application/json", tt.scenario, ct)
					}
					if a, m := resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"); a != after || m != ms {
						t.Errorf("POST(%s) retry-after, retry-after-ms = %q, %q, want %q, %q", tt.scenario, a, m, after, ms)
					}
				})
			}
		}
	}
}

// TestMessagesHangStall checks that a hanging or stalled answer is released
// as soon as the client gives up.
func TestMessagesHangStall(t *testing.T) {
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
		t.Run(fmt.Sprintf("%s/stream=%v", tt.scenario, tt.stream), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			body := messagesBody(t, string(tt.scenario), tt.stream, claudeTools, nil)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages?beta=true", bytes.NewReader(body))
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
			var types []string
			var text string
			if tt.stream {
				for range 3 + mockllm.StallDeltas {
					e, err := readMessagesEvent(t, r)
					if err != nil {
						t.Fatalf("reading stalled stream after %v: %v", types, err)
					}
					types = append(types, e.Type)
					text += e.Delta.Text
				}
				want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta"}
				if !slices.Equal(types, want) || text != "Hello from" {
					t.Errorf("stalled stream = %v %q, want %v %q", types, text, want, "Hello from")
				}
			}
			time.AfterFunc(200*time.Millisecond, cancel)
			begin := time.Now()
			rest, err := io.ReadAll(r)
			if d := time.Since(begin); err == nil || d > prompt {
				t.Errorf("reading stalled %s after %v = %q, %v after %v, want an error within %v", tt.scenario, types, rest, err, d, prompt)
			}
		})
	}
}

func TestMessagesRequests(t *testing.T) {
	t.Parallel()
	s := start(t)
	url := s.URL() + "/v1/messages?beta=true"
	readMessagesStream(t, post(t, t.Context(), url, messagesBody(t, "MOCK_TOOL", true, map[string]string{"Bash": "{}"}, nil)).Body)
	io.Copy(io.Discard, post(t, t.Context(), url, messagesBody(t, "MOCK_TOOL", false, map[string]string{"Bash": "{}"}, "out")).Body)
	io.Copy(io.Discard, post(t, t.Context(), url, messagesBody(t, "MOCK_401", true, nil, nil)).Body)
	io.Copy(io.Discard, post(t, t.Context(), s.URL()+"/v1/messages/count_tokens?beta=true", messagesBody(t, "MOCK_401", false, nil, nil)).Body)

	got := s.Requests()
	userText := "<system-reminder>context</system-reminder>\n"
	want := []mockllm.Request{
		{Method: "POST", Path: "/v1/messages", Scenario: mockllm.Tool, Model: "claude-mock", Stream: true, Tools: []string{"Bash"}, UserText: userText + "MOCK_TOOL"},
		{Method: "POST", Path: "/v1/messages", Scenario: mockllm.Tool, Model: "claude-mock", Stream: false, Tools: []string{"Bash"}, ToolResult: true, UserText: userText + "MOCK_TOOL"},
		{Method: "POST", Path: "/v1/messages", Scenario: mockllm.Unauthorized, Model: "claude-mock", Stream: true, UserText: userText + "MOCK_401"},
		{Method: "POST", Path: "/v1/messages/count_tokens"},
	}
	if len(got) != len(want) {
		t.Fatalf("Requests() = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Method != w.Method || g.Path != w.Path || g.Scenario != w.Scenario || g.Model != w.Model || g.UserText != w.UserText ||
			g.Stream != w.Stream || g.ToolResult != w.ToolResult || strings.Join(g.Tools, ",") != strings.Join(w.Tools, ",") {
			t.Errorf("Requests()[%d] = %+v, want %+v", i, g, w)
		}
	}
}

func TestMessagesScenarioChoice(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		body       string
		want       mockllm.Scenario
		toolResult bool
	}{
		{"string content", `{"messages":[{"role":"user","content":"x MOCK_500"}]}`, mockllm.ServerError, false},
		{"blocks", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"MOCK_HANG"}]}]}`, mockllm.Hang, false},
		{"blocks kept apart", `{"messages":[{"role":"user","content":[{"type":"text","text":"MOCK_401"},{"type":"text","text":"0 MOCK_429"}]}]}`, mockllm.Unauthorized, false},
		{"latest user wins", `{"messages":[{"role":"user","content":"MOCK_401"},{"role":"assistant","content":"MOCK_500"},{"role":"user","content":"MOCK_BIGUSAGE"}]}`, mockllm.BigUsage, false},
		{"tool result skipped", `{"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"MOCK_TOOL"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"MOCK_401"}]}]}`, mockllm.Tool, true},
		{"tool result blocks", `{"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"MOCK_500"}]},{"type":"text","text":"MOCK_TOOL"}]}]}`, mockllm.Tool, true},
		{"system string", `{"system":"MOCK_OVERFLOW","messages":[{"role":"user","content":"hi"}]}`, mockllm.Overflow, false},
		{"system blocks", `{"system":[{"type":"text","text":"x"},{"type":"text","text":"MOCK_503"}],"messages":[{"role":"user","content":"hi"}]}`, mockllm.Overloaded, false},
		{"system message", `{"system":"x","messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"MOCK_429"}]}]}`, mockllm.RateLimited, false},
		{"user over system", `{"system":"MOCK_OVERFLOW","messages":[{"role":"user","content":"MOCK_STALL"}]}`, mockllm.Stall, false},
		{"default", `{"messages":[{"role":"user","content":"hello"}]}`, mockllm.Text, false},
		{"no messages", `{}`, mockllm.Text, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := start(t)
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(tt.body))
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if got := s.Requests(); len(got) != 1 || got[0].Scenario != tt.want || got[0].ToolResult != tt.toolResult {
				t.Errorf("POST(%s) Requests() = %+v, want one with scenario %s, tool result %v", tt.body, got, tt.want, tt.toolResult)
			}
		})
	}
}

func TestMessagesChunkDelay(t *testing.T) {
	t.Parallel()
	const delay = 30 * time.Millisecond
	s, err := mockllm.StartWith(mockllm.Options{ChunkDelay: delay})
	if err != nil {
		t.Fatalf("StartWith() error = %v", err)
	}
	t.Cleanup(s.Close)
	begin := time.Now()
	st := readMessagesStream(t, post(t, t.Context(), s.URL()+"/v1/messages", messagesBody(t, "MOCK_TEXT", true, nil, nil)).Body)
	// ping, block start, 5 deltas, block stop, message_delta, message_stop
	// follow message_start.
	if d := time.Since(begin); st.text != mockllm.TextAnswer || d < 10*delay {
		t.Errorf("stream with ChunkDelay %v = %q after %v, want %q after at least %v", delay, st.text, d, mockllm.TextAnswer, 10*delay)
	}
}

// TestMessagesResetHeaders checks the headers that say when [ResetTime]'s
// and [UsageLimit]'s limits reset.
func TestMessagesResetHeaders(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, sc := range []mockllm.Scenario{mockllm.ResetTime, mockllm.UsageLimit} {
		t.Run(string(sc), func(t *testing.T) {
			t.Parallel()
			before := time.Now()
			resp := post(t, t.Context(), s.URL()+"/v1/messages", messagesBody(t, "do it "+string(sc), true, nil, nil))
			resp.Body.Close()
			h := resp.Header
			wantReset := before.Add(mockllm.ResetAfter).Unix()
			if got, err := strconv.ParseInt(h.Get("anthropic-ratelimit-unified-reset"), 10, 64); err != nil || got < wantReset || got > wantReset+2 {
				t.Errorf("unified reset = %q, want about %d", h.Get("anthropic-ratelimit-unified-reset"), wantReset)
			}
			if got := h.Get("anthropic-ratelimit-unified-status"); got != "rejected" {
				t.Errorf("unified status = %q, want rejected", got)
			}
			if sc == mockllm.UsageLimit {
				if got := h.Get("retry-after"); got != "" {
					t.Errorf("retry-after = %q, want none", got)
				}
				return
			}
			if got := h.Get("retry-after"); got != "20" {
				t.Errorf("retry-after = %q, want 20", got)
			}
			reset, err := time.Parse(time.RFC3339, h.Get("anthropic-ratelimit-requests-reset"))
			if err != nil || reset.Unix() < wantReset-1 || reset.Unix() > wantReset+2 {
				t.Errorf("requests reset = %q, %v, want RFC 3339 about %v", h.Get("anthropic-ratelimit-requests-reset"), err, before.Add(mockllm.ResetAfter))
			}
			if h.Get("anthropic-ratelimit-requests-remaining") != "0" {
				t.Errorf("requests remaining = %q, want 0", h.Get("anthropic-ratelimit-requests-remaining"))
			}
		})
	}
}
