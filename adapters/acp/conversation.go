package acp

import (
	"errors"
	"io"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	acpnorm "github.com/hubcli/hub/normalize/acp"
)

// cancelWait bounds the write of session/cancel, which waits while the
// agent's stdin is full (it does not read it): then the stop goes on to
// the SIGTERM at once.
const cancelWait = 2 * time.Second

// conversation is one ACP run's client: the decoder of the agent's updates
// (normalize/acp, on the run's goroutine) and the requests hub sends and
// answers through the SDK's connection (peer: on the SDK's goroutines and
// lead's). It implements adapters.Conversation.
type conversation struct {
	*acpnorm.Decoder
	*peer
	done chan struct{} // closed when lead returns

	// beforePrompt, when not nil (in tests), is called by lead just
	// before it hands session/prompt to the SDK, which takes a while (a
	// large prompt is encoded twice) before its write begins.
	beforePrompt func()

	// Under peer.mu, with peer.interrupted (Interrupt was called):
	session   sdk.SessionId // once the agent gave (or loaded) one
	prompting bool          // session/prompt is being written or out, and not answered
}

var _ adapters.Conversation = (*conversation)(nil)

// Open implements adapters.Conversation: it starts the SDK's connection
// on the agent's stdin and lead's requests.
func (c *conversation) Open(stdin io.WriteCloser) {
	c.open(stdin, promptGate{c})
	c.done = make(chan struct{})
	go c.lead()
}

// Receive implements adapters.Conversation: the SDK gets the agent's
// requests and responses (peer.receive), a permission request decided with
// what the decoder knows of the call (Decoder.Permit).
func (c *conversation) Receive(line []byte) { c.receive(line, c.Permit) }

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
	sid, err := c.setup(c.stop)
	c.mu.Lock()
	c.session = sid
	stopped := c.interrupted
	c.mu.Unlock()
	if err != nil || stopped {
		return
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
	_, _ = c.conn.Prompt(c.ctx, sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(prompt)}})
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
