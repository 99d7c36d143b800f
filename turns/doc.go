// Package turns runs a hub.Session from a stream of inputs — prompts,
// interrupts and the input's end — and hands every event of the session to
// one sink, in order: the engine of the CLI's `hub run --session-in` and
// `hub chat`. A Conversation queues the prompts it is given and sends them
// as turns one after another; Reader reads the session's JSONL input
// ({"prompt":"…"} and {"interrupt":true}, one a line).
//
// It owns the session's lifetime as those commands need it: a session that
// cannot start is still reported as a run (a run.started, then a
// run.finished with the reason, as hub.Run reports a run refused before its
// agent started), a bad input line ends the session with
// invalid_input/bad_request naming the line, and the session's events that
// no turn returned (hub.Session.Unread) are handed over at the end, so that
// the sink sees the whole stream, run.finished last. It does not care
// whether the session is live or held by resuming.
//
// It owns no terminal, flags or rendering: cmd/hub reads the keys or the
// file and renders the events.
package turns
