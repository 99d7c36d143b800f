package mockllm

// OpenAI Chat Completions: POST /v1/chat/completions, used by opencode and pi
// (and anything built on @ai-sdk/openai-compatible).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

var chatAPI = wireAPI{parse: parseChat, clientError: chatClientError, write: writeChat}

// chatRequest is the part of a chat.completions request the server reads.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func parseChat(body []byte) (call, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return call{}, err
	}
	c := call{model: req.Model, stream: req.Stream}
	var user, system []string
	for _, m := range req.Messages {
		c.endsInResult = m.Role == "tool"
		switch m.Role {
		case "assistant":
			c.answered++
		case "user":
			user = append(user, chatText(m.Content))
		case "system", "developer":
			system = append(system, chatText(m.Content))
		case "tool":
			text := chatText(m.Content)
			c.toolResult = &text
			c.toolResults++
		}
	}
	c.scenario, c.afterMarker = chooseScenario(user, system)
	c.system = strings.Join(system, "\n\n")
	if len(user) > 0 {
		c.userText, c.lastUserText, c.userTexts = user[0], user[len(user)-1], user
	}
	for _, t := range req.Tools {
		c.tools = append(c.tools, tool{name: t.Function.Name, schema: t.Function.Parameters})
	}
	return c, nil
}

// chatText returns the text of a message's content: a string, or an array of
// parts of which the text ones count. Anything else has no text.
func chatText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return ""
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "")
}

func chatClientError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, nil, openAIError(message, "invalid_request_error", nil))
}

// chatError is how one failing scenario looks in this API.
type chatError struct {
	status int
	body   string
}

var chatErrors = map[Scenario]chatError{
	Unauthorized: {http.StatusUnauthorized,
		`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
	RateLimited: {http.StatusTooManyRequests,
		`{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
	ServerError: {http.StatusInternalServerError,
		`{"error":{"message":"The server had an error while processing your request","type":"server_error","param":null,"code":null}}`},
	Overloaded: {http.StatusServiceUnavailable,
		`{"error":{"message":"The server is overloaded","type":"server_error","code":"overloaded"}}`},
	Overflow: {http.StatusBadRequest,
		`{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 200000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
}

// The JSON shapes of responses, as structs so fields keep OpenAI's order.
type (
	chatChunk struct {
		ID      string        `json:"id"`
		Object  string        `json:"object"`
		Created int           `json:"created"`
		Model   string        `json:"model"`
		Choices []chatChoice  `json:"choices"`
		Usage   *chatUsageObj `json:"usage,omitempty"`
	}
	chatChoice struct {
		Index        int          `json:"index"`
		Delta        *chatMessage `json:"delta,omitempty"`
		Message      *chatMessage `json:"message,omitempty"`
		FinishReason *string      `json:"finish_reason"`
	}
	chatMessage struct {
		Role      string         `json:"role,omitempty"`
		Content   *string        `json:"content,omitempty"`
		ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
	}
	chatToolCall struct {
		Index    *int   `json:"index,omitempty"` // streamed deltas only
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	chatUsageObj struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
)

func chatUsage(u usage) *chatUsageObj {
	o := &chatUsageObj{PromptTokens: u.prompt, CompletionTokens: u.completion, TotalTokens: u.prompt + u.completion}
	o.PromptTokensDetails.CachedTokens = u.cached
	return o
}

func ptr[T any](v T) *T { return &v }

// chatFinishReason is the finish_reason a reply ends with.
func (r reply) chatFinishReason() string {
	if r.kind == replyTool {
		return "tool_calls"
	}
	return "stop"
}

func writeChat(ctx context.Context, w http.ResponseWriter, p *pacer, id int, c call, r reply) {
	switch r.kind {
	case replyFail:
		e, header := openAIFailure(chatErrors, c, r)
		writeJSON(w, e.status, header, json.RawMessage(e.body))
		return
	case replyHang:
		wait(ctx)
		return
	case replyStreamFail:
		if !c.stream {
			writeStreamFailure(w, c, r, false)
			return
		}
	}
	base := chatChunk{ID: "chatcmpl-mock-" + strconv.Itoa(id), Object: "chat.completion.chunk", Created: created, Model: c.model}
	if !c.stream {
		writeChatCompletion(ctx, w, base, r)
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(choice *chatChoice, u *chatUsageObj) bool {
		chunk := base
		chunk.Choices = []chatChoice{}
		if choice != nil {
			chunk.Choices = []chatChoice{*choice}
		}
		chunk.Usage = u
		b, _ := json.Marshal(chunk) // cannot fail: no maps, no floats
		return p.event(fmt.Appendf(nil, "data: %s\n\n", b))
	}
	delta := func(m chatMessage) bool { return send(&chatChoice{Delta: &m}, nil) }

	if !delta(chatMessage{Role: "assistant", Content: ptr("")}) {
		return
	}
	for i, piece := range r.text {
		if r.kind == replyStall && i == StallDeltas {
			wait(ctx)
			return
		}
		if r.kind == replyCut && i == StallDeltas {
			cutOff(w)
			return
		}
		if r.kind == replyStreamFail && i == StallDeltas {
			break
		}
		if !delta(chatMessage{Content: ptr(piece)}) {
			return
		}
	}
	switch r.kind { // an answer shorter than StallDeltas pieces
	case replyStall:
		wait(ctx)
		return
	case replyCut:
		cutOff(w)
		return
	case replyStreamFail: // the error chunk ends the stream: no [DONE]
		p.event(fmt.Appendf(nil, "data: %s\n\n", c.streamFailureChunk()))
		return
	}
	if r.kind == replyTool {
		tc := r.toolCall
		first := chatToolCall{Index: ptr(0), ID: tc.id, Type: "function"}
		first.Function.Name = tc.name
		if !delta(chatMessage{ToolCalls: []chatToolCall{first}}) {
			return
		}
		for _, piece := range tc.arguments {
			more := chatToolCall{Index: ptr(0)}
			more.Function.Arguments = piece
			if !delta(chatMessage{ToolCalls: []chatToolCall{more}}) {
				return
			}
		}
	}
	// OpenAI sends usage in a last chunk with no choices, and only when
	// stream_options.include_usage is set; clients that did not ask ignore it.
	if !send(&chatChoice{Delta: &chatMessage{}, FinishReason: ptr(r.chatFinishReason())}, nil) ||
		!send(nil, chatUsage(r.usage)) {
		return
	}
	p.event([]byte("data: [DONE]\n\n"))
}

// writeChatCompletion answers a call with stream false: one chat.completion.
func writeChatCompletion(ctx context.Context, w http.ResponseWriter, base chatChunk, r reply) {
	if headersOnly(ctx, w, r) {
		return
	}
	m := chatMessage{Role: "assistant"}
	if r.kind == replyTool {
		tc := chatToolCall{ID: r.toolCall.id, Type: "function"}
		tc.Function.Name = r.toolCall.name
		tc.Function.Arguments = strings.Join(r.toolCall.arguments, "")
		m.ToolCalls = []chatToolCall{tc}
	} else {
		m.Content = ptr(strings.Join(r.text, ""))
	}
	resp := base
	resp.Object = "chat.completion"
	resp.Choices = []chatChoice{{Message: &m, FinishReason: ptr(r.chatFinishReason())}}
	resp.Usage = chatUsage(r.usage)
	writeJSON(w, http.StatusOK, nil, resp)
}

// headersOnly answers a [Stall] or [Cut] call with stream false: headers
// (200, JSON), then nothing until the client or the server goes away
// (Stall) or the connection closed at once (Cut). It reports whether it
// answered.
func headersOnly(ctx context.Context, w http.ResponseWriter, r reply) bool {
	if r.kind != replyStall && r.kind != replyCut {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if r.kind == replyCut {
		cutOff(w)
	}
	_ = http.NewResponseController(w).Flush()
	wait(ctx)
	return true
}

// Messages of the billing and limit scenarios on the OpenAI APIs, as
// OpenAI (and, for 402, OpenRouter) word them.
const (
	QuotaMessage           = "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
	PaymentRequiredMessage = "Insufficient credits. Add more using https://openrouter.ai/settings/credits"
	// UsageLimitMessage is the message of [UsageLimit]'s body; Codex
	// prints its own sentence instead.
	UsageLimitMessage = "The usage limit has been reached"
)

// openAIFailure is how a failing scenario looks in the OpenAI APIs
// (Chat Completions and Responses): the status and body, from errs for
// the fixed ones, and the headers.
func openAIFailure(errs map[Scenario]chatError, c call, r reply) (chatError, map[string]string) {
	header := retryHeaders(r.retryAfter)
	switch r.scenario {
	case Quota:
		return chatError{http.StatusTooManyRequests, mustJSON(openAIError(QuotaMessage, "insufficient_quota", "insufficient_quota"))}, header
	case PaymentRequired:
		return chatError{http.StatusPaymentRequired, mustJSON(map[string]any{"error": map[string]any{"message": PaymentRequiredMessage, "code": http.StatusPaymentRequired}})}, header
	case NoModel:
		msg := "The model `" + c.model + "` does not exist or you do not have access to it."
		return chatError{http.StatusNotFound, mustJSON(openAIError(msg, "invalid_request_error", "model_not_found"))}, header
	case ResetTime:
		secs := strconv.Itoa(int(ResetAfter.Seconds()))
		msg := "Rate limit reached for " + c.model + " in organization org-mock on requests per min (RPM): Limit 3, Used 3, Requested 1. " +
			"Please try again in " + secs + "s. Visit https://platform.openai.com/account/rate-limits to learn more."
		return chatError{http.StatusTooManyRequests, mustJSON(openAIError(msg, "requests", "rate_limit_exceeded"))}, mergeHeaders(header, map[string]string{
			"retry-after":                    secs,
			"x-ratelimit-limit-requests":     "3",
			"x-ratelimit-remaining-requests": "0",
			"x-ratelimit-reset-requests":     secs + "s",
		})
	case UsageLimit:
		resets := time.Now().Add(ResetAfter)
		return chatError{http.StatusTooManyRequests, mustJSON(map[string]any{"error": map[string]any{
			"type": "usage_limit_reached", "message": UsageLimitMessage, "plan_type": "plus",
			"resets_at": resets.Unix(), "resets_in_seconds": int(ResetAfter.Seconds()),
		}})}, header
	}
	return errs[r.scenario], header
}
