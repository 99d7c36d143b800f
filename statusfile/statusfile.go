// Package statusfile keeps a run's latest state in a file, for programs that
// watch a file rather than read a stream: a controller, a sidecar, a shell
// script (`hub run --status-file FILE`, and one file per request of hub
// batch). The file is rewritten atomically (a new file renamed over the old
// one, so a reader sees a whole state or the one before it), holds one JSON
// object, and ends as the run's run.finished event, the same object hub
// writes as the last line of --output jsonl.
//
// While the run goes, the object is a State: {"v":1, "type":"status",
// "run_id", "agent", "id" (hub batch's request id, when there is one),
// "seq" (the last event's), "updated" (RFC 3339, ms), "phase" (starting,
// running), "session_id", "turns", "tool_calls", "usage" (the running
// total: input/output/cache/reasoning tokens and cost_usd, null when
// unknown), "cost_source", "tool" (the tool call running now: call_id,
// name, kind, "since"; null when none)}. Readers tell the two apart by
// "type".
//
// It does not decide anything about the run, and does not write the
// event stream (that is --output's).
package statusfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hubcli/hub/events"
)

// Type is State's "type": what a reader sees before the run.finished.
const Type = "status"

// MinInterval is the least time between two rewrites while the run goes:
// text deltas and usage updates can come hundreds a second. A change of
// phase or of the running tool, and the run.finished, are written at once.
const MinInterval = 200 * time.Millisecond

// State is the file's object while the run goes (see the package doc).
type State struct {
	V          int               `json:"v"`
	Type       string            `json:"type"`
	RunID      string            `json:"run_id"`
	Agent      string            `json:"agent"`
	ID         string            `json:"id,omitempty"`
	Seq        int64             `json:"seq"`
	Updated    string            `json:"updated"`
	Phase      string            `json:"phase"`
	SessionID  *string           `json:"session_id"`
	Turns      int64             `json:"turns"`
	ToolCalls  int64             `json:"tool_calls"`
	Usage      events.Tokens     `json:"usage"`
	CostSource events.CostSource `json:"cost_source"`
	Tool       *Tool             `json:"tool"`
}

// Tool is the tool call running now.
type Tool struct {
	CallID string          `json:"call_id"`
	Name   string          `json:"name"`
	Kind   events.ToolKind `json:"kind"`
	Since  string          `json:"since"` // RFC 3339 with ms, when it started
}

// Writer keeps one run's status file. It is used by one goroutine at a
// time (a run's sink); Observe does the writing, on the caller's goroutine.
type Writer struct {
	path    string
	id      string
	st      State
	written time.Time // of the last rewrite
	dirty   bool      // a state not yet written
	err     error     // the first write error: later ones are not tried
}

// New returns a Writer for the file path; id, when not "", is the request
// id it carries (hub batch). It writes nothing until the first event.
func New(path, id string) *Writer {
	return &Writer{path: path, id: id, st: State{V: 1, Type: Type, ID: id, Phase: "starting", CostSource: events.CostUnknown}}
}

// Start writes the first state (phase starting, no run id yet), so that a
// file that cannot be written is found before the run starts. Its error is
// the write's.
func (w *Writer) Start() error {
	w.st.Updated = time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	w.err = w.write(w.st, false)
	return w.err
}

// Observe takes the run's next event and rewrites the file when it is due
// (see MinInterval): at run.finished always, and finally. It returns the
// first write error, after which the file is left as it was (the run goes
// on: the caller decides what a broken status file means to it).
func (w *Writer) Observe(ev events.Event) error {
	if w.err != nil {
		return w.err
	}
	st := &w.st
	st.RunID, st.Agent, st.Seq = ev.RunID, ev.Agent, ev.Seq
	st.Updated = ev.TS.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	now := false
	switch b := ev.Body.(type) {
	case events.RunFinished:
		w.err = w.write(ev, true)
		return w.err
	case events.RunStarted:
		st.Phase, now = "running", true
	case events.SessionStarted:
		st.SessionID, now = &b.SessionID, true
	case events.Usage:
		st.Usage, st.CostSource = b.Total, b.CostSource
		st.Turns++
	case events.ToolStarted:
		st.ToolCalls++
		st.Tool, now = &Tool{CallID: b.CallID, Name: b.Name, Kind: b.Kind, Since: st.Updated}, true
	case events.ToolFinished:
		if st.Tool != nil && st.Tool.CallID == b.CallID {
			st.Tool, now = nil, true
		}
	}
	w.dirty = true
	if now || time.Since(w.written) >= MinInterval {
		w.err = w.write(*st, false)
		w.dirty = false
	}
	return w.err
}

// Err returns the first write error, nil if none.
func (w *Writer) Err() error { return w.err }

// write replaces the file with v's JSON, atomically: a new file in the same
// directory, renamed over it (synced first when final).
func (w *Writer) write(v any, final bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("statusfile: %w", err)
	}
	b = append(b, '\n')
	w.written = time.Now()
	tmp, err := os.CreateTemp(filepath.Dir(w.path), "."+filepath.Base(w.path)+".*")
	if err != nil {
		return fmt.Errorf("statusfile: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil && final {
		err = tmp.Sync()
	}
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), w.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("statusfile: %w", err)
	}
	return nil
}
