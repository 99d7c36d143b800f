package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub/hubtest/fakeacp"
)

// TestACPUsageErrors: what hub acp cannot take is a usage error (exit 2)
// before it reads stdin, hub run's checks included.
func TestACPUsageErrors(t *testing.T) {
	bin := fakeAgent(t, okBody)
	tests := [][]string{
		{"acp"}, // no --agent
		{"acp", "--agent", "nope"},
		{"acp", "--agent", "opencode", "--bin", bin, "a prompt"},
		{"acp", "--agent", "opencode", "--bin", bin, "--prompt-file", "acp_test.go"},
		{"acp", "--agent", "opencode", "--bin", bin, "--confirm"},
		{"acp", "--agent", "opencode", "--bin", bin, "--raw-log", t.TempDir() + "/raw"},
		{"acp", "--agent", "opencode", "--bin", bin, "--permission", "full"},
		{"acp", "--agent", "opencode", "--bin", bin, "--timeout", "soon"},
		{"acp", "--agent", "opencode", "--bin", bin, "--cwd", "/nonexistent"},
		{"acp", "--agent", "opencode", "--bin", bin, "--max-tokens", "-1"},
	}
	for _, args := range tests {
		// A stdin that fails the test if read: nothing may wait on it.
		code, out, stderr := hubWith(t, failReader{t}, args...)
		if code != 2 || out != "" || !strings.Contains(stderr, "hub: ") {
			t.Errorf("hub %q = exit %d, stdout %q, stderr %q; want 2, nothing on stdout, the error on stderr", args, code, out, stderr)
		}
		if strings.Contains(stderr, "hub: run: ") {
			t.Errorf("hub %q: stderr %q names run, want acp", args, stderr)
		}
	}
}

type failReader struct{ t *testing.T }

func (r failReader) Read([]byte) (int, error) {
	r.t.Errorf("stdin read by a hub acp that should have refused its flags")
	return 0, io.EOF
}

// hubWith is hub (main_test.go) with stdin as given.
func hubWith(t *testing.T, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), nil, append([]string{"hub"}, args...), stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// acpClient records session/updates; it offers no client methods.
type acpClient struct {
	mu   sync.Mutex
	text strings.Builder
}

func (c *acpClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := n.Update.AgentMessageChunk; m != nil && m.Content.Text != nil {
		c.text.WriteString(m.Content.Text.Text)
	}
	return nil
}

var errNoMethod = errors.New("not offered")

func (c *acpClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errNoMethod
}
func (c *acpClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errNoMethod
}
func (c *acpClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{}, errNoMethod
}
func (c *acpClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errNoMethod
}
func (c *acpClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errNoMethod
}
func (c *acpClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errNoMethod
}
func (c *acpClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errNoMethod
}
func (c *acpClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errNoMethod
}

// acpSession runs `hub acp args…` in-process with an ACP client on its
// stdin and stdout, sends one prompt in one session, closes the
// connection, and returns the answer, the streamed text, hub's exit
// status, and all hub wrote on stdout and stderr.
func acpSession(t *testing.T, prompt string, args ...string) (resp acp.PromptResponse, err error, text string, code int, stdout, stderr string) {
	t.Helper()
	toClient, hubOut := io.Pipe()
	hubIn, fromClient := io.Pipe()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		// out first: a message is in it before the client can read it,
		// and so before the client closes and hub acp returns.
		c := run(t.Context(), nil, append([]string{"hub", "acp"}, args...), hubIn, io.MultiWriter(&out, hubOut), &errb)
		hubOut.Close()
		done <- c
	}()
	cl := &acpClient{}
	conn := acp.NewClientSideConnection(cl, fromClient, toClient)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	if _, err := conn.Initialize(t.Context(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v (stderr %s)", err, errb.String())
	}
	s, err := conn.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	resp, err = conn.Prompt(t.Context(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}})
	fromClient.Close() // EOF: hub acp ends
	code = <-done
	toClient.Close()
	cl.mu.Lock()
	text = cl.text.String()
	cl.mu.Unlock()
	return resp, err, text, code, out.String(), errb.String()
}

// TestACPServes: hub acp answers a prompt through the agent, writes
// nothing but JSON-RPC messages on stdout, and exits 0 when the client
// closes the connection; the config file's limits apply. The agent is
// OpenCode, whose session hub holds through `opencode acp`: played by the
// fake ACP agent (this test binary).
func TestACPServes(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := fakeAgent(t, fmt.Sprintf(`[ "$1" = acp ] && GORACE=atexit_sleep_ms=0 %s=text exec %q`, fakeacp.EnvScenario, exe))
	resp, err, text, code, stdout, stderr := acpSession(t, "hi", "--agent", "opencode", "--bin", bin)
	if err != nil || resp.StopReason != acp.StopReasonEndTurn || text != fakeacp.Answer {
		t.Errorf("session/prompt = %+v, %v, text %q; want end_turn, %q", resp, err, text, fakeacp.Answer)
	}
	if code != 0 {
		t.Errorf("hub acp exit %d, want 0 (stderr %q)", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		var m struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.JSONRPC != "2.0" {
			t.Errorf("stdout line %q is not a JSON-RPC message", line)
		}
	}

	// The config file's max-tokens (the fake reports 1055) stops the run.
	writeConfig(t, "max-tokens = 5\n")
	resp, err, _, code, _, stderr = acpSession(t, "hi", "--agent", "opencode", "--bin", bin)
	if err != nil || resp.StopReason != acp.StopReasonMaxTokens || code != 0 {
		t.Errorf("with max-tokens = 5 in the config: session/prompt = %+v, %v, exit %d (stderr %q); want max_tokens, exit 0", resp, err, code, stderr)
	}
}

// TestACPInputEnd: hub acp exits 0 and says nothing when the input ends
// after whole lines (a malformed one answered on stdout), and exits
// protocol (10), saying why on stderr, when it ends in the middle of one.
func TestACPInputEnd(t *testing.T) {
	bin := fakeAgent(t, okBody)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n"
	for _, tc := range []struct {
		name, lines, last string
		code              int
		stdout, stderr    string
	}{
		{"whole lines", initialize + "{not json\n", "", 0, `"id":null,"error":{"code":-32700`, "level=WARN"},
		{"whole lines, no more", initialize, "\n", 0, `"id":1,"result"`, ""},
		{"cut", initialize, `{"jsonrpc":"2.0","id":2,`, 10, `"id":1,"result"`, "in the middle of a message"},
	} {
		in, w := io.Pipe()
		out := &lockedBuffer{}
		var errb bytes.Buffer
		done := make(chan int, 1)
		go func() {
			done <- run(t.Context(), nil, []string{"hub", "acp", "--agent", "opencode", "--bin", bin}, in, out, &errb)
		}()
		io.WriteString(w, tc.lines)
		// The answers, before the input ends (they are not waited for after).
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), tc.stdout) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		io.WriteString(w, tc.last)
		w.Close()
		code := <-done
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.stderr) || tc.stderr == "" && errb.Len() > 0 {
			t.Errorf("%s: hub acp exit %d, stdout %q, stderr %q; want exit %d, stdout with %s, stderr with %q", tc.name, code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe to read while it is written.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
