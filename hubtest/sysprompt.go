package hubtest

// The real-CLI tests of a run's system prompt (issue 37 item 1):
// Request.SystemPrompt and Request.AppendSystemPrompt, checked at the
// model (mockllm.Request.System), one-shot and in a live session.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/mockllm"
)

// The texts of the system prompt tests.
const (
	sysReplace = "HUB-SYSTEM-REPLACE-7Q2 You answer in one word."
	sysAppend  = "HUB-SYSTEM-APPEND-K9X Mind the house style."
	sysPrompt  = "say hi (system prompt test)"
)

// sysBig is an appended text of 200 KiB: over Linux's 128 KiB limit of one
// argv string or one environment variable, so it reaches the model only
// through a file. Its first and last lines are markers.
var sysBig = "HUB-BIG-HEAD\n" + strings.Repeat("lorem ipsum dolor sit amet, hub system prompt filler line\n", 200<<10/58) + "HUB-BIG-TAIL"

// SystemPrompts runs a's CLI with a replaced and an appended system prompt
// and checks, in every model call that carried the run's prompt, that the
// model got them, and that a replaced prompt took the place of the CLI's
// own (a.DefaultSystem, a phrase of it, is gone; kept when only appending):
//
//   - Replace: SystemPrompt alone;
//   - AppendPath: AppendSystemPrompt alone, a text that is the path of an
//     existing file (pi reads such a value as the file): the model gets
//     the path, not the file's text;
//   - Both: SystemPrompt and a 200 KiB AppendSystemPrompt (no argv or
//     environment limit);
//   - Session: both, in a live session of two turns, each turn's calls
//     carrying them.
//
// After each run, the files hub wrote for the CLI (a hub-prompt- directory
// named in run.started's argv) are gone.
func SystemPrompts(t *testing.T, a Agent) {
	if a.DefaultSystem == "" {
		t.Fatal("hubtest.Agent.DefaultSystem is not set: a phrase of the CLI's own system prompt")
	}
	check := func(t *testing.T, calls []mockllm.Request, want []string, defaultKept bool) {
		t.Helper()
		n := 0
		for _, c := range calls {
			if !strings.Contains(strings.Join(c.UserTexts, "\n"), sysPrompt) {
				continue // a call of the CLI's own (a title, a probe)
			}
			n++
			for _, w := range want {
				if !strings.Contains(c.System, w) {
					t.Errorf("model call %d: System does not hold %.60q; System = %.2000q", n, w, c.System)
				}
			}
			if got := strings.Contains(c.System, a.DefaultSystem); got != defaultKept {
				t.Errorf("model call %d: System holds the CLI's own prompt (%q) = %v, want %v; System = %.2000q", n, a.DefaultSystem, got, defaultKept, c.System)
			}
		}
		if n == 0 {
			t.Errorf("no model call carried the prompt %q: %d calls", sysPrompt, len(calls))
		}
	}
	run := func(t *testing.T, edit func(*hub.Request)) (Result, *Env) {
		e := a.Prepare(t, Setup{})
		r := e.Run(t, sysPrompt, budget.Limits{}, edit)
		a.WantOK(t, r, mockllm.TextAnswer)
		wantRemoved(t, r.Events)
		return r, e
	}
	t.Run("Replace", func(t *testing.T) {
		t.Parallel()
		_, e := run(t, func(r *hub.Request) { r.SystemPrompt = sysReplace })
		check(t, ModelCalls(e.Server), []string{sysReplace}, false)
	})
	t.Run("AppendPath", func(t *testing.T) {
		t.Parallel()
		e := a.Prepare(t, Setup{})
		path := e.Write(t, "work/instructions.md", "HUB-FILE-CONTENT-NOT-SENT")
		r := e.Run(t, sysPrompt, budget.Limits{}, func(r *hub.Request) { r.AppendSystemPrompt = path })
		a.WantOK(t, r, mockllm.TextAnswer)
		wantRemoved(t, r.Events)
		calls := ModelCalls(e.Server)
		check(t, calls, []string{path}, true)
		for _, c := range calls {
			if strings.Contains(c.System, "HUB-FILE-CONTENT-NOT-SENT") {
				t.Errorf("the model got the text of the file the appended prompt names: read as a path")
			}
		}
	})
	t.Run("Both", func(t *testing.T) {
		t.Parallel()
		_, e := run(t, func(r *hub.Request) { r.SystemPrompt, r.AppendSystemPrompt = sysReplace, sysBig })
		check(t, ModelCalls(e.Server), []string{sysReplace, "HUB-BIG-HEAD", "HUB-BIG-TAIL", sysBig[len(sysBig)-4096:]}, false)
	})
	t.Run("Session", func(t *testing.T) {
		t.Parallel()
		b := a
		b.Session = func(r *hub.Request) {
			if a.Session != nil {
				a.Session(r)
			}
			r.SystemPrompt, r.AppendSystemPrompt = sysReplace, sysAppend
		}
		e := b.Prepare(t, Setup{})
		s := e.StartSession(t, budget.Limits{})
		for i := range 2 {
			if tf := s.Turn(sysPrompt, nil); tf.Error != nil {
				t.Fatalf("turn %d: %+v", i+1, tf.Error)
			}
		}
		s.Close()
		wantRemoved(t, s.Events)
		calls := ModelCalls(e.Server)
		check(t, calls, []string{sysReplace, sysAppend}, false)
		if len(calls) < 2 {
			t.Errorf("a session of two turns made %d model calls", len(calls))
		}
	})
}

// promptDir is a directory of hub's system prompt files in an argument.
var promptDir = regexp.MustCompile(`/[^=\s"]*/hub-prompt-[0-9]+`)

// wantRemoved fails t when a directory of hub's system prompt files that
// run.started's argv names is still there.
func wantRemoved(t *testing.T, evs []events.Event) {
	t.Helper()
	for _, ev := range evs {
		rs, ok := ev.Body.(events.RunStarted)
		if !ok {
			continue
		}
		for _, arg := range rs.Argv {
			for _, dir := range promptDir.FindAllString(arg, -1) {
				if _, err := os.Stat(filepath.Clean(dir)); err == nil {
					t.Errorf("%s, hub's system prompt files of the run, is still there after it", dir)
				}
			}
		}
	}
}
