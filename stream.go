package hub

import (
	"errors"
	"io"
	"time"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/framer"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/redact"
)

// stream turns what an agent wrote into a run's events: it triages framed
// stdout lines (clean JSON, JSON after cleaning, damaged, over the cap),
// decodes them, and sends every event through the same steps — sanitize,
// meter, notice caps, redact, sequence — to the sink, then past the run's
// guards. Run and Replay share it, and one run's attempts (the final-answer
// resume) share one stream. Events that do not come from JSON lines (a
// transport with its own framing) enter through publish.
//
// A stream is used by one goroutine at a time.
type stream struct {
	agent string
	runID string
	clock func() time.Time
	sink  Sink

	seq       int64
	sinkErr   error           // the sink's first error: from then on only run.finished is sent
	secrets   redact.Redactor // credential values to redact, of the current attempt's environment
	notices   notices         // counts of the notices that can flood (see flood.go)
	meter     budget.Meter
	denied    int64            // tool.finished events with status denied
	approvals events.Approvals // the approval.decided events' counts

	dec     normalize.Decoder
	ix      normalize.Index // of the line being decoded, for an Indexed decoder
	maxLine int
	guards  []Guard
	over    *events.Error // the first guard's cause: nothing more is forwarded
	overBy  Guard         // the guard that returned it
	bodies  []events.Body // scratch for one line's events
	pieces  [][]byte      // scratch for the pieces of an unclean line
}

func newStream(agent string, o options, sink Sink) *stream {
	return &stream{agent: agent, runID: o.runID, clock: o.clock, sink: sink}
}

// attempt makes the stream decode the output of one agent process with dec,
// redacting the values of env, stopping at the first of guards.
func (s *stream) attempt(dec normalize.Decoder, maxLine int, env []string, guards []Guard) {
	s.flush()
	s.dec, s.guards, s.over, s.overBy = dec, guards, nil, nil
	s.ix.Reset()
	if x, ok := dec.(normalize.Indexed); ok {
		x.UseIndex(&s.ix)
	}
	s.secrets = redact.New(env)
	s.maxLine = maxLine
	if s.maxLine <= 0 {
		s.maxLine = DefaultMaxLine
	}
}

// emit sends one event of hub's own or of the agent's. After a sink error
// only run.finished is still sent.
func (s *stream) emit(b events.Body) {
	b = s.meter.Observe(sanitize(b))
	switch v := b.(type) {
	case events.ToolFinished:
		if v.Status == events.ToolDenied {
			s.denied++
		}
	case events.ApprovalDecided:
		s.approvals.Count(v)
	}
	if _, last := b.(events.RunFinished); s.sinkErr != nil && !last {
		return
	}
	switch v := b.(type) {
	case events.Notice:
		if !s.notices.keep(v) {
			return
		}
	case events.RunFinished:
		for _, n := range s.notices.summary() {
			s.send(n)
		}
	}
	// Text deltas are redacted as one text (see secrets.delta): what they
	// hold back goes out before the next event that ends the text. Notices
	// and usage can come between two deltas of one text (a stray line, a
	// usage update): they do not end it, so a credential streamed across
	// them is held back whole.
	switch b.(type) {
	case events.TextDelta:
		d := b.(events.TextDelta)
		if d.Text = s.secrets.Delta(d.Text); d.Text != "" {
			s.send(d)
		}
		return
	case events.Notice, events.Usage:
	default:
		s.flush()
	}
	s.send(s.secrets.Body(b))
}

// flush sends what the redaction of text deltas holds back.
func (s *stream) flush() {
	if held := s.secrets.Flush(); held != "" {
		s.send(events.TextDelta{Text: held})
	}
}

// send stamps one redacted event and gives it to the sink.
func (s *stream) send(b events.Body) {
	ev := events.Event{Seq: s.seq, TS: s.clock(), RunID: s.runID, Agent: s.agent, Body: b}
	s.seq++
	if err := s.sink(ev); err != nil && s.sinkErr == nil {
		s.sinkErr = err
	}
}

// halted reports whether a guard stopped the stream.
func (s *stream) halted() bool { return s.over != nil }

// line handles one framed stdout line: notices for over-long and non-JSON
// lines (see damage.go); the decoder for the rest, for the head of an
// over-long line that the decoder can read (normalize.HeadDecoder), for
// each record of a line that holds several (see unclean) and for an event
// recovered from a damaged line. The decoded events are published.
func (s *stream) line(l framer.Line) {
	if l.TooLong {
		// A terminal event can be the giant line: the decoder may still
		// read it from the line's head.
		decoded := false
		if hd, ok := s.dec.(normalize.HeadDecoder); ok {
			s.ix.Reset()
			s.bodies, decoded = hd.DecodeHead(s.bodies[:0], l.Bytes, l.Size)
		}
		s.emit(tooLongNotice(l, s.maxLine, decoded))
		if decoded {
			s.publish(s.bodies)
		}
		return
	}
	b := l.Bytes
	if len(b) == 0 {
		return
	}
	if b[0] != '{' || !s.ix.Valid(b) {
		s.unclean(b)
		return
	}
	// The hot path, as decode does it (not inlined: a call per line).
	s.bodies = s.dec.Decode(s.bodies[:0], b)
	s.publish(s.bodies)
}

// decode decodes one JSON line, b, and publishes its events. s.ix must be
// of b (s.ix.Valid(b)) or reset.
func (s *stream) decode(b []byte) {
	s.bodies = s.dec.Decode(s.bodies[:0], b)
	s.publish(s.bodies)
}

// unclean handles a line that is not JSON as it is (the slow path: a
// clean line never comes here). It is taken apart where a terminal would
// write over it (normalize.Pieces: at a bare "\r", an erase-line, a move to
// column 1), each piece cleaned of escapes and spaces:
//
//   - a piece that starts with '{', and the piece a terminal would show
//     (what normalize.Clean keeps), is a record of its own: decoded when it
//     is JSON, else reported (damagedLine: non_json_output, or parse_error
//     for a damaged '{' piece, which may recover an event written into
//     it). So records that a stream separates with a bare "\r" instead of
//     "\n" are all decoded, in order, not only the last (which is what a
//     terminal shows, and all hub kept before);
//   - the other pieces, written over before the one shown (spinner
//     frames), are dropped, as a terminal drops them.
//
// A guard that stops the run at one piece's event stops the line there.
func (s *stream) unclean(b []byte) {
	pieces, shown := normalize.Pieces(s.pieces[:0], b)
	for i, p := range pieces {
		if s.halted() {
			break
		}
		switch record := p[0] == '{' || i == shown; {
		case record && s.ix.Valid(p):
			s.decode(p)
		case record:
			n, event := damagedLine(p)
			s.emit(n)
			if event != nil {
				s.ix.Reset() // event was not checked with s.ix
				s.decode(event)
			}
		}
	}
	clear(pieces) // they point into the line's buffer
	s.pieces = pieces[:0]
}

// publish forwards the agent's events, in order, each past the guards: the
// event at which a guard returns a cause is the last one forwarded (see
// Guard), but for a live session's turn.finished after it, which is
// forwarded all the same (failed with the guard's cause if it was ok): the
// line that ends a turn can carry the event that crosses a limit (an ACP
// agent's prompt answer holds the turn's usage), and the turn's reader
// waits for its turn.finished. It is the entry for events that do not come
// from JSON lines.
func (s *stream) publish(bodies []events.Body) {
	bodies = s.meter.Price(bodies) // the costs the agent does not report
	for i, b := range bodies {
		if s.over != nil {
			for _, rest := range bodies[i:] {
				if tf, ok := rest.(events.TurnFinished); ok {
					if tf.OK {
						tf.OK, tf.Error = false, s.over
					}
					s.emit(tf)
				}
			}
			return
		}
		s.emit(b)
		for _, g := range s.guards {
			if e := g.Check(b); e != nil {
				s.over, s.overBy = e, g
				break
			}
		}
	}
}

// readAll frames r and handles every line until r ends or a guard stops the
// stream (replay); a read error other than io.EOF is a parse_error notice.
func (s *stream) readAll(r io.Reader, stop func() bool) {
	fr := framer.New(r, s.maxLine)
	for !s.halted() && s.sinkErr == nil && !stop() {
		l, err := fr.Next()
		if stop() {
			// Stopped while waiting: the error is the stop's, and a
			// last line may be a part cut by it.
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.emit(events.Notice{Kind: events.NoticeParseError, Message: "reading transcript: " + err.Error()})
			}
			return
		}
		s.line(l)
	}
}
