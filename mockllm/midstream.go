package mockllm

// The scenarios that fail inside a stream that has begun ([StreamModel],
// [StreamError]): the provider's error and how each wire API carries it.
// Clients do not print these as they print an HTTP error: Codex 0.169.0
// prints a response.failed's error.message after "stream disconnected
// before completion: ", OpenCode 1.18.33 the error object of a chunk as the
// message of an UnknownError (testdata/codex and testdata/opencode,
// streammodel and streamerror).

import (
	"encoding/json"
	"net/http"
	"strings"
)

// StreamErrorMessage is the message of [StreamError]'s error, OpenAI's
// wording of a server error with "(mid-stream)" added.
const StreamErrorMessage = "The server had an error while processing your request (mid-stream)."

// StreamModelMessage is the message of [StreamModel]'s error for model, as
// ChatGPT's Codex backend words it.
func StreamModelMessage(model string) string {
	return "The '" + model + "' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again."
}

// The JSON shapes, as structs so fields keep their order.
type (
	// errorEvent is the OpenAI Responses stream's error event, as
	// {"type":"error","status":…,"error":{…}}.
	errorEvent struct {
		Type   string      `json:"type"`
		Status int         `json:"status"`
		Error  eventDetail `json:"error"`
	}
	eventDetail struct {
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	}
	// bareError is OpenAI's error object as a stream carries it, without
	// param.
	bareError struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	}
)

// streamFailure is the error of a replyStreamFail reply to c: the HTTP
// status it stands for, its type (for response.failed's error.code), and
// the object the stream carries ([StreamModel]'s event, [StreamError]'s
// error object).
func (c call) streamFailure() (status int, typ string, body any) {
	if c.scenario == StreamModel {
		return http.StatusBadRequest, "invalid_request_error", errorEvent{Type: "error", Status: http.StatusBadRequest,
			Error: eventDetail{Type: "invalid_request_error", Message: StreamModelMessage(c.model), Param: ptr("model")}}
	}
	return http.StatusInternalServerError, "server_error", bareError{Message: StreamErrorMessage, Type: "server_error", Code: "internal_error"}
}

// pretty reports whether c asks for its error text indented
// ("MOCK_STREAMMODEL pretty").
func (c call) pretty() bool {
	return strings.Contains(" "+c.afterMarker+" ", " pretty ")
}

// streamFailureText is the error of a replyStreamFail reply to c as the
// text a response.failed's error.message or a body carries: compact, or
// indented by two spaces when c asks.
func (c call) streamFailureText() string {
	_, _, body := c.streamFailure()
	b, _ := json.Marshal(body) // cannot fail: structs of strings
	if c.pretty() {
		b, _ = json.MarshalIndent(body, "", "  ")
	}
	return string(b)
}

// streamFailureChunk is the data of the Chat Completions chunk that
// carries the error: [StreamModel]'s event as it is, [StreamError]'s object
// under "error", as OpenAI sends an error inside a stream.
func (c call) streamFailureChunk() []byte {
	_, _, body := c.streamFailure()
	if c.scenario == StreamError {
		return []byte(mustJSON(map[string]any{"error": body}))
	}
	return []byte(mustJSON(body))
}

// streamFailureAnthropic is the data of the Messages API's error event:
// [StreamModel]'s event as it is (Anthropic's {"type":"error","error":
// {"type","message"}} with a status and OpenAI's fields beside), an
// api_error for [StreamError].
func (c call) streamFailureAnthropic() []byte {
	if c.scenario == StreamError {
		return []byte(mustJSON(anthropicError("api_error", StreamErrorMessage)))
	}
	_, _, body := c.streamFailure()
	return []byte(mustJSON(body))
}

// writeStreamFailure answers a replyStreamFail call with stream false: the
// status the error stands for, and its body: [StreamModel]'s event as
// streamFailureText writes it (indented when asked: written as it is), for
// [StreamError] OpenAI's {"error":…}, or the Messages API's api_error when
// anthropic.
func writeStreamFailure(w http.ResponseWriter, c call, r reply, anthropic bool) {
	status, _, body := c.streamFailure()
	b := []byte(c.streamFailureText())
	switch {
	case c.scenario == StreamError && anthropic:
		b = []byte(mustJSON(anthropicError("api_error", StreamErrorMessage)))
	case c.scenario == StreamError:
		b = []byte(mustJSON(map[string]any{"error": body}))
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	for k, v := range retryHeaders(r.retryAfter) {
		h.Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
