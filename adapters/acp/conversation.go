package acp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/grant"
	acpnorm "github.com/hubcli/hub/normalize/acp"
)

// maxSDKLine is the longest line hub hands the SDK: its reader stops the
// whole connection at a line over 10 MiB. A longer request of the agent's
// (a file write) goes unanswered and the run's limits end it.
const maxSDKLine = 10<<20 - 1

// maxFileBytes bounds a file hub reads for the agent (fs/read_text_file):
// 16 MiB.
const maxFileBytes = 16 << 20

// cancelWait bounds the write of session/cancel, which waits while the
// agent's stdin is full (it does not read it): then the stop goes on to
// the SIGTERM at once.
const cancelWait = 2 * time.Second

// conversation is one ACP run's client: the decoder of the agent's updates
// (normalize/acp, on the run's goroutine) and the requests hub sends and
// answers through the SDK's connection (on the SDK's goroutines and lead's).
// It implements adapters.Conversation.
type conversation struct {
	*acpnorm.Decoder
	req adapters.Request

	q      *lineQueue
	conn   *sdk.ClientSideConnection
	stdin  io.WriteCloser
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when lead returns

	// beforePrompt, when not nil (in tests), is called by lead just
	// before it hands session/prompt to the SDK, which takes a while (a
	// large prompt is encoded twice) before its write begins.
	beforePrompt func()

	mu          sync.Mutex
	session     sdk.SessionId   // once the agent gave (or loaded) one
	interrupted bool            // Interrupt was called
	prompting   bool            // session/prompt is being written or out, and not answered
	decisions   map[string]bool // tool call id → allowed, decided by Receive
}

var _ adapters.Conversation = (*conversation)(nil)

// Open implements adapters.Conversation: it starts the SDK's connection
// on the agent's stdin and lead's requests.
func (c *conversation) Open(stdin io.WriteCloser) {
	c.stdin = stdin
	c.q = newLineQueue()
	c.decisions = map[string]bool{}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.conn = sdk.NewClientSideConnection(client{c}, promptGate{c}, c.q)
	c.conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.done = make(chan struct{})
	go c.lead()
}

// Receive implements adapters.Conversation: the SDK gets the agent's
// requests and responses (the decoder alone reads session/update). A
// permission request is decided here, before the SDK's handler answers it,
// with what the decoder knows of the call (Decoder.Permit).
func (c *conversation) Receive(line []byte) {
	if len(line) > maxSDKLine {
		return
	}
	// A copy: the decisions keep parts of it, and line is the framer's
	// buffer, reused for the next line.
	v := string(line)
	method := gjson.Get(v, "method")
	switch method.Str {
	case "session/update":
		return
	case "session/request_permission":
		tc := gjson.Get(v, "params.toolCall")
		allowed := c.Permit(tc)
		c.mu.Lock()
		c.decisions[tc.Get("toolCallId").String()] = allowed
		c.mu.Unlock()
	}
	c.q.push(line)
}

// Interrupt implements adapters.Conversation: session/cancel while the
// prompt is out (lead sends nothing more after it). Before the prompt's
// write has begun (promptGate then keeps it from the agent), and once it
// is answered, there is no turn to cancel: it asks nothing, and the agent
// gets its SIGTERM at once (claude-agent-acp and codex-acp do not end when
// their stdin does). The session/cancel always follows the prompt on
// stdin: the SDK writes one message at a time, and the prompt's began
// first.
func (c *conversation) Interrupt() bool {
	c.mu.Lock()
	c.interrupted = true
	sid, prompting := c.session, c.prompting
	c.mu.Unlock()
	if !prompting {
		return false
	}
	// The SDK's write does not end with a context: an agent that does not
	// read its stdin would hold it, and the SIGTERM behind it, forever.
	// The write goes on until the process is gone and its stdin closed.
	sent := make(chan error, 1)
	go func() { sent <- c.conn.Cancel(c.ctx, sdk.CancelNotification{SessionId: sid}) }()
	t := time.NewTimer(cancelWait)
	defer t.Stop()
	select {
	case err := <-sent:
		return err == nil
	case <-t.C:
		return false // not written: signal it now
	}
}

// Close implements adapters.Conversation.
func (c *conversation) Close() {
	c.q.close()
	c.cancel()
	<-c.done
	<-c.conn.Done()
}

// stop reports whether lead is to send nothing more: Interrupt was called.
func (c *conversation) stop() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.interrupted
}

// lead sends hub's requests, each after the answer to the one before:
// initialize, session/new or session/load, session/set_model with a model,
// session/prompt. It closes the agent's stdin when it is done (the prompt
// answered, a request failed, or the run interrupted), which ends an ACP
// agent.
func (c *conversation) lead() {
	defer close(c.done)
	defer c.stdin.Close()
	ctx := c.ctx
	level := c.req.Permission.OrDefault()
	_, err := c.conn.Initialize(ctx, sdk.InitializeRequest{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientCapabilities: sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{
			ReadTextFile:  level != grant.None,
			WriteTextFile: level == grant.WorkspaceWrite || level == grant.Full,
		}},
		ClientInfo: &sdk.Implementation{Name: "hub", Version: "1"},
	})
	if err != nil || c.stop() {
		return
	}
	cwd := c.cwd()
	sid := sdk.SessionId(c.req.Resume)
	var options []sdk.SessionConfigOption
	if sid != "" {
		var r sdk.LoadSessionResponse
		r, err = c.conn.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: sid, Cwd: cwd, McpServers: []sdk.McpServer{}})
		options = r.ConfigOptions
	} else {
		var r sdk.NewSessionResponse
		r, err = c.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
		sid, options = r.SessionId, r.ConfigOptions
	}
	if err != nil {
		return
	}
	c.mu.Lock()
	c.session = sid
	stopped := c.interrupted
	c.mu.Unlock()
	if stopped {
		return
	}
	if c.req.Model != "" {
		if err := c.setModel(ctx, sid, options); err != nil || c.stop() {
			return
		}
	}
	prompt, err := adapters.PromptWithSchema(Name, c.req, MaxPromptBytes)
	if err != nil {
		return // CheckRequest refused it before the run
	}
	if c.stop() {
		return
	}
	if c.beforePrompt != nil {
		c.beforePrompt()
	}
	// promptGate sets prompting as the prompt's write begins, or fails the
	// write when Interrupt came first.
	_, _ = c.conn.Prompt(ctx, sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(prompt)}})
	c.mu.Lock()
	c.prompting = false
	c.mu.Unlock()
}

// errInterrupted is promptGate's error for a prompt whose run was
// interrupted before its write began.
var errInterrupted = errors.New("hub: the run was stopped before the prompt was sent")

// promptGate is the agent's stdin as the SDK writes it: one Write a
// message, under the SDK's write lock. It tells when the session/prompt's
// write begins, which decides whether there is a turn for Interrupt to
// cancel: the SDK's Prompt call gives no sign of it (acp-go-sdk v0.13.0
// encodes the request, then waits for its write lock, then writes), and a
// session/cancel sent before the prompt's write began would reach the
// agent first and cancel nothing, yet count as asked: the agent would
// start the turn it was to stop, and its SIGTERM would wait the whole
// grace period (with TestStuckStdin's hour of grace and an agent that
// reads no more of its stdin, the run hung).
type promptGate struct{ c *conversation }

func (g promptGate) Write(b []byte) (int, error) {
	c := g.c
	// The SDK's messages start {"jsonrpc":"2.0","id":…,"method":…: the
	// method is in the head, whatever the size of the params.
	if gjson.GetBytes(b[:min(len(b), 256)], "method").Str == "session/prompt" {
		c.mu.Lock()
		if c.interrupted {
			c.mu.Unlock()
			return 0, errInterrupted
		}
		c.prompting = true
		c.mu.Unlock()
	}
	return c.stdin.Write(b)
}

// setModel sets the session's model to Request.Model: through the
// session's "model" config option when it offers one (OpenCode,
// claude-agent-acp, codex-acp, which has no session/set_model), else with
// session/set_model (unstable in ACP). Either is one request, whose answer
// the decoder takes as the set-model step's.
func (c *conversation) setModel(ctx context.Context, sid sdk.SessionId, options []sdk.SessionConfigOption) error {
	for _, o := range options {
		if o.Select != nil && o.Select.Id == "model" {
			_, err := c.conn.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
				SessionId: sid, ConfigId: "model", Value: sdk.SessionConfigValueId(c.req.Model)}})
			return err
		}
	}
	_, err := c.conn.UnstableSetSessionModel(ctx, sdk.UnstableSetSessionModelRequest{SessionId: sid, ModelId: sdk.UnstableModelId(c.req.Model)})
	return err
}

// cwd is the run's working directory as an absolute path (ACP requires
// one), links resolved as the agent's PWD is.
func (c *conversation) cwd() string {
	dir := c.req.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}

// client answers the agent's requests (sdk.Client).
type client struct{ c *conversation }

var _ sdk.Client = client{}

// RequestPermission answers from the run's grant as Receive decided it:
// the first allow option (allow_once before allow_always) when allowed, the
// first reject option (reject_once first) when not, cancelled when the
// agent offers no such option or hub is stopping the turn (as ACP asks of
// a client after session/cancel). It never waits for a person.
func (cl client) RequestPermission(_ context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c := cl.c
	c.mu.Lock()
	allowed, stopping := c.decisions[string(p.ToolCall.ToolCallId)], c.interrupted
	c.mu.Unlock()
	if stopping {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	want := []sdk.PermissionOptionKind{sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways}
	if allowed {
		want = []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways}
	}
	for _, k := range want {
		for _, o := range p.Options {
			if o.Kind == k {
				return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
			}
		}
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
}

// SessionUpdate is never called: Receive keeps the updates from the SDK
// (the decoder reads them).
func (client) SessionUpdate(context.Context, sdk.SessionNotification) error { return nil }

// fileCheck is nil when the grant lets the agent read (write false) or
// write path through hub: any level but none reads, workspace-write writes,
// both inside --cwd; full, anywhere.
func (c *conversation) fileCheck(path string, write bool) error {
	level := c.req.Permission.OrDefault()
	switch {
	case !filepath.IsAbs(path):
		return sdk.NewInvalidParams(map[string]string{"path": "ACP requires an absolute path"})
	case level == grant.Full:
		return nil
	case level == grant.None, write && level == grant.ReadOnly:
		what := "read"
		if write {
			what = "write"
		}
		return sdk.NewInvalidRequest(map[string]string{"error": "hub: --permission " + string(level) + " grants no file " + what})
	case !adapters.Within(c.cwd(), path):
		return sdk.NewInvalidRequest(map[string]string{"error": "hub: " + path + " is outside the working directory " + c.cwd() + " that --permission " + string(level) + " grants"})
	}
	return nil
}

// ReadTextFile serves fs/read_text_file inside --cwd (see fileCheck): the
// file's text from line (1-based) for limit lines, at most maxFileBytes.
func (cl client) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	if err := cl.c.fileCheck(p.Path, false); err != nil {
		return sdk.ReadTextFileResponse{}, err
	}
	f, err := os.Open(p.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, sdk.NewInvalidParams(map[string]string{"error": err.Error()})
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return sdk.ReadTextFileResponse{}, sdk.NewInternalError(map[string]string{"error": err.Error()})
	}
	if len(b) > maxFileBytes {
		return sdk.ReadTextFileResponse{}, sdk.NewInvalidParams(map[string]string{"path": p.Path + " is over 16 MiB; read it with a tool of the agent's"})
	}
	text := string(b)
	if p.Line != nil || p.Limit != nil {
		lines := strings.SplitAfter(text, "\n")
		from := 0
		if p.Line != nil && *p.Line > 1 {
			from = min(*p.Line-1, len(lines))
		}
		to := len(lines)
		if p.Limit != nil && *p.Limit >= 0 {
			to = min(from+*p.Limit, len(lines))
		}
		text = strings.Join(lines[from:to], "")
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

// WriteTextFile serves fs/write_text_file inside --cwd under
// workspace-write, anywhere under full (see fileCheck).
func (cl client) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	if err := cl.c.fileCheck(p.Path, true); err != nil {
		return sdk.WriteTextFileResponse{}, err
	}
	if err := os.MkdirAll(filepath.Dir(p.Path), 0o755); err != nil {
		return sdk.WriteTextFileResponse{}, sdk.NewInternalError(map[string]string{"error": err.Error()})
	}
	if err := os.WriteFile(p.Path, []byte(p.Content), 0o644); err != nil {
		return sdk.WriteTextFileResponse{}, sdk.NewInternalError(map[string]string{"error": err.Error()})
	}
	return sdk.WriteTextFileResponse{}, nil
}

// errNoTerminal is the answer to terminal/*: hub does not offer the
// terminal capability (the agent runs commands with its own tools, under
// the same grant).
var errNoTerminal = sdk.NewMethodNotFound("terminal/*: hub offers no terminals")

func (client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNoTerminal
}
func (client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNoTerminal
}
func (client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNoTerminal
}
func (client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNoTerminal
}
func (client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNoTerminal
}

// lineQueue is the SDK's view of the agent's stdout: the lines Receive
// pushes, each with its newline, read in order; EOF once closed and read.
// push never blocks: the agent's requests and responses are small, and at
// most maxSDKLine more than maxQueued are held.
type lineQueue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	closed bool
}

// maxQueued is how many bytes the queue holds before it drops lines (the
// SDK has stopped reading: its connection ended).
const maxQueued = 64 << 20

func newLineQueue() *lineQueue {
	q := &lineQueue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *lineQueue) push(line []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.buf) > maxQueued {
		return
	}
	q.buf = append(append(q.buf, line...), '\n')
	q.cond.Signal()
}

func (q *lineQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// Read implements io.Reader. It blocks until a line is pushed or the queue
// is closed.
func (q *lineQueue) Read(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.buf) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, q.buf)
	q.buf = q.buf[n:]
	if len(q.buf) == 0 {
		q.buf = nil // let a large buffer go
	}
	return n, nil
}
