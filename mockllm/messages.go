package mockllm

// Anthropic Messages: POST /v1/messages (Claude Code adds ?beta=true), used
// by claude; and POST /v1/messages/count_tokens.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

var messagesAPI = wireAPI{parse: parseMessages, clientError: messagesClientError, write: writeMessages}

// messagesRequest is the part of a Messages request the server reads.
type messagesRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"` // a string or an array of text blocks
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string or an array of blocks
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

// messagesBlock is one content block of a message, of the types the server
// reads: text, tool_use (ignored) and tool_result.
type messagesBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`          // tool_use
	ToolUseID string          `json:"tool_use_id"` // tool_result
	Content   json.RawMessage `json:"content"`     // tool_result: a string or an array of text blocks
}

func parseMessages(body []byte) (call, error) {
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return call{}, err
	}
	if err := checkToolHistory(req); err != nil {
		return call{}, err
	}
	c := call{model: req.Model, stream: req.Stream}
	var user, system []string
	if text, _ := messagesContent(req.System); text != "" {
		system = append(system, text)
	}
	for _, m := range req.Messages {
		text, result := messagesContent(m.Content)
		if result != nil {
			c.toolResult = result
			c.toolResults++
		}
		c.endsInResult = result != nil && text == ""
		switch m.Role {
		case "assistant":
			c.answered++
		case "user":
			user = append(user, text)
		case "system": // Claude Code 2.1 sends one after the first user message
			system = append(system, text)
		}
	}
	c.scenario, c.afterMarker = chooseScenario(user, system)
	c.system = strings.Join(system, "\n\n")
	if len(user) > 0 {
		c.userText, c.lastUserText, c.userTexts = user[0], user[len(user)-1], user
	}
	for _, t := range req.Tools {
		c.tools = append(c.tools, tool{name: t.Name, schema: t.InputSchema})
	}
	return c, nil
}

// checkToolHistory refuses what the Anthropic API refuses (with its
// messages, read 2026-11-30 from public reports of them: anthropic-sdk-python
// issue 494, claude-code issue 3512): a tool_use block whose id has no
// tool_result block in the next message, and tool_use or tool_result blocks
// in a request that defines no tools (Amazon Bedrock refuses that too).
func checkToolHistory(req messagesRequest) error {
	blocks := func(content json.RawMessage) []messagesBlock {
		var bs []messagesBlock
		_ = json.Unmarshal(content, &bs) // a string content has no blocks
		return bs
	}
	toolBlocks := false
	for i, m := range req.Messages {
		var ids []string
		for _, b := range blocks(m.Content) {
			switch b.Type {
			case "tool_use":
				toolBlocks = true
				if m.Role == "assistant" {
					ids = append(ids, b.ID)
				}
			case "tool_result":
				toolBlocks = true
			}
		}
		if len(ids) == 0 {
			continue
		}
		answered := map[string]bool{}
		if i+1 < len(req.Messages) && req.Messages[i+1].Role == "user" {
			for _, b := range blocks(req.Messages[i+1].Content) {
				if b.Type == "tool_result" {
					answered[b.ToolUseID] = true
				}
			}
		}
		var missing []string
		for _, id := range ids {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return invalidRequest(fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", ")))
		}
	}
	if toolBlocks && len(req.Tools) == 0 {
		return invalidRequest("Requests which include `tool_use` or `tool_result` blocks must define tools.")
	}
	return nil
}

// messagesContent reads a content field: a string, or an array of blocks. It
// returns the text of the text blocks, one line each (so that markers in
// adjacent blocks stay apart), and the output of the last tool_result block,
// if any. Anything else has no text.
func messagesContent(content json.RawMessage) (text string, toolResult *string) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s, nil
	}
	var blocks []messagesBlock
	if json.Unmarshal(content, &blocks) != nil {
		return "", nil
	}
	var texts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_result":
			out, _ := messagesContent(b.Content)
			toolResult = &out
		}
	}
	return strings.Join(texts, "\n"), toolResult
}

// anthropicErrorBody is the error body of the Anthropic API.
type anthropicErrorBody struct {
	Type  string `json:"type"` // "error"
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func anthropicError(typ, message string) anthropicErrorBody {
	b := anthropicErrorBody{Type: "error"}
	b.Error.Type, b.Error.Message = typ, message
	return b
}

func messagesClientError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, nil, anthropicError("invalid_request_error", message))
}

// messagesError is how one failing scenario looks in this API.
type messagesError struct {
	status       int
	typ, message string
}

// StatusOverloaded is the status [Overloaded] fails with in the Anthropic
// Messages API: Anthropic's own "overloaded" status, not 503.
const StatusOverloaded = 529

var messagesErrors = map[Scenario]messagesError{
	Unauthorized: {http.StatusUnauthorized, "authentication_error", "invalid x-api-key"},
	RateLimited:  {http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"},
	ServerError:  {http.StatusInternalServerError, "api_error", "Internal server error"},
	Overloaded:   {StatusOverloaded, "overloaded_error", "Overloaded"},
	Overflow:     {http.StatusBadRequest, "invalid_request_error", "prompt is too long: 200000 tokens > 128000 maximum"},
}

// CreditMessage is the message of [Quota] in the Anthropic Messages API,
// as Anthropic words it (HTTP 400, invalid_request_error).
const CreditMessage = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."

// messagesFailure is how a failing scenario looks in this API: the fixed
// ones from messagesErrors, the others built for the call; and the
// headers.
func messagesFailure(c call, r reply) (messagesError, map[string]string) {
	header := retryHeaders(r.retryAfter)
	switch r.scenario {
	case Quota:
		return messagesError{http.StatusBadRequest, "invalid_request_error", CreditMessage}, header
	case PaymentRequired:
		return messagesError{http.StatusPaymentRequired, "billing_error", PaymentRequiredMessage}, header
	case NoModel:
		return messagesError{http.StatusNotFound, "not_found_error", "model: " + c.model}, header
	case ResetTime:
		reset := time.Now().Add(ResetAfter).UTC()
		return messagesError{http.StatusTooManyRequests, "rate_limit_error",
				"This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."},
			mergeHeaders(header, UnifiedHeaders(reset), map[string]string{
				"retry-after":                            strconv.Itoa(int(ResetAfter.Seconds())),
				"anthropic-ratelimit-requests-limit":     "50",
				"anthropic-ratelimit-requests-remaining": "0",
				"anthropic-ratelimit-requests-reset":     reset.Format(time.RFC3339),
			})
	case UsageLimit:
		return messagesError{http.StatusTooManyRequests, "rate_limit_error", "Rate limit exceeded"},
			mergeHeaders(header, UnifiedHeaders(time.Now().Add(ResetAfter)))
	}
	return messagesErrors[r.scenario], header
}

// The JSON shapes of responses, as structs so fields keep Anthropic's order.
type (
	messagesEvent struct {
		Type         string            `json:"type"`
		Message      *messagesMessage  `json:"message,omitempty"`
		Index        *int              `json:"index,omitempty"`
		ContentBlock *messagesBlockOut `json:"content_block,omitempty"`
		Delta        any               `json:"delta,omitempty"`
		Usage        *messagesUsage    `json:"usage,omitempty"`
	}
	messagesMessage struct {
		ID           string             `json:"id"`
		Type         string             `json:"type"`
		Role         string             `json:"role"`
		Model        string             `json:"model"`
		Content      []messagesBlockOut `json:"content"`
		StopReason   *string            `json:"stop_reason"`
		StopSequence *string            `json:"stop_sequence"`
		Usage        messagesUsage      `json:"usage"`
	}
	messagesBlockOut struct {
		Type  string          `json:"type"`
		Text  *string         `json:"text,omitempty"`
		ID    string          `json:"id,omitempty"`
		Name  string          `json:"name,omitempty"`
		Input json.RawMessage `json:"input,omitempty"`
	}
	messagesBlockDelta struct {
		Type        string  `json:"type"`
		Text        *string `json:"text,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
	messagesStop struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	// messagesUsage: unlike OpenAI's prompt tokens, input_tokens excludes
	// the tokens read from (or written to) the cache.
	messagesUsage struct {
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		OutputTokens             int `json:"output_tokens"`
	}
)

func messagesUsageOf(u usage) messagesUsage {
	return messagesUsage{InputTokens: u.prompt - u.cached, CacheReadInputTokens: u.cached, OutputTokens: u.completion}
}

// messagesStopReason is the stop_reason a reply ends with.
func (r reply) messagesStopReason() string {
	if r.kind == replyTool {
		return "tool_use"
	}
	return "end_turn"
}

func writeMessages(ctx context.Context, w http.ResponseWriter, p *pacer, id int, c call, r reply) {
	w.Header().Set("request-id", "req_mock_"+strconv.Itoa(id))
	switch r.kind {
	case replyFail:
		e, header := messagesFailure(c, r)
		writeJSON(w, e.status, header, anthropicError(e.typ, e.message))
		return
	case replyHang:
		wait(ctx)
		return
	case replyStreamFail:
		if !c.stream {
			writeStreamFailure(w, c, r, true)
			return
		}
	}
	msg := messagesMessage{
		ID: "msg_mock_" + strconv.Itoa(id), Type: "message", Role: "assistant", Model: c.model,
		Content: []messagesBlockOut{}, Usage: messagesUsageOf(r.usage),
	}
	if !c.stream {
		writeMessage(ctx, w, msg, r)
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(e messagesEvent) bool {
		b, _ := json.Marshal(e) // cannot fail: no floats, deltas are structs
		return p.event(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", e.Type, b))
	}
	index := ptr(0)

	start := msg
	start.Usage.OutputTokens = 1 // what Anthropic reports before the first token
	if !send(messagesEvent{Type: "message_start", Message: &start}) || !send(messagesEvent{Type: "ping"}) {
		return
	}
	if r.kind == replyTool {
		tc := r.toolCall
		block := messagesBlockOut{Type: "tool_use", ID: tc.id, Name: tc.name, Input: json.RawMessage("{}")}
		if !send(messagesEvent{Type: "content_block_start", Index: index, ContentBlock: &block}) {
			return
		}
		for _, piece := range tc.arguments {
			delta := messagesBlockDelta{Type: "input_json_delta", PartialJSON: ptr(piece)}
			if !send(messagesEvent{Type: "content_block_delta", Index: index, Delta: delta}) {
				return
			}
		}
	} else {
		block := messagesBlockOut{Type: "text", Text: ptr("")}
		if !send(messagesEvent{Type: "content_block_start", Index: index, ContentBlock: &block}) {
			return
		}
		for i, piece := range r.text {
			if r.kind == replyStall && i == StallDeltas {
				break
			}
			if r.kind == replyCut && i == StallDeltas {
				cutOff(w)
				return
			}
			if r.kind == replyStreamFail && i == StallDeltas {
				break
			}
			delta := messagesBlockDelta{Type: "text_delta", Text: ptr(piece)}
			if !send(messagesEvent{Type: "content_block_delta", Index: index, Delta: delta}) {
				return
			}
		}
		switch r.kind {
		case replyStall:
			wait(ctx)
			return
		case replyCut:
			cutOff(w)
			return
		case replyStreamFail: // the error event ends the stream
			p.event(fmt.Appendf(nil, "event: error\ndata: %s\n\n", c.streamFailureAnthropic()))
			return
		}
	}
	u := msg.Usage
	if !send(messagesEvent{Type: "content_block_stop", Index: index}) ||
		!send(messagesEvent{Type: "message_delta", Delta: messagesStop{StopReason: r.messagesStopReason()}, Usage: &u}) {
		return
	}
	send(messagesEvent{Type: "message_stop"})
}

// writeMessage answers a call with stream false: one message.
func writeMessage(ctx context.Context, w http.ResponseWriter, msg messagesMessage, r reply) {
	if headersOnly(ctx, w, r) {
		return
	}
	if r.kind == replyTool {
		tc := r.toolCall
		msg.Content = []messagesBlockOut{{Type: "tool_use", ID: tc.id, Name: tc.name, Input: json.RawMessage(strings.Join(tc.arguments, ""))}}
	} else {
		msg.Content = []messagesBlockOut{{Type: "text", Text: ptr(strings.Join(r.text, ""))}}
	}
	msg.StopReason = ptr(r.messagesStopReason())
	writeJSON(w, http.StatusOK, nil, msg)
}

// countTokens answers POST /v1/messages/count_tokens, which Claude Code may
// call to size a conversation: [BigPromptTokens] for a [BigUsage] request,
// else [PromptTokens], whatever the scenario, so a failing scenario fails
// only the model call.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	s.record(Request{Method: r.Method, Path: r.URL.Path})
	if r.Method != http.MethodPost {
		messagesClientError(w, http.StatusMethodNotAllowed, "mockllm: use POST")
		return
	}
	body, err := readBody(w, r)
	var c call
	if err == nil {
		c, err = parseMessages(body)
	}
	if err != nil {
		messagesClientError(w, http.StatusBadRequest, "mockllm: cannot read request body: "+err.Error())
		return
	}
	n := PromptTokens
	if c.scenario == BigUsage {
		n = BigPromptTokens
	}
	writeJSON(w, http.StatusOK, nil, map[string]int{"input_tokens": n})
}
