// Package realcli is test support for running the real agent CLIs (installed
// by scripts/install-agents.sh into .tools/npm) against internal/mockllm:
// finding the binaries, giving every run its own HOME and XDG directories,
// and finding processes a run left behind.
package realcli

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/mockllm"
	"github.com/hubcli/hub/internal/schematest"
	"github.com/hubcli/hub/normalize"
)

// RequireEnv names the variable that turns a missing real CLI from a skip
// into a failure. scripts/test.sh (and so CI) sets it after installing them.
const RequireEnv = "HUB_REQUIRE_REAL_CLIS"

// Root returns the repository root (the directory holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Bin returns the path of the real CLI name: $HUB_<NAME>_BIN if set, else
// .tools/npm/node_modules/.bin/<name>. When it is missing the test is
// skipped with the command that installs it, or fails if RequireEnv is set.
func Bin(t testing.TB, name string) string {
	t.Helper()
	env := "HUB_" + upper(name) + "_BIN"
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(Root(), ".tools", "npm", "node_modules", ".bin", name)
	}
	if _, err := os.Stat(path); err != nil {
		msg := "real " + name + " CLI not found at " + path + ": run `bash scripts/install-agents.sh " + name + "` (or set " + env + ")"
		if os.Getenv(RequireEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// Home makes a fresh home for one run of a real CLI: HOME and the XDG
// directories under one temporary directory. It returns that directory and
// the environment entries to pass to the agent. The directory path is unique
// and appears in every process of the run's environment (see Leftovers).
func Home(t testing.TB) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	env = []string{"HOME=" + filepath.Join(dir, "home")}
	for _, x := range []string{"CONFIG", "DATA", "CACHE", "STATE"} {
		env = append(env, "XDG_"+x+"_HOME="+filepath.Join(dir, "xdg", upper(x)))
	}
	for _, e := range env {
		_, p, _ := bytes.Cut([]byte(e), []byte("="))
		if err := os.MkdirAll(string(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, env
}

// Leftovers returns the pids of live processes (not zombies) whose
// environment contains marker, for example "HOME=<dir>" from Home. A run
// whose agent and tools are all gone has none.
func Leftovers(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(marker)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// ModelCalls returns the model calls the mock server received (requests it
// parsed into a scenario), leaving out probes such as count_tokens.
func ModelCalls(s *mockllm.Server) []mockllm.Request {
	var out []mockllm.Request
	for _, r := range s.Requests() {
		if r.Scenario != "" {
			out = append(out, r)
		}
	}
	return out
}

// WantErr fails t unless fin is a failure with bin/reason, the retryable
// flag SPEC §4 gives them, a hint, and (when status is not 0) that HTTP
// status.
func WantErr(t testing.TB, fin events.RunFinished, bin events.Bin, reason events.Reason, status int) {
	t.Helper()
	e := fin.Error
	if fin.OK || e == nil {
		t.Fatalf("run.finished ok, want %s/%s", bin, reason)
	}
	if e.Bin != bin || e.Reason != reason {
		t.Fatalf("error = %s/%s (%s), want %s/%s", e.Bin, e.Reason, e.Message, bin, reason)
	}
	if e.Retryable != events.Retryable(bin, reason) || e.Hint == "" {
		t.Errorf("error retryable=%v hint=%q, want %v and a hint", e.Retryable, e.Hint, events.Retryable(bin, reason))
	}
	if status != 0 && (e.HTTPStatus == nil || *e.HTTPStatus != status) {
		t.Errorf("http_status = %v, want %d", e.HTTPStatus, status)
	}
}

// Result is one run of a real CLI through hub.
type Result struct {
	Fin    events.RunFinished
	Events []events.Event
	Took   time.Duration
}

// Run runs req through adapters.Run and checks what every run must keep: a
// valid event stream with one run.finished, last, and no live process whose
// environment names dir (the run's home from Home). The stream is logged
// when the test fails or runs with -v.
func Run(t *testing.T, req adapters.Request, dir string) Result {
	t.Helper()
	var res Result
	var stream bytes.Buffer
	enc := events.NewEncoder(&stream)
	start := time.Now()
	res.Fin = adapters.Run(t.Context(), req, func(ev events.Event) error {
		res.Events = append(res.Events, ev)
		return enc.Encode(ev)
	})
	res.Took = time.Since(start)
	if err := schematest.ValidateStream(stream.Bytes()); err != nil {
		t.Errorf("event stream invalid: %v", err)
	}
	if left := Leftovers(dir); len(left) > 0 {
		t.Errorf("processes of the run still alive after Run returned: %v", left)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("events:\n%s", stream.Bytes())
	}
	return res
}

// Tool returns the run's last tool.started and tool.finished, nil if none.
func (r Result) Tool() (*events.ToolStarted, *events.ToolFinished) {
	var started *events.ToolStarted
	var finished *events.ToolFinished
	for _, ev := range r.Events {
		switch b := ev.Body.(type) {
		case events.ToolStarted:
			started = &b
		case events.ToolFinished:
			finished = &b
		}
	}
	return started, finished
}

// FirstUserText is the first model call's user text, for messages.
func FirstUserText(calls []mockllm.Request) string {
	if len(calls) == 0 {
		return "(no call)"
	}
	return calls[0].UserText
}

// Prices is a mock model's price in USD per million tokens, as a test writes
// it into an agent's own config (OpenCode's provider config, pi's
// models.json), so that the cost the agent reports can be checked by hand.
type Prices struct{ In, Out, CacheRead, CacheWrite float64 }

// MockPrices are the prices the real-CLI tests configure for "mock-model".
var MockPrices = Prices{In: 3, Out: 15, CacheRead: 0.3, CacheWrite: 3.75}

// Cost is what p makes of the token counts, in USD.
func (p Prices) Cost(in, out, cacheRead, cacheWrite int64) float64 {
	return (float64(in)*p.In + float64(out)*p.Out + float64(cacheRead)*p.CacheRead + float64(cacheWrite)*p.CacheWrite) / 1e6
}

// CheckReportedUsage fails t unless got has these input (cache excluded),
// output and cache-read tokens, no cache writes, and a cost equal to p
// applied to them.
func CheckReportedUsage(t testing.TB, got events.Tokens, p Prices, in, out, cacheRead int64) {
	t.Helper()
	if got.Input != in || got.Output != out || got.CacheRead != cacheRead || got.CacheWrite != 0 {
		t.Errorf("usage = in %d out %d cache read %d write %d, want %d %d %d 0", got.Input, got.Output, got.CacheRead, got.CacheWrite, in, out, cacheRead)
	}
	want := p.Cost(in, out, cacheRead, 0)
	if got.CostUSD == nil || math.Abs(*got.CostUSD-want) > 1e-9 {
		t.Errorf("cost = %v, want %.6f", got.CostUSD, want)
	}
}

// CheckFinalAnswer checks a real run of [mockllm.ToolLoop] stopped by
// --max-tool-steps 2 and resumed for a final answer (SPEC §5): the bin is
// budget_exceeded/tool_steps, the third tool call was the last one, the text
// is the mock model's [mockllm.LoopAnswer] marked partial, the session id is
// kept, and the last model call carried adapters.FinalAnswerPrompt in its
// last user text (byte for byte, though the CLI may add context around it)
// and still offered tools (the mock server, as the Anthropic API does,
// refuses a tool history without tools).
func CheckFinalAnswer(t testing.TB, fin events.RunFinished, srv *mockllm.Server) {
	t.Helper()
	WantErr(t, fin, events.BinBudgetExceeded, events.ReasonToolSteps, 0)
	if !fin.Partial || fin.Text != mockllm.LoopAnswer {
		t.Errorf("run.finished partial=%v text=%q, want the resume's answer %q marked partial (error: %v)", fin.Partial, fin.Text, mockllm.LoopAnswer, fin.Error)
	}
	if fin.ToolCalls != 3 {
		t.Errorf("tool_calls = %d, want 3 (the crossing call is the last)", fin.ToolCalls)
	}
	if fin.SessionID == nil || *fin.SessionID == "" {
		t.Errorf("session_id = %v, want the resumed session", fin.SessionID)
	}
	calls := ModelCalls(srv)
	if len(calls) == 0 {
		t.Fatal("no model calls")
	}
	last := calls[len(calls)-1]
	if !strings.Contains(last.LastUserText, adapters.FinalAnswerPrompt) {
		t.Errorf("last model call's user text = %q, want the final-answer prompt", normalize.Shorten(last.LastUserText, 300))
	}
	if len(last.Tools) == 0 {
		t.Errorf("last model call offered no tools, want them kept")
	}
}
