package hubtest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/acpserver"
	"github.com/hubcli/hub/budget"
)

// ACPLatency measures, when HUB_BENCH_ACP names a number of prompts (it
// skips otherwise: a measurement, not a check), `hub acp`'s follow-up
// prompts (acpserver.Serve, a's real CLI against the mock server): the time
// from a session/prompt to its first session/update, for each prompt after
// the first of one ACP session, and logs the median with the CPU model.
// Before issue 35 each follow-up was a fresh run resuming the session; its
// cost is what [SessionLatency] measures as a resumed run.
//
//	HUB_BENCH_ACP=10 go test -run TestACPLatency -v ./adapters/claude ./adapters/pi
func ACPLatency(t *testing.T, a Agent) {
	n, _ := strconv.Atoi(os.Getenv("HUB_BENCH_ACP"))
	if n <= 0 {
		t.Skip("a measurement: set HUB_BENCH_ACP=<prompts>")
	}
	e := a.Prepare(t, Setup{})
	cl := &latencyClient{}
	conn, end := serveACP(t, a, e, acpserver.Config{}, cl)
	defer end()
	s, err := conn.NewSession(t.Context(), acp.NewSessionRequest{Cwd: e.Work, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	var follow []time.Duration
	for i := range n + 1 {
		cl.mark()
		resp, err := conn.Prompt(t.Context(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("prompt MOCK_TEXT")}})
		if err != nil || resp.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("prompt %d: %+v, %v", i+1, resp, err)
		}
		if i > 0 {
			follow = append(follow, cl.first())
		}
	}
	slices.Sort(follow)
	t.Logf("%s through hub acp, %d follow-up prompts in one ACP session, on %s: session/prompt to its first session/update: median %s (min %s, max %s)",
		a.Name, n, cpuModel(), follow[len(follow)/2], follow[0], follow[len(follow)-1])
}

// serveACP serves hub acp (acpserver.Serve, cfg with a's request in e,
// and cfg.Request's Files) to the client cl over pipes, initialized; end
// closes the connection, waits for Serve, and fails t if a process of e is
// left.
func serveACP(t *testing.T, a Agent, e *Env, cfg acpserver.Config, cl acp.Client) (conn *acp.ClientSideConnection, end func()) {
	t.Helper()
	limits := budget.Limits{IdleTimeout: time.Minute}
	Unbounded(t, &limits)
	cfg.Request = hub.Request{Agent: a.Name, Model: a.Model, Bin: Bin(t, a.Name), Env: slices.Clone(e.Env), Limits: limits, Files: cfg.Request.Files}
	toClient, fromServer := io.Pipe()
	toServer, fromClient := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- acpserver.Serve(context.Background(), cfg, toServer, fromServer)
		fromServer.Close()
	}()
	conn = acp.NewClientSideConnection(cl, fromClient, toClient)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	end = func() {
		fromClient.Close()
		<-done
		toClient.Close()
		if left := Leftovers(e.Dir); len(left) > 0 {
			t.Errorf("processes left after the connection closed: %v", left)
		}
	}
	if _, err := conn.Initialize(t.Context(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		end()
		t.Fatal(err)
	}
	return conn, end
}

// latencyClient is an ACP client that notes when the first update after a
// mark came.
type latencyClient struct {
	mu     sync.Mutex
	start  time.Time
	firstT time.Time
	// permission answers session/request_permission; nil: cancelled.
	permission func(acp.RequestPermissionRequest) acp.RequestPermissionResponse
}

func (c *latencyClient) mark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.start, c.firstT = time.Now(), time.Time{}
}

func (c *latencyClient) first() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.firstT.Sub(c.start)
}

func (c *latencyClient) SessionUpdate(context.Context, acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstT.IsZero() {
		c.firstT = time.Now()
	}
	return nil
}

func (c *latencyClient) RequestPermission(_ context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	if c.permission != nil {
		return c.permission(r), nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}
func (c *latencyClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}
func (c *latencyClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}
func (c *latencyClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}
func (c *latencyClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}
func (c *latencyClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}
func (c *latencyClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}
func (c *latencyClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}
