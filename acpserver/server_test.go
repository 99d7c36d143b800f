package acpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/acpserver"
	"github.com/hubcli/hub/adapters"
	_ "github.com/hubcli/hub/adapters/all"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/hubtest/fakeacp"
	"github.com/hubcli/hub/hubtest/fakeagent"
)

// init plays the fake agent when the test binary is started as one (the
// scripts fake writes exec it with the dialect and fault set), before
// the tests' flag parsing, which the agent's arguments would upset.
func init() {
	if os.Getenv(fakeagent.EnvDialect) != "" {
		os.Exit(fakeagent.Main(os.Args[1:]))
	}
	if os.Getenv(fakeacp.EnvScenario) != "" {
		fakeacp.Main()
	}
	oc, err := adapters.Lookup("opencode")
	if err != nil {
		panic(err)
	}
	adapters.Register(oneShot{oc})
}

// resumed is the agent of the tests of sessions held by resuming.
const resumed = "opencode-run"

// oneShot is OpenCode as an agent that cannot hold a live session (an
// adapters.Adapter, no adapters.Sessioner: its `opencode run` only): an
// ACP session of it takes a process a prompt, each resuming the last
// (hub's fallback for such an agent). The tests of that path play it with
// fake OpenCode scripts (fakeOpencode); OpenCode itself now holds its
// sessions live, through `opencode acp`.
type oneShot struct{ adapters.Adapter }

func (oneShot) Name() string { return resumed }

func (o oneShot) Info() adapters.Info {
	info := o.Adapter.Info()
	info.Name = resumed
	return info
}

// fake writes a script named dialect that runs this test binary as the fake
// agent playing fault, and returns its path.
func fake(t *testing.T, dialect, fault string, size int) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), dialect)
	script := fmt.Sprintf("#!/bin/sh\nGORACE=atexit_sleep_ms=0 %s=%s %s=%s %s=%d exec %q \"$@\"\n",
		fakeagent.EnvDialect, dialect, fakeagent.EnvFault, fault, fakeagent.EnvSize, size, exe)
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	return bin
}

// fakeOpencode writes a shell script that answers --version as OpenCode
// 1.18.33 and otherwise runs body, and returns its path.
func fakeOpencode(t *testing.T, body string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "opencode")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 1.18.33; exit 0; fi\n" + body + "\n"
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	return bin
}

// hangBody starts a grandchild, then writes the start of an OpenCode
// answer ("working": its first session/update), and never ends.
const hangBody = `sleep 300 &
echo '{"type":"step_start","sessionID":"ses_hang","part":{}}'
echo '{"type":"text","sessionID":"ses_hang","part":{"type":"text","text":"working"}}'
sleep 300`

// client is the ACP client side of a test: it records every session/update
// and offers none of the client methods (hub acp calls none).
type client struct {
	mu      sync.Mutex
	updates []acp.SessionNotification
	got     chan struct{} // a value for each update, dropped when nobody waits
}

func (c *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	select {
	case c.got <- struct{}{}:
	default:
	}
	return nil
}

// seen returns the updates so far.
func (c *client) seen() []acp.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.SessionNotification(nil), c.updates...)
}

// text joins the agent_message_chunk texts.
func (c *client) text() string {
	var b strings.Builder
	for _, n := range c.seen() {
		if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
			b.WriteString(m.Content.Text.Text)
		}
	}
	return b.String()
}

var errNoClientMethods = errors.New("the test client offers no client methods")

func (c *client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errNoClientMethods
}
func (c *client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errNoClientMethods
}
func (c *client) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{}, errNoClientMethods
}
func (c *client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errNoClientMethods
}
func (c *client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errNoClientMethods
}
func (c *client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errNoClientMethods
}
func (c *client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errNoClientMethods
}
func (c *client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errNoClientMethods
}

// conn is one ACP connection to a Serve running in the test.
type conn struct {
	*acp.ClientSideConnection
	cl     *client
	close  func() error // closes the client's side (EOF to Serve) and returns what Serve returned
	events chan events.Event
}

// serve starts Serve with cfg on pipes and connects a client to it; the
// connection is closed at the test's end. Every hub event of every run
// goes to the conn's events channel (buffered; the test reads it at the
// end).
func serve(t *testing.T, cfg acpserver.Config) *conn {
	t.Helper()
	toClient, fromServer := io.Pipe()
	toServer, fromClient := io.Pipe()
	c := &conn{cl: &client{got: make(chan struct{})}, events: make(chan events.Event, 1000)}
	cfg.Events = func(_ string, ev events.Event) {
		select {
		case c.events <- ev:
		default:
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- acpserver.Serve(context.Background(), cfg, toServer, fromServer)
		fromServer.Close()
	}()
	c.ClientSideConnection = acp.NewClientSideConnection(c.cl, fromClient, toClient)
	c.SetLogger(slog.New(slog.DiscardHandler))
	var once sync.Once
	var err error
	c.close = func() error {
		once.Do(func() {
			fromClient.Close()
			err = <-done
			toClient.Close()
		})
		return err
	}
	t.Cleanup(func() {
		if err := c.close(); err != nil {
			t.Errorf("Serve = %v, want nil after the client closed", err)
		}
	})
	if _, err := c.Initialize(t.Context(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// session opens a session in a new temporary directory.
func (c *conn) session(t *testing.T) acp.SessionId {
	t.Helper()
	s, err := c.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	return s.SessionId
}

// prompt sends text in session s.
func (c *conn) prompt(t *testing.T, s acp.SessionId, text string) (acp.PromptResponse, error) {
	t.Helper()
	return c.Prompt(t.Context(), acp.PromptRequest{SessionId: s, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

// template is the request of a test's runs: the agent at bin, a grace
// short enough for the tests (nothing here ignores SIGTERM), and the
// environment marker Leftovers looks for.
func template(t *testing.T, agent, bin string) (hub.Request, string) {
	marker := "HUB_ACPSERVER_TEST=" + t.TempDir()
	return hub.Request{Agent: agent, Bin: bin, Permission: grant.Full,
		Env: []string{marker}, Limits: budget.Limits{Grace: 500 * time.Millisecond}}, marker
}

func TestInitialize(t *testing.T) {
	t.Parallel()
	req, _ := template(t, "opencode", "opencode")
	c := serve(t, acpserver.Config{Request: req, Version: "1.2.3"})
	resp, err := c.Initialize(t.Context(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		t.Fatal(err)
	}
	if i := resp.AgentInfo; i == nil || i.Name != "hub" || i.Version != "1.2.3" {
		t.Errorf("agentInfo = %+v, want hub 1.2.3", i)
	}
	caps := resp.AgentCapabilities
	if caps.LoadSession || caps.PromptCapabilities.Image || caps.PromptCapabilities.Audio || caps.PromptCapabilities.EmbeddedContext {
		t.Errorf("capabilities = %+v, want no session/load and text-only prompts", caps)
	}
	if resp.ProtocolVersion != acp.ProtocolVersionNumber {
		t.Errorf("protocolVersion = %d, want %d", resp.ProtocolVersion, acp.ProtocolVersionNumber)
	}
}

// TestText: each dialect's answer arrives as agent_message_chunk text,
// exactly once whether the agent streams deltas (claude, pi, codex?) or
// sends whole messages, the reasoning as agent_thought_chunk, and the
// prompt ends end_turn with the run's usage.
func TestText(t *testing.T) {
	t.Parallel()
	for _, d := range fakeagent.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			req, _ := template(t, dialectAgent(d), fake(t, d, "ok", 0))
			c := serve(t, acpserver.Config{Request: req})
			resp, err := c.prompt(t, c.session(t), "Say hello.")
			if err != nil {
				t.Fatalf("session/prompt: %v", err)
			}
			if resp.StopReason != acp.StopReasonEndTurn {
				t.Errorf("stopReason = %q, want end_turn", resp.StopReason)
			}
			if got, want := c.cl.text(), "Hello from the fake agent."; got != want {
				t.Errorf("agent_message_chunk text = %q, want %q", got, want)
			}
			var thought strings.Builder
			for _, n := range c.cl.seen() {
				if th := n.Update.AgentThoughtChunk; th != nil && th.Content.Text != nil {
					thought.WriteString(th.Content.Text.Text)
				}
			}
			fin := lastFinished(t, c)
			if !strings.Contains(thought.String(), "Considering the request.") && hasEvent(c, events.TypeReasoning) {
				t.Errorf("agent_thought_chunk text = %q, want the reasoning", thought.String())
			}
			if resp.Usage == nil || int64(resp.Usage.TotalTokens) != fin.Usage.Sum() {
				t.Errorf("usage = %+v, want the run's total %d", resp.Usage, fin.Usage.Sum())
			}
		})
	}
}

// collected drains the events Serve reported so far.
func collected(c *conn) []events.Event {
	var out []events.Event
	for {
		select {
		case ev := <-c.events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

var keep = map[*conn][]events.Event{}
var keepMu sync.Mutex

// all returns every event of c's runs so far.
// dialectAgent is the agent that runs the fake agent's dialect d: d's own,
// but for OpenCode, whose live sessions speak ACP (`opencode acp`,
// TestFollowUpSameProcess): its dialect is `opencode run`'s, a process a
// prompt (resumed).
func dialectAgent(d string) string {
	if d == "opencode" {
		return resumed
	}
	return d
}

func all(c *conn) []events.Event {
	keepMu.Lock()
	defer keepMu.Unlock()
	keep[c] = append(keep[c], collected(c)...)
	return keep[c]
}

func hasEvent(c *conn, typ events.Type) bool {
	for _, ev := range all(c) {
		if ev.Type() == typ {
			return true
		}
	}
	return false
}

// lastFinished is the end of c's last prompt: its turn.finished (a prompt
// is a turn of the session's agent), or the run.finished of a run.
func lastFinished(t *testing.T, c *conn) events.RunFinished {
	t.Helper()
	evs := all(c)
	for i := len(evs) - 1; i >= 0; i-- {
		switch f := evs[i].Body.(type) {
		case events.RunFinished:
			return f
		case events.TurnFinished:
			return events.RunFinished{OK: f.OK, Error: f.Error, Text: f.Text, Usage: f.Usage, CostUSD: f.CostUSD, CostSource: f.CostSource}
		}
	}
	t.Fatal("no run.finished")
	return events.RunFinished{}
}

// TestToolCall: a tool call arrives as tool_call (in progress, kind
// execute, the input) and tool_call_update (completed, the output).
func TestToolCall(t *testing.T) {
	t.Parallel()
	for _, d := range fakeagent.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			req, _ := template(t, dialectAgent(d), fake(t, d, "big", 100))
			c := serve(t, acpserver.Config{Request: req})
			if resp, err := c.prompt(t, c.session(t), "Run a tool."); err != nil || resp.StopReason != acp.StopReasonEndTurn {
				t.Fatalf("session/prompt = %+v, %v; want end_turn", resp, err)
			}
			var start *acp.SessionUpdateToolCall
			var update *acp.SessionToolCallUpdate
			for _, n := range c.cl.seen() {
				if u := n.Update.ToolCall; u != nil {
					start = u
				}
				if u := n.Update.ToolCallUpdate; u != nil {
					update = u
				}
			}
			if start == nil || update == nil {
				t.Fatalf("tool_call %+v, tool_call_update %+v; want both", start, update)
			}
			var callID string
			for _, ev := range all(c) {
				if ts, ok := ev.Body.(events.ToolStarted); ok {
					callID = ts.CallID
				}
			}
			if callID == "" || string(start.ToolCallId) != callID || start.Kind != acp.ToolKindExecute || start.Status != acp.ToolCallStatusInProgress || start.Title == "" {
				t.Errorf("tool_call = %+v, want %s, execute, in_progress, a title", start, callID)
			}
			if in, _ := json.Marshal(start.RawInput); !strings.Contains(string(in), "echo fake-tool-ok") {
				t.Errorf("tool_call rawInput = %s, want the command", in)
			}
			if update.ToolCallId != start.ToolCallId || update.Status == nil || *update.Status != acp.ToolCallStatusCompleted {
				t.Errorf("tool_call_update = %+v, want %s completed", update, start.ToolCallId)
			}
			if len(update.Content) != 1 || update.Content[0].Content == nil || update.Content[0].Content.Content.Text == nil ||
				update.Content[0].Content.Content.Text.Text != fakeagent.Payload(100) {
				t.Errorf("tool_call_update content = %+v, want the output", update.Content)
			}
		})
	}
}

// TestFailureBin: a run that fails with a bin that has no stop reason is
// a JSON-RPC error whose message is bin/reason: message (hint) and whose
// data is hub's whole error object.
func TestFailureBin(t *testing.T) {
	t.Parallel()
	req, _ := template(t, resumed, fake(t, "opencode", "no-result", 0))
	c := serve(t, acpserver.Config{Request: req})
	_, err := c.prompt(t, c.session(t), "Say hello.")
	var re *acp.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("session/prompt error = %v, want a JSON-RPC error", err)
	}
	fin := lastFinished(t, c)
	e := fin.Error
	if e == nil || e.Bin != events.BinProtocol {
		t.Fatalf("run.finished error = %+v, want protocol", e)
	}
	if want := fmt.Sprintf("%s/%s: %s (%s)", e.Bin, e.Reason, e.Message, e.Hint); re.Code != acpserver.RunFailedCode || re.Message != want {
		t.Errorf("error = %d %q, want %d %q", re.Code, re.Message, acpserver.RunFailedCode, want)
	}
	data, _ := json.Marshal(re.Data)
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bin", "reason", "message", "retryable", "retry_after_s", "http_status", "hint"} {
		if _, ok := got[k]; !ok {
			t.Errorf("error data %s has no %q", data, k)
		}
	}
	if got["bin"] != string(e.Bin) || got["reason"] != string(e.Reason) {
		t.Errorf("error data %s, want %s/%s", data, e.Bin, e.Reason)
	}
}

// TestBudget: a run stopped at --max-tokens ends max_tokens, after a
// usage_update.
func TestBudget(t *testing.T) {
	t.Parallel()
	req, _ := template(t, "pi", fake(t, "pi", "ok", 0))
	req.Limits.MaxTokens = 100 // the fake's first step reports 1,050
	c := serve(t, acpserver.Config{Request: req})
	resp, err := c.prompt(t, c.session(t), "Say hello.")
	if err != nil || resp.StopReason != acp.StopReasonMaxTokens {
		t.Fatalf("session/prompt = %+v, %v; want max_tokens", resp, err)
	}
	var used int
	for _, n := range c.cl.seen() {
		if u := n.Update.UsageUpdate; u != nil {
			used = u.Used
		}
	}
	if used != 1050 {
		t.Errorf("usage_update used = %d, want 1050 (the step's tokens)", used)
	}
}

// waitUpdate waits for c's next session/update.
func waitUpdate(t *testing.T, c *conn) {
	t.Helper()
	select {
	case <-c.cl.got:
	case <-t.Context().Done():
		t.Fatal("no session/update")
	}
}

// running starts a prompt of the hanging agent in s and returns once its
// first update came; the prompt's answer comes on the channel.
func running(t *testing.T, c *conn, s acp.SessionId) <-chan promptResult {
	t.Helper()
	res := make(chan promptResult, 1)
	go func() {
		r, err := c.Prompt(context.Background(), acp.PromptRequest{SessionId: s, Prompt: []acp.ContentBlock{acp.TextBlock("hang")}})
		res <- promptResult{r, err}
	}()
	waitUpdate(t, c)
	return res
}

type promptResult struct {
	resp acp.PromptResponse
	err  error
}

// TestCancel: session/cancel stops the running run: its prompt answers
// cancelled, and by then no process of the agent's is left.
func TestCancel(t *testing.T) {
	t.Parallel()
	req, marker := template(t, resumed, fakeOpencode(t, hangBody))
	c := serve(t, acpserver.Config{Request: req})
	s := c.session(t)
	res := running(t, c, s)
	if left := hubtest.Leftovers(marker); len(left) < 2 {
		t.Fatalf("the agent and its grandchild are not running: %v", left)
	}
	if err := c.Cancel(t.Context(), acp.CancelNotification{SessionId: s}); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("session/prompt = %+v, %v; want cancelled", r.resp, r.err)
	}
	if left := hubtest.Leftovers(marker); len(left) > 0 {
		t.Errorf("processes of the run alive after the prompt answered: %v", left)
	}
	if e := lastFinished(t, c).Error; e == nil || e.Bin != events.BinCancelled {
		t.Errorf("run.finished error = %v, want cancelled", e)
	}
}

// TestSecondPromptWhileRunning: a prompt in a session whose prompt runs is
// refused, and the running one goes on (until cancelled here).
func TestSecondPromptWhileRunning(t *testing.T) {
	t.Parallel()
	req, _ := template(t, resumed, fakeOpencode(t, hangBody))
	c := serve(t, acpserver.Config{Request: req})
	s := c.session(t)
	res := running(t, c, s)
	_, err := c.prompt(t, s, "again")
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != -32600 {
		t.Errorf("second session/prompt = %v, want invalid request (-32600)", err)
	}
	select {
	case r := <-res:
		t.Fatalf("first prompt answered %+v, %v after the second was refused; want it running", r.resp, r.err)
	default:
	}
	if err := c.Cancel(t.Context(), acp.CancelNotification{SessionId: s}); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Errorf("first session/prompt = %+v, %v; want cancelled", r.resp, r.err)
	}
}

// TestConnectionClosed: when the client closes the connection, Serve stops
// the running run and returns only once its processes are gone.
func TestConnectionClosed(t *testing.T) {
	t.Parallel()
	req, marker := template(t, resumed, fakeOpencode(t, hangBody))
	c := serve(t, acpserver.Config{Request: req})
	running(t, c, c.session(t))
	if err := c.close(); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	if left := hubtest.Leftovers(marker); len(left) > 0 {
		t.Errorf("processes of the run alive after Serve returned: %v", left)
	}
	if e := lastFinished(t, c).Error; e == nil || e.Bin != events.BinCancelled {
		t.Errorf("run.finished error = %v, want cancelled", e)
	}
}

// TestResume: a session's second prompt resumes the agent's session from
// the first run's run.finished.session_id.
func TestResume(t *testing.T) {
	t.Parallel()
	argv := filepath.Join(t.TempDir(), "argv")
	body := `echo "$*" >> ` + argv + `
echo '{"type":"step_start","sessionID":"ses_resume1","part":{}}'
echo '{"type":"text","sessionID":"ses_resume1","part":{"type":"text","text":"the answer"}}'
echo '{"type":"step_finish","sessionID":"ses_resume1","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'`
	req, _ := template(t, resumed, fakeOpencode(t, body))
	c := serve(t, acpserver.Config{Request: req})
	s := c.session(t)
	for _, p := range []string{"first", "second"} {
		if resp, err := c.prompt(t, s, p); err != nil || resp.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("session/prompt %s = %+v, %v", p, resp, err)
		}
	}
	// A new session starts afresh.
	if _, err := c.prompt(t, c.session(t), "third"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(argv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("agent ran %d times, want 3:\n%s", len(lines), b)
	}
	for i, want := range []bool{false, true, false} {
		if got := strings.Contains(lines[i], "--session=ses_resume1"); got != want {
			t.Errorf("run %d argv %q: resumes = %v, want %v", i+1, lines[i], got, want)
		}
	}
}

// TestPromptRefused: prompts hub cannot run are invalid params, and start
// nothing.
func TestPromptRefused(t *testing.T) {
	t.Parallel()
	req, _ := template(t, resumed, fakeOpencode(t, "echo started >&2; exit 1"))
	c := serve(t, acpserver.Config{Request: req})
	s := c.session(t)
	for name, blocks := range map[string][]acp.ContentBlock{
		"image": {acp.TextBlock("look"), acp.ImageBlock("AAAA", "image/png")},
		"audio": {acp.AudioBlock("AAAA", "audio/wav")},
		"empty": {acp.TextBlock("  ")},
	} {
		_, err := c.Prompt(t.Context(), acp.PromptRequest{SessionId: s, Prompt: blocks})
		var re *acp.RequestError
		if !errors.As(err, &re) || re.Code != -32602 {
			t.Errorf("session/prompt %s = %v, want invalid params (-32602)", name, err)
		}
	}
	_, err := c.prompt(t, "no-such-session", "hi")
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != -32602 {
		t.Errorf("session/prompt in an unknown session = %v, want invalid params", err)
	}
	if _, err := c.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "relative/dir", McpServers: []acp.McpServer{}}); err == nil {
		t.Errorf("session/new with a relative cwd: no error")
	}
	if evs := all(c); len(evs) > 0 {
		t.Errorf("runs started: %d events", len(evs))
	}
}

// TestFollowUpSameProcess: the prompts of an ACP session go to one agent
// process where the CLI can hold a live session (Claude Code's stream-json
// input, pi's RPC mode, session/prompt again for OpenCode's `opencode acp`
// and any ACP agent, played by the fake ACP agent): the agent starts once
// for three prompts, and a session/cancel interrupts a turn, not the
// session. The process is gone once the client closes the connection.
func TestFollowUpSameProcess(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	acpAgent := fmt.Sprintf("GORACE=atexit_sleep_ms=0 %s=text exec %q", fakeacp.EnvScenario, exe)
	for _, d := range []string{"claude", "pi", "opencode", "acp"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			starts := filepath.Join(t.TempDir(), "starts")
			var bin string
			switch d {
			case "opencode": // its --version, then `opencode acp`
				bin = fakeOpencode(t, `[ "$1" = acp ] && `+acpAgent)
			case "acp":
				bin = filepath.Join(t.TempDir(), "agent")
				if err := hubtest.WriteScript(bin, []byte("#!/bin/sh\n"+acpAgent+"\n")); err != nil {
					t.Fatal(err)
				}
			default:
				bin = fake(t, d, "ok", 0)
			}
			counted := filepath.Join(t.TempDir(), d)
			script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = --version ] || echo start >> %q\nexec %q \"$@\"\n", starts, bin)
			if err := hubtest.WriteScript(counted, []byte(script)); err != nil {
				t.Fatal(err)
			}
			req, marker := template(t, d, counted)
			c := serve(t, acpserver.Config{Request: req})
			s := c.session(t)
			for _, p := range []string{"first", "second", "third"} {
				if resp, err := c.prompt(t, s, p); err != nil || resp.StopReason != acp.StopReasonEndTurn {
					t.Fatalf("session/prompt %s = %+v, %v", p, resp, err)
				}
			}
			b, _ := os.ReadFile(starts)
			if n := strings.Count(string(b), "start"); n != 1 {
				t.Errorf("the agent started %d times for three prompts, want once", n)
			}
			if err := c.close(); err != nil {
				t.Fatalf("Serve = %v", err)
			}
			if left := hubtest.Leftovers(marker); len(left) > 0 {
				t.Errorf("processes left after the connection closed: %v", left)
			}
		})
	}
}
