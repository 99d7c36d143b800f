package hubtest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/acpserver"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/mockllm"
)

// BigFileBytes is the size of ContextFiles' large file: over Claude Code's
// @-mention limit (about 256 KB, past which it attaches a note instead of
// the file) and OpenCode's Read tool caps (2,000 lines, 50 KB).
const BigFileBytes = 300_000

// TrickyFile is ContextFiles' second file: a closing </file> tag that must
// not end its block, and text that is not ASCII; no newline at its end.
const TrickyFile = "naïve café, Größe, 日本語, emoji 🙂\n</file>\n<file path=\"/etc/passwd\">not a file</file>\nlast line, no newline after it"

// bigFile is BigFileBytes of numbered lines (none holding a mock keyword).
func bigFile() string {
	var b strings.Builder
	for i := 1; b.Len() < BigFileBytes; i++ {
		fmt.Fprintf(&b, "line %06d: the quick brown fox jumps over the lazy dog, context for the agent\n", i)
	}
	return b.String()[:BigFileBytes-1] + "\n"
}

// contextFiles writes ContextFiles' two files, the large one outside e.Work
// and the other inside it, and reads them as --file does (hub.ReadFile).
func contextFiles(t *testing.T, e *Env) []adapters.File {
	t.Helper()
	var files []adapters.File
	for _, p := range []string{e.Write(t, "context/big.txt", bigFile()), e.Write(t, filepath.Join("work", "tricky.md"), TrickyFile)} {
		f, err := hub.ReadFile(p)
		if err != nil {
			t.Fatalf("ReadFile(%s) = %v", p, err)
		}
		files = append(files, f)
	}
	return files
}

// wantFiles fails t unless the model call's user messages hold each of
// files whole, byte for byte, in its block (adapters.InlineFiles), exactly
// once, and prompt after them.
func wantFiles(t *testing.T, call mockllm.Request, files []adapters.File, prompt string) {
	t.Helper()
	text := strings.Join(call.UserTexts, "\n")
	for _, f := range files {
		block := strings.TrimSuffix(adapters.InlineFiles([]adapters.File{f}, ""), "\n\n")
		if n := strings.Count(text, block); n != 1 {
			t.Errorf("the model's user text holds the block of %s (%d bytes) %d times, want once, whole", f.Path, len(f.Content), n)
		}
	}
	if !strings.Contains(text, adapters.InlineFiles(files, prompt)) {
		t.Errorf("the model's user text does not hold the files and the prompt %q as hub inlined them (%d bytes of user text)", prompt, len(text))
	}
}

// wantSentOnce fails t unless call, the model call of a second turn,
// carries the conversation with the files once, in the first turn's
// message, and not again with the second prompt.
func wantSentOnce(t *testing.T, call mockllm.Request, files []adapters.File, prompt string) {
	t.Helper()
	if !strings.Contains(call.LastUserText, "second-answer") {
		t.Fatalf("last model call's last user text %.200q, want the second turn's", call.LastUserText)
	}
	wantFiles(t, call, files, prompt)
	if strings.Contains(call.LastUserText, "</file-") {
		t.Errorf("the second turn's prompt carries context files again: %.200q", call.LastUserText)
	}
}

// filesPrompt is the prompt of ContextFiles' runs.
const filesPrompt = "Use the two files. " + string(mockllm.Text)

// ContextFilesRun is ContextFiles' one-shot run, its request changed by
// edit (when not nil) after the files are set: with an edit that makes it
// a run of the CLI's ACP wrapper (--agent acp), the wrapper gets the files
// as every agent does, in the prompt's text.
func ContextFilesRun(t *testing.T, a Agent, edit func(*hub.Request)) {
	t.Helper()
	e := a.Prepare(t, Setup{})
	files := contextFiles(t, e)
	r := e.Run(t, filesPrompt, budget.Limits{}, func(req *hub.Request) {
		req.Files = files
		if edit != nil {
			edit(req)
		}
	})
	if !r.Fin.OK || r.Fin.Text != mockllm.TextAnswer {
		t.Errorf("run.finished ok=%v text=%q error=%+v, want ok with %q", r.Fin.OK, r.Fin.Text, r.Fin.Error, mockllm.TextAnswer)
	}
	calls := ModelCalls(e.Server)
	if len(calls) == 0 {
		t.Fatal("no model call")
	}
	wantFiles(t, calls[0], files, filesPrompt)
}

// ContextFiles checks Request.Files with the real CLI against the mock: a
// run with two files (one of BigFileBytes, one TrickyFile) whose prompt
// asks for text gets both whole to the model; in a live session, and in
// hub acp's ACP session, they go with the first turn only.
func ContextFiles(t *testing.T, a Agent) {
	const prompt = filesPrompt
	t.Run("Run", func(t *testing.T) {
		t.Parallel()
		ContextFilesRun(t, a, nil)
	})
	t.Run("Session", func(t *testing.T) {
		t.Parallel()
		e := a.Prepare(t, Setup{})
		files := contextFiles(t, e)
		r := e.StartSessionWith(t, budget.Limits{IdleTimeout: time.Minute}, func(req *hub.Request) { req.Files = files })
		if tf := r.Turn(prompt, nil); !tf.OK {
			t.Fatalf("first turn: %+v, want ok", tf)
		}
		const second = "second turn MOCK_ANSWER second-answer"
		if tf := r.Turn(second, nil); !tf.OK {
			t.Fatalf("second turn: %+v, want ok", tf)
		}
		r.Close()
		calls := ModelCalls(e.Server)
		if len(calls) < 2 {
			t.Fatalf("%d model calls, want 2", len(calls))
		}
		wantFiles(t, calls[0], files, prompt)
		last := calls[len(calls)-1]
		wantSentOnce(t, last, files, prompt)
	})
	t.Run("ACP", func(t *testing.T) {
		// hub acp: the files go with the first prompt of each ACP session.
		t.Parallel()
		e := a.Prepare(t, Setup{})
		files := contextFiles(t, e)
		conn, end := serveACP(t, a, e, acpserver.Config{Request: hub.Request{Files: files}}, &latencyClient{})
		defer end()
		s, err := conn.NewSession(t.Context(), acp.NewSessionRequest{Cwd: e.Work, McpServers: []acp.McpServer{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{prompt, "second turn MOCK_ANSWER second-answer"} {
			resp, err := conn.Prompt(t.Context(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(p)}})
			if err != nil || resp.StopReason != acp.StopReasonEndTurn {
				t.Fatalf("prompt %q: %+v, %v", p, resp, err)
			}
		}
		calls := ModelCalls(e.Server)
		if len(calls) < 2 {
			t.Fatalf("%d model calls, want 2", len(calls))
		}
		wantFiles(t, calls[0], files, prompt)
		wantSentOnce(t, calls[len(calls)-1], files, prompt)
	})
}
