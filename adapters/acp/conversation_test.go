package acp

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
)

// stdinRecorder plays the agent's stdin for a conversation without a
// process: it records each message the SDK writes (one Write a message)
// and answers initialize and session/new through Receive. A write of the
// method in block waits until release is closed, then fails as a write to
// a gone process does, and so does every write after it.
type stdinRecorder struct {
	c       *conversation
	block   string
	release chan struct{}

	mu      sync.Mutex
	methods []string
	closed  bool
	begun   chan string // each method as its write begins
	wrote   chan string // each method once written
}

func newConversation(t *testing.T, block string) (*conversation, *stdinRecorder) {
	t.Helper()
	c := &conversation{peer: &peer{req: adapters.Request{Prompt: "hello", Cwd: t.TempDir()}}}
	r := &stdinRecorder{c: c, block: block, release: make(chan struct{}),
		begun: make(chan string, 16), wrote: make(chan string, 16)}
	return c, r
}

func (r *stdinRecorder) Write(b []byte) (int, error) {
	m := gjson.ParseBytes(b)
	method := m.Get("method").Str
	r.begun <- method
	if method != "" && method == r.block {
		<-r.release
	}
	select {
	case <-r.release:
		return 0, errors.New("write |1: broken pipe")
	default:
	}
	r.mu.Lock()
	r.methods = append(r.methods, method)
	r.mu.Unlock()
	r.wrote <- method
	id := m.Get("id").Raw
	switch method {
	case "initialize":
		r.c.Receive([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":1}}`))
	case "session/new":
		r.c.Receive([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"sessionId":"s1"}}`))
	}
	return len(b), nil
}

func (r *stdinRecorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

// written is the methods of the messages written so far, in order.
func (r *stdinRecorder) written() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.methods, " ")
}

// waitFor waits until a message of method is sent on ch (begun or
// wrote).
func waitFor(ch chan string, method string) {
	for m := range ch {
		if m == method {
			return
		}
	}
}

// TestInterruptBeforePrompt: a stop that comes once lead has decided to
// send session/prompt but before the prompt's write began (the SDK takes a
// while to encode a large prompt: a busy machine's idle limit fired there)
// asks nothing: the SIGTERM is to follow at once, and neither the prompt
// nor a session/cancel reaches the agent. A session/cancel written ahead of
// the prompt would cancel nothing and hold the SIGTERM for the whole grace
// period.
func TestInterruptBeforePrompt(t *testing.T) {
	t.Parallel()
	c, r := newConversation(t, "")
	asked := make(chan bool, 1)
	c.beforePrompt = func() { asked <- c.Interrupt() }
	c.Open(r)
	if <-asked {
		t.Error("Interrupt reported that it asked the agent to stop a turn not yet sent")
		// The prompt follows it: answer it, or lead waits for ever.
		waitFor(r.wrote, "session/prompt")
		c.Receive([]byte(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`))
	}
	<-c.done
	if got, want := r.written(), "initialize session/new"; got != want {
		t.Errorf("the agent's stdin got %q, want %q", got, want)
	}
	c.Close()
	if !r.closed {
		t.Error("the agent's stdin was not closed")
	}
}

// TestInterruptPromptOut: once the prompt is written, a stop asks the
// agent with session/cancel, after the prompt.
func TestInterruptPromptOut(t *testing.T) {
	t.Parallel()
	c, r := newConversation(t, "")
	c.Open(r)
	waitFor(r.wrote, "session/prompt")
	if !c.Interrupt() {
		t.Error("Interrupt did not ask, with the prompt out")
	}
	if got, want := r.written(), "initialize session/new session/prompt session/cancel"; got != want {
		t.Errorf("the agent's stdin got %q, want %q", got, want)
	}
	c.Receive([]byte(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`))
	c.Close()
}

// TestInterruptPromptStuck: while the prompt's write waits (an agent that
// reads no more of its stdin), a stop gives up its session/cancel after
// cancelWait and asks nothing; a session/cancel never goes ahead of the
// prompt.
func TestInterruptPromptStuck(t *testing.T) {
	t.Parallel()
	c, r := newConversation(t, "session/prompt")
	c.Open(r)
	waitFor(r.begun, "session/prompt")
	start := time.Now()
	if c.Interrupt() {
		t.Error("Interrupt reported that it asked, with the prompt's write stuck")
	}
	if took := time.Since(start); took < cancelWait {
		t.Errorf("Interrupt gave up after %v, want cancelWait (%v): it cannot have written session/cancel", took, cancelWait)
	}
	close(r.release) // the agent is gone: the writes fail
	<-c.done
	c.Close()
	if got, want := r.written(), "initialize session/new"; got != want {
		t.Errorf("the agent's stdin got %q, want %q", got, want)
	}
}
