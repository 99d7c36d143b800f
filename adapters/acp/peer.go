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

	sdk "github.com/coder/acp-go-sdk"
	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/grant"
)

// maxSDKLine is the longest line hub hands the SDK: its reader stops the
// whole connection at a line over 10 MiB. A longer request of the agent's
// (a file write) goes unanswered and the run's limits end it.
const maxSDKLine = 10<<20 - 1

// maxFileBytes bounds a file hub reads for the agent (fs/read_text_file):
// 16 MiB.
const maxFileBytes = 16 << 20

// peer is hub's side of one ACP connection, what a one-shot run
// (conversation) and a live session (live) share: the SDK's connection,
// which writes on the agent's stdin and reads the lines receive gives it;
// the answers to the agent's requests (client: session/request_permission
// from the run's grant, fs/* inside --cwd, terminal/* refused); and the
// setup of the session (initialize, session/new or session/load,
// session/set_model).
type peer struct {
	req    adapters.Request
	q      *lineQueue
	conn   *sdk.ClientSideConnection
	stdin  io.WriteCloser
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// interrupted says hub is stopping the running prompt: the agent's
	// permission requests are answered cancelled (as ACP asks of a client
	// after session/cancel).
	interrupted bool
	decisions   map[string]bool // tool call id → allowed, decided by receive
}

// open starts the SDK's connection, writing the agent's stdin through w
// (which writes on stdin: a gate that sees each message, one Write a
// message, under the SDK's write lock).
func (c *peer) open(stdin io.WriteCloser, w io.Writer) {
	c.stdin = stdin
	c.q = newLineQueue()
	c.decisions = map[string]bool{}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.conn = sdk.NewClientSideConnection(client{c}, w, c.q)
	c.conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// receive gives the SDK one of the agent's lines, a request or a response
// (the decoder alone reads session/update, which it is not given). A
// permission request is decided here, before the SDK's handler answers it,
// by permit with the request's params.toolCall (the decoder's Permit, with
// what the decoder knows of the call).
func (c *peer) receive(line []byte, permit func(toolCall gjson.Result) bool) {
	if len(line) > maxSDKLine {
		return
	}
	// A copy: the decisions keep parts of it, and line is the framer's
	// buffer, reused for the next line.
	v := string(line)
	switch gjson.Get(v, "method").Str {
	case "session/update":
		return
	case "session/request_permission":
		tc := gjson.Get(v, "params.toolCall")
		allowed := permit(tc)
		c.mu.Lock()
		c.decisions[tc.Get("toolCallId").String()] = allowed
		c.mu.Unlock()
	}
	c.q.push(line)
}

// errStopped is setup's error when its stop func said so.
var errStopped = errors.New("hub: the session's setup was stopped")

// setup sends initialize, then session/new (or session/load of
// Request.Resume), then, with a Request.Model, the model's setting, each
// after the answer to the one before, and returns the session's id. stop
// is asked between the requests: true ends the setup, as an error does.
// The error is the SDK's (an error answer: *sdk.RequestError).
func (c *peer) setup(stop func() bool) (sdk.SessionId, error) {
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
	if err != nil {
		return "", err
	}
	if stop() {
		return "", errStopped
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
		return "", err
	}
	if c.req.Model != "" {
		if stop() {
			return sid, errStopped
		}
		if err := c.setModel(ctx, sid, options); err != nil {
			return sid, err
		}
	}
	return sid, nil
}

// setModel sets the session's model to Request.Model: through the
// session's "model" config option when it offers one (OpenCode,
// claude-agent-acp, codex-acp, which has no session/set_model), else with
// session/set_model (unstable in ACP). Either is one request, whose answer
// the decoder takes as the set-model step's.
func (c *peer) setModel(ctx context.Context, sid sdk.SessionId, options []sdk.SessionConfigOption) error {
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
func (c *peer) cwd() string {
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
type client struct{ c *peer }

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
func (c *peer) fileCheck(path string, write bool) error {
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
