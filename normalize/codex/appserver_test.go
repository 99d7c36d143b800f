package codex_test

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize/codex"
)

// turnResult is what one turn of a recorded app-server session decoded to.
type turnResult struct {
	bodies []events.Body
	ok     bool
	err    *events.Error
	text   string
}

// replayAppServer decodes a recorded `codex app-server` stdout as hub's
// session does: the responses to hub's requests left out, a decoder per
// turn, each going on from the last, a turn ending at its terminal event.
func replayAppServer(t *testing.T, name string) []turnResult {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "live", "codex", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []turnResult
	d := codex.NewAppServer(codex.Options{Model: "gpt-5.5"})
	var bodies []events.Body
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if r := gjson.ParseBytes(line); r.Get("id").Exists() && !r.Get("method").Exists() {
			continue
		}
		bodies = d.Decode(bodies, line)
		if d.Status().Terminal {
			o := d.Outcome(exit(0))
			out = append(out, turnResult{bodies: bodies, ok: o.OK, err: o.Error, text: o.Text})
			next := codex.NewAppServer(codex.Options{Model: "gpt-5.5"})
			next.Continue(d)
			d, bodies = next, nil
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAppServerThreeTurns: the recorded three-turn session (codex-cli
// 0.169.0 against mockllm) gives each turn's answer, the tool call of the
// second, streamed text, and each turn's own usage although Codex reports
// the thread's running total (1,000 input tokens of which 200 cached, and
// 50 output, per model call in the recording).
func TestAppServerThreeTurns(t *testing.T) {
	turns := replayAppServer(t, "three-turns.jsonl")
	if len(turns) != 3 {
		t.Fatalf("%d turns, want 3", len(turns))
	}
	wantCalls := []int64{1, 2, 1} // model calls per turn: the second runs a tool
	for i, tr := range turns {
		if !tr.ok || tr.text == "" {
			t.Errorf("turn %d: ok=%v text=%q error=%+v, want ok with an answer", i+1, tr.ok, tr.text, tr.err)
		}
		var in, outTok int64
		deltas := 0
		for _, b := range tr.bodies {
			switch b := b.(type) {
			case events.Usage:
				in += b.Step.Input
				outTok += b.Step.Output
			case events.TextDelta:
				deltas++
			case events.Notice:
				if b.Kind == events.NoticeUnknownEvent || b.Kind == events.NoticeParseError {
					t.Errorf("turn %d: notice %s: %s", i+1, b.Kind, b.Message)
				}
			}
		}
		if in != 800*wantCalls[i] || outTok != 50*wantCalls[i] {
			t.Errorf("turn %d: usage input %d output %d, want %d and %d (its own calls only)", i+1, in, outTok, 800*wantCalls[i], 50*wantCalls[i])
		}
		if deltas == 0 {
			t.Errorf("turn %d: no text.delta: the answer streams", i+1)
		}
	}
	if turns[0].text != "zero-prior" || turns[2].text != "two-prior" {
		t.Errorf("answers %q, %q: want zero-prior then two-prior (the mock saw two earlier answers)", turns[0].text, turns[2].text)
	}
	var started, finished int
	for _, b := range turns[1].bodies {
		switch b := b.(type) {
		case events.ToolStarted:
			started++
			if b.Kind != events.ToolShell {
				t.Errorf("tool kind %s, want shell", b.Kind)
			}
		case events.ToolFinished:
			finished++
			if b.Status != events.ToolOK || b.ExitCode == nil || *b.ExitCode != 0 || b.Output != "mock-tool-ok\n" {
				t.Errorf("tool.finished %+v, want ok, exit 0, its output", b)
			}
		}
	}
	if started != 1 || finished != 1 {
		t.Errorf("turn 2: %d tool.started, %d tool.finished, want 1 each", started, finished)
	}
}

// TestAppServerInterrupted: a turn that ends with status interrupted is
// cancelled/caller, and the next turn answers.
func TestAppServerInterrupted(t *testing.T) {
	turns := replayAppServer(t, "interrupt.jsonl")
	if len(turns) != 2 {
		t.Fatalf("%d turns, want 2", len(turns))
	}
	if e := turns[0].err; turns[0].ok || e == nil || e.Bin != events.BinCancelled || e.Reason != events.ReasonCaller {
		t.Errorf("interrupted turn: ok=%v error=%+v, want cancelled/caller", turns[0].ok, e)
	}
	if !turns[1].ok || turns[1].text == "" {
		t.Errorf("turn after the interrupt: ok=%v text=%q", turns[1].ok, turns[1].text)
	}
}

// TestAppServerFailedTurn: turn/completed with status failed is read as
// exec's turn.failed (its message classified), after the error
// notification that came before it; an item hub has no event for, and a
// notification it does not know, are told apart.
func TestAppServerFailedTurn(t *testing.T) {
	d := codex.NewAppServer(codex.Options{Model: "gpt-5.5"})
	var out []events.Body
	for _, l := range []string{
		`{"method":"turn/started","params":{"threadId":"t","turn":{"id":"u","status":"inProgress"}}}`,
		`{"method":"item/completed","params":{"item":{"type":"contextCompaction","id":"c1"}}}`,
		`{"method":"no/such/notification","params":{}}`,
		`{"method":"error","params":{"error":{"message":"Quota exceeded. Check your plan and billing details.","codexErrorInfo":"usageLimitExceeded"},"willRetry":false,"threadId":"t","turnId":"u"}}`,
		`{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","status":"failed","error":{"message":"Quota exceeded. Check your plan and billing details."}}}}`,
	} {
		out = d.Decode(out, []byte(l))
	}
	if !d.Status().Terminal {
		t.Fatal("turn/completed did not end the turn")
	}
	if n := notices(out, events.NoticeUnknownEvent); len(n) != 1 {
		t.Errorf("unknown-event notices %+v, want one (the unknown notification, not the compaction)", n)
	}
	o := d.Outcome(exit(0))
	if o.OK || o.Error == nil || o.Error.Bin != events.BinUnavailable || o.Error.Reason != events.ReasonQuota {
		t.Errorf("outcome %+v, want unavailable/quota", o.Error)
	}
}
