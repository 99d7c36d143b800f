package hubtest

// Running the real agent CLIs (installed by scripts/install-agents.sh into
// .tools/npm) against package mockllm: finding the binaries, giving every
// run its own HOME and XDG directories, running it through hub.Run
// with the checks every run must pass, and the checks several tests share.

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest/benchgen"
	"github.com/hubcli/hub/mockllm"
	"github.com/hubcli/hub/normalize"
)

// RequireEnv names the variable that turns a missing real CLI from a skip
// into a failure. scripts/test.sh (and so CI) sets it after installing them.
const RequireEnv = "HUB_REQUIRE_REAL_CLIS"

// Root returns the root of hub's module, the directory holding its go.mod
// (see benchgen.Root: found from the source files, wherever this package
// sits), or "" when the sources are not on disk.
func Root() string { return benchgen.Root() }

// Bin returns the path of the real CLI name: $HUB_<NAME>_BIN if set, else
// .tools/npm/node_modules/.bin/<name> under [Root]. When it is missing the
// test is skipped with the command that installs it, or fails if
// [RequireEnv] is set. With -short (go test -short: the fast tier, which
// needs no CLI installed) it skips whatever is installed. A program that
// wraps hub sets HUB_<NAME>_BIN.
func Bin(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("real " + name + " CLI: not run with -short (the fast tier)")
	}
	env := "HUB_" + strings.ToUpper(name) + "_BIN"
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

// Home makes a fresh home for one run of a real CLI: HOME and the XDG
// directories under one temporary directory. It returns that directory and
// the environment entries to pass to the agent. The directory path is unique
// and appears in every process of the run's environment (see Leftovers).
// It fails t fatally if it cannot make the directories.
func Home(t testing.TB) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	env = []string{"HOME=" + filepath.Join(dir, "home")}
	for _, x := range []string{"CONFIG", "DATA", "CACHE", "STATE"} {
		env = append(env, "XDG_"+x+"_HOME="+filepath.Join(dir, "xdg", x))
	}
	for _, e := range env {
		_, p, _ := strings.Cut(e, "=")
		if err := os.MkdirAll(p, 0o755); err != nil {
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

// FirstUserText is the first model call's user text, for messages.
func FirstUserText(calls []mockllm.Request) string {
	if len(calls) == 0 {
		return "(no call)"
	}
	return calls[0].UserText
}

// WantErr fails t unless fin is a failure with bin/reason (fatally: nothing
// else is worth checking then), the retryable flag SPEC §4 gives them, a
// hint, and (when status is not 0) that HTTP status.
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

// Result is one run through hub.
type Result struct {
	Fin    events.RunFinished
	Events []events.Event // every event, run.finished last
	Took   time.Duration  // wall time of hub.Run
}

// RunChecked runs req through hub.Run (with opts) and checks what every
// run must keep: a valid event stream with one run.finished, last
// (ValidateStream), and no live process whose environment names dir (the
// run's home from Home: Leftovers). It reports a failure of either with
// t.Errorf and returns the result all the same. The stream is logged with
// -v, or when the test has failed by the time it ends.
func RunChecked(t *testing.T, req hub.Request, dir string, opts ...hub.Option) Result {
	t.Helper()
	var res Result
	var stream bytes.Buffer
	enc := events.NewEncoder(&stream)
	start := time.Now()
	res.Fin = hub.Run(t.Context(), req, func(ev events.Event) error {
		res.Events = append(res.Events, ev)
		return enc.Encode(ev)
	}, opts...)
	res.Took = time.Since(start)
	if err := ValidateStream(stream.Bytes()); err != nil {
		t.Errorf("event stream invalid: %v", err)
	}
	if left := Leftovers(dir); len(left) > 0 {
		t.Errorf("processes of the run still alive after Run returned: %v", left)
	}
	if testing.Verbose() {
		t.Logf("events:\n%s", stream.Bytes())
	} else {
		// A check after RunChecked may fail the test: show the stream then.
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("events of %s run %s:\n%s", req.Agent, req.Prompt, stream.Bytes())
			}
		})
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

// Notices returns the run's notices of kind, in order.
func (r Result) Notices(kind events.NoticeKind) []events.Notice {
	var out []events.Notice
	for _, ev := range r.Events {
		if b, ok := ev.Body.(events.Notice); ok && b.Kind == kind {
			out = append(out, b)
		}
	}
	return out
}

// Usages returns the run's usage events, in order.
func (r Result) Usages() []events.Usage {
	var out []events.Usage
	for _, ev := range r.Events {
		if u, ok := ev.Body.(events.Usage); ok {
			out = append(out, u)
		}
	}
	return out
}

// Deltas returns the text of the run's text.delta events, joined.
func (r Result) Deltas() string {
	var b strings.Builder
	for _, ev := range r.Events {
		if d, ok := ev.Body.(events.TextDelta); ok {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

// Types returns the types of the run's events, in order, leaving out
// text.delta (how many an answer streams in is the CLI's business).
func (r Result) Types() []events.Type {
	var out []events.Type
	for _, ev := range r.Events {
		if ev.Type() != events.TypeTextDelta {
			out = append(out, ev.Type())
		}
	}
	return out
}

// Prices is a model's price in USD per million tokens: the mock model's as
// a test writes it into an agent's own config (OpenCode's provider config,
// pi's models.json), or a real model's as hub's price table has it, written
// out so that a cost can be checked by hand and not by the code under test.
type Prices struct{ In, Out, CacheRead, CacheWrite float64 }

// MockPrices are the prices the real-CLI tests configure for "mock-model".
var MockPrices = Prices{In: 3, Out: 15, CacheRead: 0.3, CacheWrite: 3.75}

// Cost is what p makes of the token counts, in USD.
func (p Prices) Cost(in, out, cacheRead, cacheWrite int64) float64 {
	return (float64(in)*p.In + float64(out)*p.Out + float64(cacheRead)*p.CacheRead + float64(cacheWrite)*p.CacheWrite) / 1e6
}

// CheckTokens fails t (Errorf) unless got has these input (cache excluded),
// output and cache-read tokens and no cache writes.
func CheckTokens(t testing.TB, got events.Tokens, in, out, cacheRead int64) {
	t.Helper()
	if got.Input != in || got.Output != out || got.CacheRead != cacheRead || got.CacheWrite != 0 {
		t.Errorf("usage = in %d out %d cache read %d write %d, want %d %d %d 0", got.Input, got.Output, got.CacheRead, got.CacheWrite, in, out, cacheRead)
	}
}

// CheckUsage is CheckTokens and also fails t unless got's cost is p applied
// to those tokens (within 1e-9 USD).
func CheckUsage(t testing.TB, got events.Tokens, p Prices, in, out, cacheRead int64) {
	t.Helper()
	CheckTokens(t, got, in, out, cacheRead)
	want := p.Cost(in, out, cacheRead, 0)
	if got.CostUSD == nil || math.Abs(*got.CostUSD-want) > 1e-9 {
		t.Errorf("cost = %v, want %.6f", got.CostUSD, want)
	}
}

// CheckFinalAnswer checks a real run of [mockllm.ToolLoop] stopped by
// --max-tool-steps 2 and resumed for a final answer (SPEC §5): the bin is
// budget_exceeded/tool_steps, the third tool call was the last one, the text
// is the mock model's [mockllm.LoopAnswer] marked partial, the session id is
// kept, and the last model call carried hub.FinalAnswerPrompt in its
// last user text (byte for byte, though the CLI may add context around it)
// and still offered tools (the mock server, as the Anthropic API does,
// refuses a tool history without tools). It fails t fatally on a wrong bin
// or no model call, with Errorf otherwise.
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
	if !strings.Contains(last.LastUserText, hub.FinalAnswerPrompt) {
		t.Errorf("last model call's user text = %q, want the final-answer prompt", normalize.Shorten(last.LastUserText, 300))
	}
	if len(last.Tools) == 0 {
		t.Errorf("last model call offered no tools, want them kept")
	}
}

// Retries is what a run wants of the agent CLI's own retries of a failed
// model call; [Agent.Configure] reads it from [Env.Retries].
type Retries int

const (
	// RetriesFew: as few as the CLI can be set to (Claude Code 1, Codex 1,
	// pi none; OpenCode has no setting), so that an error scenario ends in
	// seconds. The default.
	RetriesFew Retries = iota
	// RetriesDefault: the CLI's own retries as it ships them (pi: its
	// auto-retry, with the provider SDK's retries inside each attempt off
	// so that an attempt is one model call), which hub's fail-fast and
	// --agent-retries must bound.
	RetriesDefault
)

// Shell is how an agent's shell tool starts bash, which says where a test
// puts a script every tool command runs first ([Env.ShellInit]).
type Shell int

const (
	// ShellBashEnv: a non-interactive bash, which sources $BASH_ENV
	// (Claude Code, OpenCode, pi).
	ShellBashEnv Shell = iota
	// ShellLogin: a login shell (`bash -lc`, Codex), which sources
	// ~/.bash_profile.
	ShellLogin
)

// SlowEcho is a shell script for [Env.ShellInit] that makes the mock's tool
// command (echo, [mockllm.ToolCommand]) sleep 300 s before it prints: a tool
// that outlives any limit a test sets.
const SlowEcho = "echo() { sleep 300; builtin echo \"$@\"; }\n"

// Setup is what [Agent.Prepare] makes an [Env] from. The zero value is a
// mock server with default options and [RetriesFew].
type Setup struct {
	Server  mockllm.Options
	Retries Retries
	// Refused closes the server before the CLI is configured: its URL
	// then names a port nothing listens on (connection refused).
	Refused bool
}

// Env is the private world of one agent's runs: a mock server, a home and
// a working directory, and the environment that points the CLI at the
// server. Several runs may share one (to resume a session); an Env is not
// safe for concurrent use.
type Env struct {
	Agent  Agent
	Server *mockllm.Server
	// Dir holds everything; every process of the runs has it in its
	// environment (HOME is under it), which is how RunChecked finds
	// processes left behind.
	Dir     string
	Home    string   // $HOME
	Work    string   // the runs' working directory
	Env     []string // HOME, the XDG directories and what Agent.Configure added
	Retries Retries  // what Agent.Configure is to set up
	// TTY runs the CLI on a pseudo-terminal (Request.TTY, `hub run
	// --tty`), and Run checks that its stdout and stderr were terminals
	// and its stdin not, from /proc while it ran.
	TTY bool
}

// Prepare starts a mock server with s.Server (closed when t ends), makes a
// fresh home and working directory, and has a.Configure point the CLI at
// the server. It fails t fatally if any of that fails.
func (a Agent) Prepare(t *testing.T, s Setup) *Env {
	t.Helper()
	srv, err := mockllm.StartWith(s.Server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	if s.Refused {
		srv.Close()
	}
	dir, env := Home(t)
	e := &Env{Agent: a, Server: srv, Dir: dir, Home: filepath.Join(dir, "home"), Work: filepath.Join(dir, "work"), Env: env, Retries: s.Retries}
	if err := os.MkdirAll(e.Work, 0o755); err != nil {
		t.Fatal(err)
	}
	if a.Configure != nil {
		a.Configure(t, e)
	}
	return e
}

// Write writes data to the file name under e.Dir (its directory made
// first), fails t fatally if it cannot, and returns the file's path.
func (e *Env) Write(t testing.TB, name, data string) string {
	t.Helper()
	path := filepath.Join(e.Dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ShellInit makes every command the agent's shell tool runs from now on
// source script first, the way the agent's [Shell] allows: $BASH_ENV for
// ShellBashEnv, ~/.bash_profile for ShellLogin. script is bash, and so
// is the shell the CLI starts: SHELL names bash, because a CLI picks its
// shell from $SHELL and, without it, may take zsh where it is installed
// (Claude Code 2.1.328 does: its Bash tool then ran in zsh, which reads
// neither file, and the tool ran unchanged).
func (e *Env) ShellInit(t testing.TB, script string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	e.Env = append(e.Env, "SHELL="+bash)
	switch e.Agent.Shell {
	case ShellLogin:
		e.Write(t, filepath.Join("home", ".bash_profile"), script)
	default:
		e.Env = append(e.Env, "BASH_ENV="+e.Write(t, "bashenv", script))
	}
}

// Run runs the real CLI (Bin) on prompt through RunChecked, in e.Work with
// e.Env, Agent.Model and limits, the ones left unset filled in by
// [Unbounded], on a pseudo-terminal if e.TTY; edit, if any, then changes
// the request. It waits for one of Agent.Slots first.
func (e *Env) Run(t *testing.T, prompt string, limits budget.Limits, edit ...func(*hub.Request)) Result {
	t.Helper()
	bin := Bin(t, e.Agent.Name)
	defer e.Agent.TakeSlot(t)()
	Unbounded(t, &limits) // after the wait for a slot: the run starts now
	req := hub.Request{Agent: e.Agent.Name, Prompt: prompt, Model: e.Agent.Model, Bin: bin,
		Cwd: e.Work, Env: slices.Clone(e.Env), Limits: limits, TTY: e.TTY}
	for _, f := range edit {
		f(&req)
	}
	if !req.TTY {
		return RunChecked(t, req, e.Dir)
	}
	probe := &ttyProbe{marker: e.Dir}
	r := RunChecked(t, req, e.Dir, hub.WithGuard(probe))
	probe.check(t)
	return r
}

// ttyProbe is a guard that stops nothing: at the first of the agent's
// events that finds it still running, it reads from /proc what the agent's
// fds 0, 1 and 2 are and whether it has a controlling terminal. The agent
// is the session leader below a hub-guard (its parent) whose environment
// names marker.
type ttyProbe struct {
	marker string
	found  bool
	fds    [3]string // where fds 0, 1 and 2 lead
	ctty   bool      // a controlling terminal (tty_nr in its stat)
}

func (p *ttyProbe) Check(events.Body) *events.Error {
	if p.found {
		return nil
	}
	for _, pid := range Leftovers(p.marker) {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:])) // state ppid pgrp session tty_nr …
		if len(f) < 5 || f[3] != strconv.Itoa(pid) {
			continue // not a session leader: not the agent (the guard's orphans, say)
		}
		if comm, _ := os.ReadFile(filepath.Join("/proc", f[1], "comm")); strings.TrimSpace(string(comm)) != "hub-guard" {
			continue
		}
		for fd := range p.fds {
			p.fds[fd], _ = os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", strconv.Itoa(fd)))
		}
		p.ctty, p.found = f[4] != "0", true
		return nil
	}
	return nil
}

// check fails t unless the probe found the agent with stdout and stderr
// on two terminals, the stdout one its controlling terminal, and stdin on
// none.
func (p *ttyProbe) check(t testing.TB) {
	t.Helper()
	pts := func(s string) bool { return strings.HasPrefix(s, "/dev/pts/") }
	switch {
	case !p.found:
		t.Errorf("--tty: the agent was not found running at any of its events")
	case !pts(p.fds[1]) || !pts(p.fds[2]) || p.fds[1] == p.fds[2] || pts(p.fds[0]) || !p.ctty:
		t.Errorf("--tty: the agent's fds 0, 1, 2 = %q, controlling terminal %v; want stdin on no terminal, stdout and stderr on two, and a controlling one", p.fds, p.ctty)
	}
}

// Unbounded fills in the time limits that a test does not test (Timeout,
// Linger and Finalize left at 0) with the time the test has left before the
// test binary's -timeout, less twice what hub may take to stop the agent
// (its grace and hub.StopWait). A real CLI's start-up and exit take as
// long as the machine's load makes them (OpenCode starts in 6–10 s on an
// idle 2-core machine and took over two minutes with two suites running),
// so a fixed limit there is a guess that load breaks; the test's deadline
// is the one limit such a run really has, and a run cut by it still ends
// with hub's stop and a logged stream instead of a panic of the test
// binary. Finalize too: the final-answer resume starts the CLI again.
// Without a deadline (-timeout 0) the limits stay unset: nothing bounds the
// run but the agent. It fails t fatally when no time is left.
func Unbounded(t testing.TB, l *budget.Limits) {
	t.Helper()
	dl, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return
	}
	end, ok := dl.Deadline()
	if !ok {
		return
	}
	left := time.Until(end) - 2*(l.GraceOrDefault()+hub.StopWait)
	if left <= 0 {
		t.Fatalf("no time left before the test's deadline (%s) to run the agent", end.Format(time.TimeOnly))
	}
	if l.Timeout == 0 {
		l.Timeout = left
	}
	if l.Linger == 0 {
		l.Linger = left
	}
	if l.Finalize == 0 {
		l.Finalize = left
	}
}

// Attempts is how many times [Retry] runs an attempt at most: the limit of
// the last is 2^(Attempts-1) times the first's.
const Attempts = 4

// Retry runs attempt(d), and then attempt(2d), attempt(4d), … while it
// returns false: the limit under test (d) ran out before the agent got to
// what the test is about. The agent's start-up, and the version probe that a
// --timeout covers, take as long as the machine's load makes them, and an
// attempt whose limit ran out during them tested nothing. attempt reports
// that from what the run shows (the model calls the mock server got, the
// events, a mark the tool left), never from a guess of the start-up time;
// it checks everything else itself. Retry stops at an attempt that failed
// t, fails t after Attempts attempts, or when the next one (twice as long
// as the last took) would not end before the test's deadline. It returns
// the limit of the attempt that counted.
func Retry(t *testing.T, d time.Duration, attempt func(d time.Duration) bool) time.Duration {
	t.Helper()
	for i := 1; ; i++ {
		start := time.Now()
		if attempt(d) {
			return d
		}
		took := time.Since(start)
		if t.Failed() {
			t.FailNow()
		}
		if i == Attempts {
			t.Fatalf("after %d attempts, up to a limit of %s, it still ran out before the agent got to what this test is about", i, d)
		}
		if end, ok := t.Deadline(); ok && time.Until(end) < 2*took+2*d {
			t.Fatalf("attempt %d with a limit of %s ran out before the agent got to what this test is about, and a longer one would not end before the test's deadline", i, d)
		}
		t.Logf("attempt %d: the limit of %s ran out before the agent got to what this test is about (run took %s); again with %s", i, d, took.Round(time.Millisecond), 2*d)
		d *= 2
	}
}

// Quiet returns the time from the run's last event before run.finished to
// run.finished: for a run stopped by its idle timeout, the agent's silence
// plus hub's stop.
func (r Result) Quiet() time.Duration {
	n := len(r.Events)
	if n < 2 {
		return 0
	}
	return r.Events[n-1].TS.Sub(r.Events[n-2].TS)
}

// WantQuiet fails t unless the run's Quiet time is at least its idle
// timeout and at most that plus the grace and hub.StopWait: hub's
// own bound on the stop.
func WantQuiet(t testing.TB, r Result, l budget.Limits) {
	t.Helper()
	max := l.IdleTimeout + l.GraceOrDefault() + hub.StopWait
	if q := r.Quiet(); q < l.IdleTimeout || q > max {
		t.Errorf("last output to run.finished = %s, want between the idle timeout %s and %s (+ grace + hub.StopWait)", q, l.IdleTimeout, max)
	}
}

// WantTook fails t unless the run took at most its Timeout plus the grace
// and hub.StopWait: hub's own bound on a run its --timeout stops.
func WantTook(t testing.TB, r Result, l budget.Limits) {
	t.Helper()
	if max := l.Timeout + l.GraceOrDefault() + hub.StopWait; r.Took > max {
		t.Errorf("run took %s, want at most %s (--timeout %s + grace + hub.StopWait)", r.Took, max, l.Timeout)
	}
}

// TakeSlot waits for one of a.Slots (at once when Slots is nil) and returns
// the function that gives it back. It fails t fatally if t's context ends
// first.
func (a Agent) TakeSlot(t testing.TB) (release func()) {
	t.Helper()
	if a.Slots == nil {
		return func() {}
	}
	select {
	case a.Slots <- struct{}{}:
		return func() { <-a.Slots }
	case <-t.Context().Done():
		t.Fatalf("no slot to run %s in before the test ended", a.Name)
		return nil
	}
}

// jsonField returns the string field name of the JSON object raw, "" if
// there is none.
func jsonField(raw json.RawMessage, name string) string {
	var m map[string]json.RawMessage
	var s string
	if json.Unmarshal(raw, &m) != nil || json.Unmarshal(m[name], &s) != nil {
		return ""
	}
	return s
}
