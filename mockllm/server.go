package mockllm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxBody bounds a request body. Agent CLIs send their whole conversation and
// tool schemas on every call: tens of kilobytes, rarely more.
const maxBody = 32 << 20

// Options configure [StartWith]. The zero value is what [Start] uses.
type Options struct {
	// Addr is the address to listen on. It must be a loopback IP with a
	// port; the default is "127.0.0.1:0", a free port.
	Addr string
	// ChunkDelay is slept before each streamed event after the first, to
	// let tests watch an answer arrive piece by piece. Zero sends them at once.
	ChunkDelay time.Duration
	// RetryAfter, if set, is sent as retry-after-ms (and retry-after, in
	// whole seconds rounded up) with every retryable failure: [RateLimited],
	// [ServerError], [Overloaded]. Clients that honour it (opencode does)
	// then retry that fast instead of backing off for a minute or more.
	// Unset, only RateLimited carries retry-after: 1.
	RetryAfter time.Duration
}

// Request is what the server received, for test assertions.
type Request struct {
	Method string
	Path   string
	// The fields below are set only for a model call the server parsed.
	Scenario   Scenario
	Model      string
	Stream     bool
	Tools      []string // the names of the tools the request offered
	ToolResult bool     // whether the conversation carried a tool result
	UserText   string   // the text of the conversation's first user message
	// LastUserText is the text of its last user message: the prompt, for
	// clients that send context messages first (codex).
	LastUserText string
	// UserTexts are the texts of all its user messages, in order: a
	// session's later call carries the earlier turns' prompts.
	UserTexts []string
	// Answered is how many assistant messages the conversation already
	// holds: 0 in a session's first model call; a later turn of the same
	// conversation carries the earlier turns' answers.
	Answered int
	// System is the system text the call carried, its parts joined with
	// a blank line: the Anthropic Messages API's system (its text blocks
	// joined with "\n") and any system-role message; Chat Completions'
	// system and developer messages; the Responses API's instructions and
	// its system and developer input items. Where a CLI puts its own and
	// a caller's instructions is there to see.
	System string
}

// Server is a running mock model server. Its methods are safe for concurrent
// use.
type Server struct {
	opts   Options
	url    string
	http   *http.Server
	cancel context.CancelFunc // cancels every request's base context
	serve  chan struct{}      // closed when Serve has returned

	closeOnce sync.Once

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup // handlers running; added to only while !closed
	requests []Request
	calls    int // numbers response ids
}

// Start serves on 127.0.0.1 at a free port until [Server.Close].
func Start() (*Server, error) { return StartWith(Options{}) }

// StartWith is [Start] with options. It refuses a non-loopback address.
func StartWith(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mockllm: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("mockllm: address %q: not a loopback IP", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mockllm: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts:   opts,
		url:    "http://" + ln.Addr().String(),
		cancel: cancel,
		serve:  make(chan struct{}),
	}
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.handle),
		ReadHeaderTimeout: 10 * time.Second,
		// A request's context ends when its client goes away or Close
		// cancels this one: hanging and stalled handlers wait on it.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	go func() {
		defer close(s.serve)
		_ = s.http.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL returns the base URL, "http://127.0.0.1:PORT", without /v1. OpenAI
// clients (opencode, pi, codex) take URL()+"/v1" as their base URL; Claude
// Code takes URL() and adds /v1 itself.
func (s *Server) URL() string { return s.url }

// Close stops the server: it closes the listener and every connection,
// releases hanging and stalled handlers, and returns once all handlers have
// returned, promptly. Later calls wait for the first one, then do nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		_ = s.http.Close()
		s.cancel()
		<-s.serve
		s.inflight.Wait()
	})
}

// Requests returns a copy of what the server has received, in order of
// arrival. A request is recorded when it arrives, before it is answered.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// record appends r and returns a number for the response id.
func (s *Server) record(r Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	s.calls++
	return s.calls
}

// handle counts the handler in, unless the server is closing, and routes.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeJSON(w, http.StatusServiceUnavailable, nil, openAIError("mockllm: server closed", "server_error", nil))
		return
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	s.route(w, r)
}

// route dispatches on the path, with or without the /v1 prefix. A new wire
// API is one more case here.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch path {
	case "/chat/completions":
		s.model(w, r, chatAPI)
	case "/messages":
		s.model(w, r, messagesAPI)
	case "/messages/count_tokens":
		s.countTokens(w, r)
	case "/responses":
		s.model(w, r, responsesAPI)
	case "/models":
		s.record(Request{Method: r.Method, Path: r.URL.Path})
		if r.Method != http.MethodGet {
			writeJSON(w, http.StatusMethodNotAllowed, nil, openAIError("mockllm: use GET", "invalid_request_error", nil))
			return
		}
		writeJSON(w, http.StatusOK, nil, map[string]any{
			"object": "list",
			"data": []map[string]any{
				{"id": "mock-model", "object": "model", "created": created, "owned_by": "mockllm"},
			},
		})
	default:
		s.record(Request{Method: r.Method, Path: r.URL.Path})
		writeJSON(w, http.StatusNotFound, nil, openAIError("mockllm: no route for "+r.Method+" "+r.URL.Path, "invalid_request_error", "not_found"))
	}
}

// wireAPI is one provider API: how to read its request and write a reply.
type wireAPI struct {
	// parse reads a request body. Its error is the client's fault.
	parse func(body []byte) (call, error)
	// clientError writes an error response for a request the server
	// refuses before parsing it (405) or that parse refused (400).
	clientError func(w http.ResponseWriter, status int, message string)
	// write answers the call. It may block (hang, stall) until ctx is done.
	write func(ctx context.Context, w http.ResponseWriter, p *pacer, id int, c call, r reply)
}

// invalidRequest is a request the real API would refuse with HTTP 400 and
// this message.
type invalidRequest string

func (e invalidRequest) Error() string { return string(e) }

// model serves one model call: parse, record, plan, write.
func (s *Server) model(w http.ResponseWriter, r *http.Request, api wireAPI) {
	if r.Method != http.MethodPost {
		s.record(Request{Method: r.Method, Path: r.URL.Path})
		api.clientError(w, http.StatusMethodNotAllowed, "mockllm: use POST")
		return
	}
	body, err := readBody(w, r)
	var c call
	if err == nil {
		c, err = api.parse(body)
	}
	if err != nil {
		s.record(Request{Method: r.Method, Path: r.URL.Path})
		msg := "mockllm: cannot read request body: " + err.Error()
		var inv invalidRequest
		if errors.As(err, &inv) {
			msg = string(inv)
		}
		api.clientError(w, http.StatusBadRequest, msg)
		return
	}
	req := Request{
		Method:       r.Method,
		Path:         r.URL.Path,
		Scenario:     c.scenario,
		Model:        c.model,
		Stream:       c.stream,
		ToolResult:   c.toolResult != nil,
		UserText:     c.userText,
		LastUserText: c.lastUserText,
		UserTexts:    c.userTexts,
		Answered:     c.answered,
		System:       c.system,
		Tools:        c.toolNames(),
	}
	id := s.record(req)
	rep := c.plan()
	if rep.retryable && !rep.fixedRetry && s.opts.RetryAfter > 0 {
		rep.retryAfter = s.opts.RetryAfter
	}
	if rep.kind == replyDrop {
		drop(w, rep.reset)
		return
	}
	ctx := r.Context() // done when the client goes away or the server closes
	api.write(ctx, w, &pacer{ctx: ctx, w: w, delay: s.opts.ChunkDelay}, id, c, rep)
}

// readBody reads a request body of at most maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
}

// pacer flushes streamed events and spaces them by the configured delay.
type pacer struct {
	ctx   context.Context
	w     http.ResponseWriter
	delay time.Duration
	sent  int
}

// event writes one framed event and flushes it. It reports false once the
// request's context is done or the write failed: stop writing then.
func (p *pacer) event(b []byte) bool {
	if p.sent > 0 && p.delay > 0 {
		t := time.NewTimer(p.delay)
		select {
		case <-p.ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	p.sent++
	if p.ctx.Err() != nil {
		return false
	}
	if _, err := p.w.Write(b); err != nil {
		return false
	}
	return http.NewResponseController(p.w).Flush() == nil
}

// created is the fixed "created" time of every response, so transcripts
// recorded against the server do not vary with the clock.
const created = 1_700_000_000

// writeJSON writes v as a JSON response with the given status and headers.
func writeJSON(w http.ResponseWriter, status int, header map[string]string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"mockllm: cannot encode response","type":"server_error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	for k, v := range header {
		h.Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// retryHeaders are the headers that tell a client when to retry.
func retryHeaders(d time.Duration) map[string]string {
	if d <= 0 {
		return nil
	}
	return map[string]string{
		"retry-after-ms": strconv.FormatInt(max(1, d.Milliseconds()), 10),
		"retry-after":    strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10),
	}
}

// openAIError is the error body of the OpenAI APIs. code may be nil.
func openAIError(message, typ string, code any) map[string]any {
	return map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}}
}

// wait blocks until ctx is done: the client went away or the server closed.
// It then aborts the response, so that a hang or a stall never looks like a
// complete answer to the client: net/http closes the connection without
// ending the body (or, before headers, without any response).
func wait(ctx context.Context) {
	<-ctx.Done()
	panic(http.ErrAbortHandler)
}

// drop takes the connection from net/http and closes it without a
// response: with reset, SO_LINGER 0 first, so the close sends RST instead
// of FIN and unsent data is discarded. The request body has been read.
func drop(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil { // not HTTP/1 (no hijacking): abort, closing the stream
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// cutOff flushes what was written and aborts the response: net/http closes
// the connection without ending the body, as a connection lost mid-stream.
func cutOff(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// UnifiedHeaders are the anthropic-ratelimit-unified-* headers of a
// subscription's rejected five-hour window that resets at reset, as
// Claude Code 2.1.328 reads them (status, reset in Unix seconds,
// representative-claim, overage-status; with ANTHROPIC_API_KEY it reads
// them only through a gateway, see testdata/claude/README.md).
func UnifiedHeaders(reset time.Time) map[string]string {
	return map[string]string{
		"anthropic-ratelimit-unified-status":                  "rejected",
		"anthropic-ratelimit-unified-reset":                   strconv.FormatInt(reset.Unix(), 10),
		"anthropic-ratelimit-unified-representative-claim":    "five_hour",
		"anthropic-ratelimit-unified-5h-status":               "rejected",
		"anthropic-ratelimit-unified-5h-reset":                strconv.FormatInt(reset.Unix(), 10),
		"anthropic-ratelimit-unified-5h-utilization":          "1.0",
		"anthropic-ratelimit-unified-overage-status":          "rejected",
		"anthropic-ratelimit-unified-overage-disabled-reason": "out_of_credits",
	}
}

// mergeHeaders returns the headers of all the maps, later ones winning.
func mergeHeaders(hs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = v
		}
	}
	return out
}
