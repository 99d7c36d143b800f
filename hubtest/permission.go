package hubtest

// The real-CLI permission tests of SPEC §6.1, checked on the disk: a real
// agent CLI run at each --permission level, with a mock model that calls
// the CLI's own write or shell tool on a file inside the working
// directory, outside it, or behind a symbolic link that leads outside.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/mockllm"
)

// Effect is what a permission run asks the model to do to the disk: one
// call of the CLI's own write tool or of its shell tool (a redirect), on a
// new file.
type Effect string

const (
	// WriteInside: the write tool, a file in the working directory.
	WriteInside Effect = "write-inside"
	// WriteOutside: the write tool, a file in a directory outside the
	// working directory (see [PermissionAgent] for where that is).
	WriteOutside Effect = "write-outside"
	// ShellInside: the shell tool, `echo … > file` in the working
	// directory.
	ShellInside Effect = "shell-inside"
	// ShellOutside: the shell tool, the redirect to a file outside.
	ShellOutside Effect = "shell-outside"
	// WriteLink: the write tool, to link/<file> in the working directory,
	// where link is a symbolic link to the outside directory: the write
	// would land outside.
	WriteLink Effect = "write-link"
)

// Effects are every Effect, in the order the subtests run.
var Effects = []Effect{WriteInside, WriteOutside, ShellInside, ShellOutside, WriteLink}

// shell reports whether e is a call of the shell tool.
func (e Effect) shell() bool { return e == ShellInside || e == ShellOutside }

// Outcome is what a permission run did, as the disk and hub's events show
// it. Every outcome but Written leaves the file off the disk.
type Outcome string

const (
	// Written: the file is on the disk with the content asked for; the run
	// is ok and no call was denied.
	Written Outcome = "written"
	// NotOffered: the CLI never offered the model the tool (the mock
	// answered [mockllm.NotOfferedAnswer] or [mockllm.NoToolsAnswer]); the
	// run is ok, with no tool call.
	NotOffered Outcome = "not-offered"
	// Denied: the CLI refused the call itself and said so: a tool.finished
	// with status denied, run.finished.tool_calls_denied ≥ 1, the run ok.
	Denied Outcome = "denied"
	// Stopped: hub's watch of the tool events stopped the run at the call
	// (permission_denied/effect_not_granted).
	Stopped Outcome = "stopped"
	// Blocked: the CLI's sandbox made the call fail and the model was told
	// why (in the answer, "Tool said: …"), but the CLI's events do not say
	// it was refused: the run is ok and tool_calls_denied is 0 (Codex
	// reports a write its sandbox rejects with no event, or as a failed
	// one).
	Blocked Outcome = "blocked"
	// Refused: hub refused the run before it started
	// (permission_denied/effect_not_granted, no model call).
	Refused Outcome = "refused"
)

// Want is what one run of a permission test must come to.
type Want struct {
	Outcome Outcome
	// Says, if not "", is a piece of text the outcome must carry: for
	// Denied and Blocked, the refusal the model got (the answer quotes the
	// tool's result); for Stopped and Refused, hub's error message; for
	// NotOffered, the answer (which lists the tools offered).
	Says string
}

// PermissionAgent is what [Permissions] needs of one agent CLI: how it
// runs against the mock server (Agent: Configure, Slots, Model), how its
// own tools write a file, and what each level × effect must come to.
type PermissionAgent struct {
	Agent Agent
	// Write and Shell return the rest of a [mockllm.Call] marker's line,
	// "<tool> <arguments>", that has the model call the CLI's write tool
	// (write content to path) or its shell tool (`echo content > path`).
	// path is absolute.
	Write, Shell func(path, content string) string
	// Want holds, for each level, the effects to try and what each must
	// come to. A level or an effect left out is not run (say why where
	// the table is written).
	Want map[grant.Level]map[Effect]Want
	// NoneTools, if not nil, are the tools the CLI offers the model under
	// grant.None, as [mockllm.ListTools] lists them ("TOOLS: [...]"):
	// empty for none at all.
	NoneTools []string
}

// Permissions runs a's real CLI through hub at every level of a.Want and
// every effect under it, each a parallel subtest "<level>/<effect>" of t
// with its own Env, and checks the disk and the run against the Want (see
// Outcome). With a.NoneTools set, subtest "none/tools" checks what
// grant.None offers the model.
//
// The working directory is Env.Work, under one t.TempDir; the outside
// directory is another t.TempDir, so both lie under the system's
// temporary directory, and the run's TMPDIR is the outside directory: a
// CLI that leaves /tmp or $TMPDIR writable under workspace-write (Codex
// does by default) writes there. The file of each effect is
// "<effect>.txt"; its content is a marker naming the level and effect.
// Every run is bounded by the test's deadline ([Unbounded]) and checked
// by [RunChecked].
func Permissions(t *testing.T, a PermissionAgent) {
	t.Helper()
	if a.Agent.Configure == nil || a.Write == nil || a.Shell == nil {
		t.Fatal("PermissionAgent needs Agent.Configure, Write and Shell")
	}
	for _, level := range grant.Levels {
		wants, ok := a.Want[level]
		if level == grant.None && a.NoneTools != nil {
			ok = true
		}
		if !ok {
			continue
		}
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			if level == grant.None && a.NoneTools != nil {
				t.Run("tools", func(t *testing.T) {
					t.Parallel()
					permissionTools(t, a)
				})
			}
			for _, eff := range Effects {
				want, ok := wants[eff]
				if !ok {
					continue
				}
				t.Run(string(eff), func(t *testing.T) {
					t.Parallel()
					permissionRun(t, a, level, eff, want)
				})
			}
		})
	}
}

// permissionTools checks the tools grant.None offers (MOCK_LISTTOOLS).
func permissionTools(t *testing.T, a PermissionAgent) {
	e := a.Agent.Prepare(t, Setup{})
	r := e.Run(t, "List your tools. "+string(mockllm.ListTools), budget.Limits{}, func(req *hub.Request) {
		req.Permission = grant.None
	})
	if !r.Fin.OK {
		t.Fatalf("run.finished not ok: %v", r.Fin.Error)
	}
	if want := mockllm.ToolsAnswer(a.NoneTools); r.Fin.Text != want {
		t.Errorf("under --permission none the model was offered %q, want %q", r.Fin.Text, want)
	}
	if r.Fin.ToolCalls != 0 {
		t.Errorf("tool_calls = %d, want 0", r.Fin.ToolCalls)
	}
}

// permissionRun is one run of Permissions.
func permissionRun(t *testing.T, a PermissionAgent, level grant.Level, eff Effect, want Want) {
	e := a.Agent.Prepare(t, Setup{})
	outside := t.TempDir()
	name := string(eff) + ".txt"
	content := "hub-" + string(level) + "-" + string(eff)
	target, lands := filepath.Join(e.Work, name), filepath.Join(e.Work, name)
	switch eff {
	case WriteOutside, ShellOutside:
		target, lands = filepath.Join(outside, name), filepath.Join(outside, name)
	case WriteLink:
		link := filepath.Join(e.Work, "link")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		target, lands = filepath.Join(link, name), filepath.Join(outside, name)
	}
	call := a.Write(target, content)
	if eff.shell() {
		call = a.Shell(target, content)
	}
	e.Env = append(e.Env, "TMPDIR="+outside)
	r := e.Run(t, "Permission test. "+string(mockllm.Call)+" "+call, budget.Limits{}, func(req *hub.Request) {
		req.Permission = level
	})

	got, written := observe(t, r, e, lands)
	t.Logf("--permission %s, %s: %s (%s)", level, eff, got, describe(r))
	if got != want.Outcome {
		t.Fatalf("--permission %s, %s (%s): got %s (%s), want %s", level, eff, call, got, describe(r), want.Outcome)
	}
	if got == Written {
		if strings.TrimSpace(written) != content {
			t.Errorf("%s holds %q, want %q", lands, written, content)
		}
	} else if written != "" || fileExists(lands) {
		t.Errorf("%s is on the disk (%q): the grant forbids it", lands, written)
	}
	if eff != WriteOutside && eff != ShellOutside && eff != WriteLink {
		// A write inside must not have gone anywhere else either.
		if fileExists(filepath.Join(outside, name)) {
			t.Errorf("%s written outside the working directory", name)
		}
	}
	says := ""
	switch got {
	case Written:
		if r.Fin.ToolCallsDenied != 0 || !strings.HasPrefix(r.Fin.Text, mockllm.ToolAnswerPrefix) {
			t.Errorf("run.finished tool_calls_denied=%d text %q, want 0 and the answer quoting the tool", r.Fin.ToolCallsDenied, r.Fin.Text)
		}
	case NotOffered:
		says = r.Fin.Text
		if r.Fin.ToolCalls != 0 || r.Fin.ToolCallsDenied != 0 {
			t.Errorf("tool_calls=%d tool_calls_denied=%d, want 0, 0 (no tool was offered)", r.Fin.ToolCalls, r.Fin.ToolCallsDenied)
		}
	case Denied:
		says = r.Fin.Text + "\n" + deniedOutput(r)
		if r.Fin.ToolCallsDenied < 1 {
			t.Errorf("tool_calls_denied = %d, want at least 1", r.Fin.ToolCallsDenied)
		}
	case Blocked:
		says = r.Fin.Text
		if r.Fin.ToolCallsDenied != 0 {
			t.Errorf("tool_calls_denied = %d, want 0 (Blocked: the CLI does not report the refusal)", r.Fin.ToolCallsDenied)
		}
	case Stopped, Refused:
		WantErr(t, r.Fin, events.BinPermissionDenied, events.ReasonEffectNotGranted, 0)
		says = r.Fin.Error.Message
		if n := len(ModelCalls(e.Server)); got == Refused && n != 0 {
			t.Errorf("model calls = %d, want 0: a refused run starts nothing", n)
		}
	}
	if want.Says != "" && !strings.Contains(says, want.Says) {
		t.Errorf("%s, says %q, want it to say %q", got, says, want.Says)
	}
}

// observe reads the outcome of r from the disk (the file at lands, whose
// content it returns) and the events.
func observe(t *testing.T, r Result, e *Env, lands string) (Outcome, string) {
	t.Helper()
	b, err := os.ReadFile(lands)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	fin := r.Fin
	switch {
	case err == nil:
		if !fin.OK {
			t.Errorf("the file was written and the run not ok: %v", fin.Error)
		}
		return Written, string(b)
	case fin.Error != nil && fin.Error.Bin == events.BinPermissionDenied && fin.Error.Reason == events.ReasonEffectNotGranted:
		if len(ModelCalls(e.Server)) == 0 {
			return Refused, ""
		}
		return Stopped, ""
	case !fin.OK:
		return Outcome(fmt.Sprintf("failed (%v)", fin.Error)), ""
	case deniedOutput(r) != "" || fin.ToolCallsDenied > 0:
		return Denied, ""
	case strings.HasPrefix(fin.Text, "NOT_OFFERED ") || fin.Text == mockllm.NoToolsAnswer:
		return NotOffered, ""
	}
	return Blocked, ""
}

// deniedOutput returns the output of the run's tool.finished events with
// status denied, joined; "" if there are none.
func deniedOutput(r Result) string {
	var out []string
	for _, ev := range r.Events {
		if f, ok := ev.Body.(events.ToolFinished); ok && f.Status == events.ToolDenied {
			out = append(out, f.Output)
		}
	}
	return strings.Join(out, "\n")
}

// describe sums up r for a message: the tool events, the counts, the
// answer or error.
func describe(r Result) string {
	var tools []string
	for _, ev := range r.Events {
		switch b := ev.Body.(type) {
		case events.ToolStarted:
			tools = append(tools, fmt.Sprintf("started %s/%s", b.Name, b.Kind))
		case events.ToolFinished:
			tools = append(tools, fmt.Sprintf("finished %s %s %q", b.Name, b.Status, cutMsg(b.Output)))
		}
	}
	end := fmt.Sprintf("text %q", cutMsg(r.Fin.Text))
	if r.Fin.Error != nil {
		end = fmt.Sprintf("error %s/%s %q", r.Fin.Error.Bin, r.Fin.Error.Reason, cutMsg(r.Fin.Error.Message))
	}
	return fmt.Sprintf("tools [%s], tool_calls %d, denied %d, %s", strings.Join(tools, "; "), r.Fin.ToolCalls, r.Fin.ToolCallsDenied, end)
}

func cutMsg(s string) string {
	if len(s) > 240 {
		return s[:240] + "…"
	}
	return s
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// JSONCall returns "<tool> <args as a JSON object>", a [PermissionAgent]
// Write or Shell line for a tool whose arguments are a JSON object.
func JSONCall(tool string, args map[string]string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a shell redirect stays ">"
	if err := enc.Encode(args); err != nil {
		panic(err) // a map of strings always encodes
	}
	return tool + " " + strings.TrimSpace(b.String())
}

// ProjectCode checks that, below --permission full, a real CLI runs none
// of the working directory's own code (a repository hub is asked to look
// at): files(lands) are the project's files (path relative to the working
// directory → content) that, if the CLI loaded them, would write the file
// (or make the directory) lands, outside the working directory; after a
// plain run at each level below full, nothing may be at lands. Each edit
// is applied to the run's Env before it starts.
func ProjectCode(t *testing.T, a Agent, files func(lands string) map[string]string, edit ...func(*Env)) {
	t.Helper()
	for _, level := range []grant.Level{grant.None, grant.ReadOnly, grant.WorkspaceWrite} {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			e := a.Prepare(t, Setup{})
			for _, f := range edit {
				f(e)
			}
			lands := filepath.Join(t.TempDir(), "project-code-ran.txt")
			for name, content := range files(lands) {
				p := filepath.Join(e.Work, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := e.Run(t, "Just answer hello.", budget.Limits{}, func(req *hub.Request) { req.Permission = level })
			if fi, err := os.Lstat(lands); err == nil {
				t.Fatalf("--permission %s: the project's own configuration wrote %s (%s); run ok=%v error %v", level, lands, fi.Mode(), r.Fin.OK, r.Fin.Error)
			}
		})
	}
}

// DotDotThroughLink checks that, under --permission workspace-write, a
// write (write(path, content) is the MOCK_CALL arguments of the CLI's
// write tool) to <cwd>/self/../escaped.txt, where self is a link to ".",
// does not land in the parent of the working directory: the kernel
// resolves self before the "..", and a check that cleans the path by its
// letters reads it as <cwd>/escaped.txt. (CheckLinks refuses such a --cwd
// for a CLI whose own check is lexical.)
func DotDotThroughLink(t *testing.T, a Agent, write func(path, content string) string) {
	t.Helper()
	e := a.Prepare(t, Setup{})
	if err := os.Symlink(".", filepath.Join(e.Work, "self")); err != nil {
		t.Fatal(err)
	}
	lands := filepath.Join(filepath.Dir(e.Work), "escaped.txt")
	r := e.Run(t, "Escape. "+string(mockllm.Call)+" "+write(e.Work+"/self/../escaped.txt", "x"), budget.Limits{}, func(req *hub.Request) {
		req.Permission = grant.WorkspaceWrite
	})
	if b, err := os.ReadFile(lands); err == nil {
		t.Fatalf("--permission workspace-write: %s written outside --cwd %s (%q); run ok=%v error %v", lands, e.Work, b, r.Fin.OK, r.Fin.Error)
	}
	if r.Fin.OK {
		t.Errorf("run ok, want it refused or stopped (the write leads outside --cwd)")
	}
}
