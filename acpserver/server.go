package acpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
)

// Config is what Serve serves.
type Config struct {
	// Request is the template of every run. Agent is required. Per prompt,
	// Prompt is set to the prompt's text; Cwd to the session's cwd
	// (session/new's; the template's when it gives none); Resume to the
	// agent's session id from the session's previous run (the template's
	// for a session's first prompt); Files go with a session's first
	// prompt only. Everything else (model, limits, permission, sandbox,
	// env, …) is used as it is.
	Request hub.Request
	// Options are given to every run (hub.WithKill, WithOrphans,
	// WithConfirm, …). A WithRunID here would give every run the same id.
	Options []hub.Option
	// Version is hub's version, sent in initialize's agentInfo; "" sends
	// "(devel)".
	Version string
	// Events, when not nil, receives every hub event of every run (the
	// whole stream, run.finished last) with the ACP session id, before the
	// event's session/update is sent. It is called from the run's
	// goroutine: concurrently for runs of different sessions. An event
	// log, for example.
	Events func(sessionID string, ev events.Event)
	// ForwardApprovals asks the client (the editor) about each tool call the
	// agent asks to make outside the grant, as session/request_permission,
	// and relays the answer (hub.WithApprover; see forward). Without it,
	// the agent is held to the grant and asks nothing. Only prompts held as
	// turns of a live session ask: one with a sandbox or a schema runs
	// with the grant alone.
	ForwardApprovals bool
	// Logger receives the ACP connection's own diagnostics (a message it
	// cannot parse, the connection's end); nil discards them.
	Logger *slog.Logger
}

// ErrUnknownAgent is returned by Serve for a Config.Request.Agent that is
// not registered (adapters.Lookup).
var ErrUnknownAgent = fmt.Errorf("acpserver: unknown agent")

// Serve serves one ACP connection as an agent: it reads the client's
// JSON-RPC messages from in and writes its own to out (one JSON object a
// line; out receives nothing else). Each ACP session keeps one hub
// session of cfg.Request's agent (hub.NewSession: one agent process for
// every prompt where the CLI can hold a live session, else a process a
// prompt resuming the last), started at its first prompt; each
// session/prompt is one turn of it (a request with a sandbox or a schema:
// one hub run of its own), streams its events back as session/update
// notifications (see Updates), and answers with a stop reason or a
// JSON-RPC error (see Outcome). Within a session, one prompt
// runs at a time: a second one while the first runs is refused (JSON-RPC
// invalid request); sessions run at once. session/cancel interrupts the
// session's running turn and keeps its agent (a run of its own is stopped,
// its process tree with it), and the prompt answers stop reason cancelled;
// an agent whose process ended between prompts is started again at the
// next one, resuming its session, and told in the turn's first update; a
// $/cancel_request of the prompt's request is not honoured (the SDK uses
// the same signal when a second prompt comes in, which hub refuses
// instead).
//
// Serve answers itself what the SDK would drop without a word: a line
// that is not JSON gets a JSON-RPC parse error (-32700) with id null; a
// batch (a JSON array), any other JSON that is not an object, or an
// object with neither method nor id, an invalid request (-32600) with id
// null. A message over MaxMessage bytes is skipped, read in bounded
// chunks and never held whole, and the connection goes on: the id and
// method in its first 4 KiB say whom to answer (id null when none is
// there): a session/prompt gets invalid params (-32602) whose data is
// invalid_input/prompt_too_large, any other request an invalid request.
// The data of these errors is hub's error object, as Outcome's.
//
// Serve blocks until in ends (EOF or a read error: the client closed the
// connection) or ctx is done. Then it cancels every running run (each ends
// cancelled/caller) and waits until each has ended, its agent's process
// tree gone, before it returns: no run outlives Serve (the answers of the
// prompts it cancelled may still be on their way to out as it returns:
// a client that closed the connection reads none of them). It returns nil
// when in ended after whole lines; an error wrapping ErrConnection when
// the connection ended abnormally (in ended in the middle of a line, a
// read of in failed, or the SDK stopped reading); and ctx's cause when
// ctx ended it, in which case the goroutine reading in stays in its read
// until in ends (close in to end it). It
// returns ErrUnknownAgent (wrapped) before reading anything when the
// template's agent is not registered.
//
// Serve is safe to call concurrently on different connections.
func Serve(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	if _, err := adapters.Lookup(cfg.Request.Agent); err != nil {
		return fmt.Errorf("%w %q (registered: %s)", ErrUnknownAgent, cfg.Request.Agent, strings.Join(adapters.Names(), ", "))
	}
	base, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := &server{cfg: cfg, base: base, sessions: map[acp.SessionId]*session{}, ready: make(chan struct{})}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// One writer under the SDK's messages and the filter's answers: a
	// message never interleaves with another.
	w := &lockedWriter{w: out}
	f := newFilter(in, w, logger)
	// The SDK starts reading at once: nothing is read before its logger
	// is set (SetLogger is not safe while it logs).
	f.start = s.ready
	conn := acp.NewAgentSideConnection(s, w, f)
	conn.SetLogger(logger)
	s.conn = conn
	close(s.ready)

	var err error
	select {
	case <-conn.Done():
		ended, ferr := f.Err()
		switch {
		case !ended: // the SDK stopped reading on its own (it logged why)
			err = fmt.Errorf("%w: it stopped reading the client's messages", ErrConnection)
		case ferr != nil:
			err = ferr
		}
		cancel(events.NewError(events.BinCancelled, events.ReasonCaller, "reconnect and send the prompt again",
			"the ACP client closed the connection; the run was stopped"))
	case <-ctx.Done():
		err = context.Cause(ctx)
		cancel(err)
	}
	s.mu.Lock()
	s.closed = true // no run starts after this
	lives := map[acp.SessionId]*hub.Session{}
	for id, sess := range s.sessions {
		if sess.live != nil {
			lives[id] = sess.live
		}
	}
	s.mu.Unlock()
	s.runs.Wait()
	// The sessions' agents: each ends as its session's ctx (base) did.
	var wg sync.WaitGroup
	for id, l := range lives {
		wg.Go(func() {
			l.Close()
			if ev, ok := l.Finished(); ok && s.cfg.Events != nil {
				s.cfg.Events(string(id), ev)
			}
		})
	}
	wg.Wait()
	return err
}

// server is the acp.Agent of one connection.
type server struct {
	cfg   Config
	base  context.Context // every run's parent: done when the connection ends
	conn  *acp.AgentSideConnection
	ready chan struct{} // closed once conn is set

	mu       sync.Mutex
	sessions map[acp.SessionId]*session
	closed   bool           // Serve is ending: no new run
	runs     sync.WaitGroup // running runs; Add only under mu while !closed
}

// session is one ACP session: where its runs work and how the next one
// resumes. Guarded by server.mu.
type session struct {
	cwd    string                  // "" for the template's
	resume string                  // the agent's session id to resume; "" for a new one
	cancel context.CancelCauseFunc // the running prompt's, nil when idle
	// live is the session's agent, kept between prompts (hub.NewSession:
	// one process for every prompt where the CLI can, else one a prompt
	// resuming the last); nil before the first prompt and after its
	// process ended.
	live *hub.Session
	// prompted: a prompt of the session has run, so the template's
	// context files (Request.Files) went with it and are not sent again.
	prompted bool
}

var _ acp.Agent = (*server)(nil)

// Initialize answers with hub's name and version, protocol version 1, no
// session/load, text-only prompts and no authentication methods.
func (s *server) Initialize(_ context.Context, _ acp.InitializeRequest) (acp.InitializeResponse, error) {
	version := s.cfg.Version
	if version == "" {
		version = "(devel)"
	}
	title := "hub (" + s.cfg.Request.Agent + ")"
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo:       &acp.Implementation{Name: "hub", Title: &title, Version: version},
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        false,
			PromptCapabilities: acp.PromptCapabilities{}, // text and resource links only (ACP's baseline)
		},
		AuthMethods: []acp.AuthMethod{},
	}, nil
}

// Authenticate accepts any method: hub needs no authentication of its own
// (the agent CLIs use their own credentials), and offers none.
func (s *server) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

// NewSession opens a session in params.Cwd, which must be an absolute path
// of a directory ("" keeps the template's Cwd); anything else is invalid
// params. params.McpServers are ignored: the agent CLI runs with its own
// MCP configuration, which hub does not change.
func (s *server) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if p.Cwd != "" {
		if !filepath.IsAbs(p.Cwd) {
			return acp.NewSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not an absolute path", p.Cwd)})
		}
		if fi, err := os.Stat(p.Cwd); err != nil || !fi.IsDir() {
			return acp.NewSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not a directory", p.Cwd)})
		}
	}
	id := acp.SessionId(newSessionID())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return acp.NewSessionResponse{}, acp.NewInternalError(map[string]any{"error": "hub acp is shutting down"})
	}
	s.sessions[id] = &session{cwd: p.Cwd, resume: s.cfg.Request.Resume}
	return acp.NewSessionResponse{SessionId: id}, nil
}

// Prompt runs one hub run of the session's prompt (see Serve).
func (s *server) Prompt(_ context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	// The request's own context is not the run's: the SDK cancels it when
	// a second prompt of the same session comes in, which hub refuses
	// instead. session/cancel and the connection's end stop the run.
	text, rerr := promptText(p.Prompt)
	if rerr != nil {
		return acp.PromptResponse{}, rerr
	}
	<-s.ready
	s.mu.Lock()
	sess := s.sessions[p.SessionId]
	switch {
	case sess == nil:
		s.mu.Unlock()
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q (open one with session/new)", p.SessionId)})
	case s.closed:
		s.mu.Unlock()
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": "hub acp is shutting down"})
	case sess.cancel != nil:
		s.mu.Unlock()
		return acp.PromptResponse{}, acp.NewInvalidRequest(map[string]any{"error": fmt.Sprintf(
			"a prompt is already running in session %q: wait for its answer, or send session/cancel", p.SessionId)})
	}
	runCtx, cancel := context.WithCancelCause(s.base)
	defer cancel(nil)
	sess.cancel = cancel
	req := s.cfg.Request
	req.Env = slices.Clone(req.Env)
	req.Protect = slices.Clone(req.Protect)
	req.Prompt = text
	if sess.cwd != "" {
		req.Cwd = sess.cwd
	}
	req.Resume = sess.resume
	if sess.prompted {
		req.Files = nil // the first prompt's, in the agent's session now
	}
	sess.prompted = true
	s.runs.Add(1)
	s.mu.Unlock()
	defer s.runs.Done()
	if req.Schema == nil && req.Sandbox == "" {
		defer func() {
			s.mu.Lock()
			sess.cancel = nil
			s.mu.Unlock()
		}()
		return s.promptLive(runCtx, p.SessionId, sess, req)
	}

	var u Updates
	fin := hub.Run(runCtx, req, func(ev events.Event) error {
		if s.cfg.Events != nil {
			s.cfg.Events(string(p.SessionId), ev)
		}
		for _, up := range u.Next(ev) {
			// Not the run's context: the updates of a cancelled run
			// still go out, up to its run.finished.
			if err := s.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: p.SessionId, Update: up}); err != nil {
				return fmt.Errorf("sending session/update: %v", err) // the client is gone: stop the run
			}
		}
		return nil
	}, s.cfg.Options...)

	s.mu.Lock()
	sess.cancel = nil
	if fin.SessionID != nil && *fin.SessionID != "" {
		sess.resume = *fin.SessionID
	}
	s.mu.Unlock()
	stop, rerr := Outcome(fin)
	if rerr != nil {
		return acp.PromptResponse{}, rerr
	}
	return acp.PromptResponse{StopReason: stop, Usage: usage(fin.Usage)}, nil
}

// promptLive sends the prompt as the next turn of the ACP session's agent
// (hub.NewSession, started at the session's first prompt): a follow-up
// prompt goes into the same process where the CLI can hold a session.
// session/cancel (runCtx's cancel) interrupts the turn and keeps the
// agent. An agent whose process ended since the last prompt (it crashed,
// or a limit stopped it) is started again, resuming the session, and the
// client is told so in the turn's first update.
func (s *server) promptLive(runCtx context.Context, id acp.SessionId, sess *session, req hub.Request) (acp.PromptResponse, error) {
	text := req.Prompt
	req.Prompt = ""
	s.mu.Lock()
	live := sess.live
	s.mu.Unlock()
	var restarted string
	for attempt := 0; ; attempt++ {
		if live == nil {
			opts := s.cfg.Options
			if s.cfg.ForwardApprovals {
				opts = append(slices.Clip(opts), hub.WithApprover(s.forward(id)))
			}
			l, err := hub.NewSession(s.base, req, opts...)
			if err != nil {
				e, ok := err.(*events.Error)
				if !ok {
					e = events.NewError(events.BinInternal, "", "report it", "%v", err)
				}
				stop, rerr := Outcome(events.RunFinished{Error: e})
				if rerr != nil {
					return acp.PromptResponse{}, rerr
				}
				return acp.PromptResponse{StopReason: stop}, nil
			}
			live = l
			s.mu.Lock()
			sess.live = l
			s.mu.Unlock()
		}
		tf, err := s.turn(runCtx, id, sess, live, text, restarted)
		if !errors.Is(err, hub.ErrSessionClosed) || attempt > 0 {
			if err != nil {
				return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
			}
			stop, rerr := Outcome(events.RunFinished{OK: tf.OK, Error: tf.Error, Text: tf.Text, Usage: tf.Usage, CostUSD: tf.CostUSD, CostSource: tf.CostSource})
			if rerr != nil {
				return acp.PromptResponse{}, rerr
			}
			return acp.PromptResponse{StopReason: stop, Usage: usage(tf.Usage)}, nil
		}
		// The agent's process ended since the last prompt: its
		// run.finished says why; start it again, resuming the session.
		fin := live.Close()
		if ev, ok := live.Finished(); ok && s.cfg.Events != nil {
			s.cfg.Events(string(id), ev)
		}
		why := "its process had ended"
		if fin.Error != nil {
			why = fmt.Sprintf("its process had ended (%s/%s: %s)", fin.Error.Bin, fin.Error.Reason, fin.Error.Message)
		}
		restarted = fmt.Sprintf("hub: the agent was started again, resuming its session: %s.\n", why)
		s.mu.Lock()
		if fin.SessionID != nil && *fin.SessionID != "" {
			sess.resume = *fin.SessionID
		}
		req.Resume = sess.resume
		sess.live = nil
		s.mu.Unlock()
		live = nil
		if runCtx.Err() != nil {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
	}
}

// turn runs one turn of live and streams its events as session/updates,
// notice first when the agent was restarted for it. It returns the turn's
// turn.finished, or Send's error (no turn ran).
func (s *server) turn(ctx context.Context, id acp.SessionId, sess *session, live *hub.Session, text, notice string) (events.TurnFinished, error) {
	var u Updates
	var tf *events.TurnFinished
	for ev, err := range live.Send(ctx, text) {
		if err != nil {
			return events.TurnFinished{}, err
		}
		if s.cfg.Events != nil {
			s.cfg.Events(string(id), ev)
		}
		switch b := ev.Body.(type) {
		case events.SessionStarted:
			s.mu.Lock()
			if b.SessionID != "" {
				sess.resume = b.SessionID
			}
			s.mu.Unlock()
		case events.TurnStarted:
			if notice != "" {
				_ = s.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: id, Update: acp.UpdateAgentMessageText(notice)})
			}
		case events.TurnFinished:
			tf = &b
		}
		for _, up := range u.Next(ev) {
			if err := s.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: id, Update: up}); err != nil {
				_ = live.Interrupt() // the client is gone
			}
		}
	}
	if tf == nil {
		return events.TurnFinished{}, fmt.Errorf("the turn ended without its turn.finished")
	}
	return *tf, nil
}

// Cancel stops the session's running run, if any: its prompt then answers
// stop reason cancelled once the run has ended.
func (s *server) Cancel(_ context.Context, p acp.CancelNotification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[p.SessionId]; sess != nil && sess.cancel != nil {
		sess.cancel(errCancelled)
	}
	return nil
}

// CloseSession stops the session's running run, if any, and forgets the
// session. An unknown session is invalid params.
func (s *server) CloseSession(_ context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[p.SessionId]
	if sess == nil {
		return acp.CloseSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown session %q", p.SessionId)})
	}
	if sess.cancel != nil {
		sess.cancel(errCancelled)
	}
	delete(s.sessions, p.SessionId)
	if l := sess.live; l != nil && !s.closed {
		// The agent's process goes with the session; Serve waits for it.
		s.runs.Add(1)
		go func() {
			defer s.runs.Done()
			l.Close()
			if ev, ok := l.Finished(); ok && s.cfg.Events != nil {
				s.cfg.Events(string(p.SessionId), ev)
			}
		}()
	}
	return acp.CloseSessionResponse{}, nil
}

// ListSessions is not offered (no sessionCapabilities.list).
func (s *server) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

// ResumeSession is not offered (no sessionCapabilities.resume).
func (s *server) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

// SetSessionConfigOption is not offered: hub's settings are its flags.
func (s *server) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

// SetSessionMode is not offered: hub has no modes.
func (s *server) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetMode)
}

// errCancelled is the cause of a run that session/cancel or session/close
// stopped.
var errCancelled = events.NewError(events.BinCancelled, events.ReasonCaller, "send the prompt again to go on",
	"the ACP client cancelled the prompt")

// promptText joins the prompt's text blocks with newlines. A resource
// link, which every ACP agent must take (an editor's mention of a file),
// becomes its URI as text, a file: URI its path: the agent reads it
// itself. Any other block (image, audio, embedded resource), or no text
// at all, is invalid params.
func promptText(blocks []acp.ContentBlock) (string, *acp.RequestError) {
	var parts []string
	for i, b := range blocks {
		kind := ""
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
			continue
		case b.ResourceLink != nil:
			uri := b.ResourceLink.Uri
			if u, err := url.Parse(uri); err == nil && u.Scheme == "file" && u.Path != "" {
				uri = u.Path
			}
			parts = append(parts, uri)
			continue
		case b.Image != nil:
			kind = "an image"
		case b.Audio != nil:
			kind = "audio"
		case b.Resource != nil:
			kind = "an embedded resource"
		default:
			kind = "of an unknown type"
		}
		return "", acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf(
			"prompt block %d is %s: hub acp takes text only (promptCapabilities)", i, kind)})
	}
	text := strings.Join(parts, "\n")
	if strings.TrimSpace(text) == "" {
		return "", acp.NewInvalidParams(map[string]any{"error": "the prompt has no text"})
	}
	return text, nil
}

// usage is a run's token totals as ACP's (UNSTABLE) prompt usage.
func usage(t events.Tokens) *acp.Usage {
	cacheRead, cacheWrite, thought := clampInt(t.CacheRead), clampInt(t.CacheWrite), clampInt(t.Reasoning)
	return &acp.Usage{
		InputTokens:       clampInt(t.Input),
		OutputTokens:      clampInt(t.Output),
		CachedReadTokens:  &cacheRead,
		CachedWriteTokens: &cacheWrite,
		ThoughtTokens:     &thought,
		TotalTokens:       clampInt(t.Sum()),
	}
}

// newSessionID is "hub_" and 16 random hex digits.
func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "hub_" + hex.EncodeToString(b[:])
}
