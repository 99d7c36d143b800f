package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/hubtest/fakeacp"
	"github.com/hubcli/hub/internal/proc"
)

// TestMain lets the test binary act as hub itself (HUB_TEST_AS_HUB=1), for
// tests that need a real process to signal. It catches signals first, as
// main does.
func TestMain(m *testing.M) {
	if os.Getenv("HUB_TEST_AS_HUB") == "1" {
		os.Exit(runMain())
	}
	if os.Getenv(fakeacp.EnvScenario) != "" {
		fakeacp.Main() // an ACP agent for the config tests
	}
	// No user's config.toml changes what the tests run (and their hub
	// processes): /dev/null is an empty file. Config tests set their own.
	os.Setenv("HUB_CONFIG", os.DevNull)
	// Nor is the user's cache directory used: hub's version cache (and
	// CacheFile's copies) go to one of the test binary's own, which its
	// hub processes inherit.
	userCacheHome, userCacheHomeSet = os.LookupEnv("XDG_CACHE_HOME")
	cache, err := os.MkdirTemp("", "hub-cmd-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

// userCacheHome is XDG_CACHE_HOME as the test binary found it (set: it
// was set), before TestMain pointed it at a directory of its own.
var (
	userCacheHome    string
	userCacheHomeSet bool
)

// userCacheEnv is this process's environment with XDG_CACHE_HOME as the
// user had it: for a `go build`, whose build cache lives there (in a new,
// empty one, every package would be compiled again: a minute of CPU).
func userCacheEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "XDG_CACHE_HOME=") })
	if userCacheHomeSet {
		env = append(env, "XDG_CACHE_HOME="+userCacheHome)
	}
	return env
}

// runMain is main's code: the tests' hub process is hub as users run it.
func runMain() int {
	return hubMain(catchSignals(), os.Args, os.Stdin, os.Stdout, os.Stderr)
}

// fakeAgent writes a shell script that answers --version with 1.18.33 and
// otherwise runs body, and returns its path.
func fakeAgent(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "opencode")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 1.18.33; exit 0; fi\n" + body + "\n"
	if err := hubtest.WriteScript(path, []byte(script)); err != nil {
		t.Fatal(err)
	}
	return path
}

const okBody = `echo '{"type":"step_start","sessionID":"ses_x","part":{}}'
echo '{"type":"text","sessionID":"ses_x","part":{"type":"text","text":"the answer"}}'
echo '{"type":"step_finish","sessionID":"ses_x","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'`

// hubCLI runs the CLI in-process. Not in parallel: urfave/cli v2 keeps global
// flag state (its help flag) that concurrent apps race on.
func hubCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), nil, append([]string{"hub"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	tests := [][]string{
		{"run", "x"},                    // no --agent
		{"run", "--agent", "nope", "x"}, // unknown agent
		{"run", "--agent", "opencode"},  // no prompt
		{"run", "--agent", "opencode", "--output", "xml", "x"},
		{"run", "--agent", "opencode", "--no-such-flag", "x"},
		{"run", "--agent", "opencode", "--timeout", "soon", "x"},
		{"run", "--agent", "opencode", "--prompt-file", "/nonexistent", "x"},
		{"run", "--agent", "opencode", "--env", "NOEQUALS", "x"},
		{"run", "--agent", "opencode", "--cwd", "/nonexistent", "x"},
		{"run", "--agent", "codex", "--prices", "/nonexistent", "x"},
		{"run", "--agent", "opencode", "--max-cost", "-1", "x"},
		{"run", "--agent", "opencode", "--max-cost", "NaN", "x"},
		{"run", "--agent", "opencode", "--max-tokens", "-5", "x"},
		{"run", "--agent", "opencode", "--max-line", "-5", "x"},
		{"run", "--agent", "opencode", "--max-tool-steps", "many", "x"},
		{"run", "--agent", "opencode", "--agent-retries", "-2", "x"},
		{"replay", "--agent", "opencode", "--max-line", "-5", "main_test.go"},
		{"run", "--agent", "opencode", "--finalize-timeout", "-1s", "x"},
		{"run", "--agent", "codex", "--prices", "main_test.go", "x"}, // not a price table
		{"no-such-command"},
	}
	for _, args := range tests {
		code, _, stderr := hubCLI(t, "", args...)
		if code != 2 {
			t.Errorf("hub %q = exit %d, want 2 (stderr %q)", args, code, stderr)
		}
	}
}

func TestSchemaAndVersion(t *testing.T) {
	code, out, _ := hubCLI(t, "", "schema")
	if code != 0 || !json.Valid([]byte(out)) || out != string(events.Schema) {
		t.Errorf("hub schema = exit %d, %d bytes; want 0 and events.Schema", code, len(out))
	}
	code, out, _ = hubCLI(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "hub ") {
		t.Errorf("hub version = %d %q", code, out)
	}
}

func TestRunOutputs(t *testing.T) {
	bin := fakeAgent(t, okBody)
	code, out, errOut := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "hi")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	if err := hubtest.ValidateStream([]byte(out)); err != nil {
		t.Errorf("jsonl output: %v", err)
	}

	code, out, _ = hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "json", "hi")
	var fin struct {
		Type string
		OK   bool
		Text string
	}
	if err := json.Unmarshal([]byte(out), &fin); err != nil || code != 0 || fin.Type != "run.finished" || !fin.OK || fin.Text != "the answer" {
		t.Errorf("--output json = exit %d %q (%v), want one ok run.finished", code, out, err)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("--output json printed %d lines, want 1", strings.Count(out, "\n"))
	}

	code, out, errOut = hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "hi")
	if code != 0 || out != "the answer\n" || !strings.Contains(errOut, "ok") || !strings.Contains(errOut, "7 tokens") {
		t.Errorf("--output text = exit %d stdout %q stderr %q", code, out, errOut)
	}
}

func TestRunPromptSources(t *testing.T) {
	// The fake answers with the prompt it got on stdin.
	bin := fakeAgent(t, `in=$(cat)
printf '{"type":"text","sessionID":"s","part":{"type":"text","text":"stdin=%s"}}\n' "$in"
echo '{"type":"step_finish","sessionID":"s","part":{"reason":"stop","tokens":{},"cost":0}}'`)
	pf := filepath.Join(t.TempDir(), "prompt.txt")
	os.WriteFile(pf, []byte("from file"), 0o644)
	tests := []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"two", "words"}, "stdin=two words"},
		{"piped prompt", []string{"-"}, "stdin=piped prompt"},
		{"", []string{"--prompt-file", pf}, "stdin=from file"},
		{"", []string{"--", "-v"}, "stdin=-v"},
		// After --, - is the prompt "-": `hub run -- "$PROMPT"` never
		// reads stdin, whatever the prompt.
		{"piped prompt", []string{"--", "-"}, "stdin=-"},
	}
	for _, tt := range tests {
		args := append([]string{"run", "--agent", "opencode", "--bin", bin, "--output", "json"}, tt.args...)
		// --prompt-file must come before the positional arguments.
		if tt.args[0] == "--prompt-file" {
			args = append([]string{"run", "--agent", "opencode", "--bin", bin, "--output", "json"}, tt.args...)
		}
		code, out, errOut := hubCLI(t, tt.stdin, args...)
		var fin struct{ Text string }
		json.Unmarshal([]byte(out), &fin)
		if code != 0 || fin.Text != tt.want {
			t.Errorf("hub %q = exit %d text %q (stderr %q), want %q", tt.args, code, fin.Text, errOut, tt.want)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		body string
		args []string
		code int
	}{
		{okBody, nil, 0},
		{`echo 'Error: ProviderModelNotFoundError' >&2; exit 1`, nil, 5},
		{`echo '{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"bad key","statusCode":401}}}'; exit 1`, nil, 7},
		{`exit 0`, nil, 10},
		{`exit 4`, nil, 1},
		{`sleep 30`, []string{"--timeout", "300ms", "--grace", "200ms"}, 8},
		{okBody + "\nsleep 30", []string{"--max-tokens", "6", "--grace", "200ms"}, 9}, // 7 tokens > 6
		{okBody, []string{"--max-cost", "0.0009"}, 9},                                 // $0.001 > $0.0009
		{okBody, []string{"--max-cost", "0.001"}, 0},                                  // exactly the limit is within it
	}
	for _, tt := range tests {
		bin := fakeAgent(t, tt.body)
		args := append([]string{"run", "--agent", "opencode", "--bin", bin, "--output", "jsonl"}, tt.args...)
		code, out, _ := hubCLI(t, "", append(args, "x")...)
		if code != tt.code {
			t.Errorf("agent %q: exit %d, want %d\n%s", tt.body, code, tt.code, out)
		}
		if err := hubtest.ValidateStream([]byte(out)); err != nil {
			t.Errorf("agent %q: %v", tt.body, err)
		}
	}
	code, out, _ := hubCLI(t, "", "run", "--agent", "opencode", "--bin", "/nonexistent/opencode", "--output", "jsonl", "x")
	if code != 3 || !strings.Contains(out, "npm i -g opencode-ai") {
		t.Errorf("missing binary: exit %d %s, want 3 with the install hint", code, out)
	}
}

// TestSignalStopsAgent sends SIGINT, and SIGQUIT (Ctrl-\: Go's default
// would dump goroutines and exit 2, leaving the agent's tools running), to a
// real hub process running a hanging agent: hub must stop the agent's group
// and still print run.finished, exit 130.
func TestSignalStopsAgent(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			signalStopsAgent(t, sig)
		})
	}
}

func signalStopsAgent(t *testing.T, sig syscall.Signal) {
	exe, _ := os.Executable()
	pidfile := filepath.Join(t.TempDir(), "pid")
	bin := fakeAgent(t, `echo $$ > `+pidfile+`
echo '{"type":"step_start","sessionID":"ses_sig","part":{}}'
sleep 300 & wait`)
	cmd := exec.Command(exe, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--grace", "1s", "x")
	cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
	var out syncBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "ses_sig") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if code != 130 {
		t.Errorf("hub exit = %d (%v), want 130", code, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, `"type":"run.finished"`) || !strings.Contains(last, `"bin":"cancelled","reason":"caller"`) {
		t.Errorf("last line = %s, want run.finished cancelled/caller", last)
	}
	if err := hubtest.ValidateStream([]byte(out.String())); err != nil {
		t.Error(err)
	}
	b, _ := os.ReadFile(pidfile)
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid == 0 {
		t.Fatal("agent never wrote its pid")
	}
	if live := proc.LiveInGroup(pid); len(live) > 0 {
		t.Errorf("agent's process group %d still has running processes %v after hub exited", pid, live)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestOutputWriteFailure: when hub cannot write its output, the run fails as
// internal (exit 11) and says why on stderr, in every output mode.
func TestOutputWriteFailure(t *testing.T) {
	bin := fakeAgent(t, okBody)
	for _, mode := range []string{"text", "jsonl", "json"} {
		var errb bytes.Buffer
		code := run(t.Context(), nil, []string{"hub", "run", "--agent", "opencode", "--bin", bin, "--output", mode, "x"},
			strings.NewReader(""), failWriter{}, &errb)
		if code != 11 || !strings.Contains(errb.String(), "no space left") {
			t.Errorf("--output %s to a full disk: exit %d, stderr %q; want 11 and the write error", mode, code, errb.String())
		}
	}
}

// TestClosedStdout runs a real hub process whose stdout reader goes away: hub
// must stop the agent and exit 11, not die of SIGPIPE leaving it behind.
func TestClosedStdout(t *testing.T) {
	t.Parallel()
	exe, _ := os.Executable()
	pidfile := filepath.Join(t.TempDir(), "pid")
	bin := fakeAgent(t, `echo $$ > `+pidfile+`
while true; do echo '{"type":"step_start","sessionID":"ses_pipe","part":{}}'; sleep 0.05; done`)
	cmd := exec.Command(exe, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--grace", "1s", "x")
	cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read past run.started to the first event from the agent: by then it
	// has written its pid (run.started alone comes before it does).
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(line, `"type":"run.started"`) {
			break
		}
	}
	stdout.Close() // like `| head`
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("hub did not exit after its stdout closed")
	}
	if code := cmd.ProcessState.ExitCode(); code != 11 {
		t.Errorf("hub exit = %d (%v), want 11", code, cmd.ProcessState)
	}
	wantAgentGone(t, pidfile)
}

// TestOrphansKilled: an agent whose tool detaches a child (setsid, parent
// exits at once) and then finishes; hub, a child subreaper, still finds the
// orphan and kills it with the run.
func TestOrphansKilled(t *testing.T) {
	t.Parallel()
	exe, _ := os.Executable()
	pidfile := filepath.Join(t.TempDir(), "pid")
	bin := fakeAgent(t, `setsid -f sh -c 'echo $$ > `+pidfile+`; exec sleep 300' </dev/null >/dev/null 2>&1
while [ ! -s `+pidfile+` ]; do sleep 0.01; done
`+okBody)
	cmd := exec.Command(exe, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "x")
	cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hub: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(pidfile)
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid == 0 {
		t.Fatal("the detached child never started")
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if proc.Running(pid) {
		t.Errorf("detached child %d of a finished run still running", pid)
	}
}

// TestRunPrices: a model hub has no price for is priced from the user's
// price file in the config directory, and --prices overrides that file.
func TestRunPrices(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "codex")
	script := `#!/bin/sh
if [ "$1" = --version ]; then echo codex-cli 0.169.0; exit 0; fi
cat >/dev/null
echo '{"type":"thread.started","thread_id":"th_1"}'
echo '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"hi"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":1000000,"cached_input_tokens":0,"output_tokens":1000000,"reasoning_output_tokens":0}}'
`
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config")
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", dir)
	cost := func() string {
		t.Helper()
		code, out, stderr := hubCLI(t, "", "run", "--agent", "codex", "--bin", bin, "--model", "my-model", "--output", "json", "x")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var fin struct {
			Cost   *float64 `json:"cost_usd"`
			Source string   `json:"cost_source"`
		}
		if err := json.Unmarshal([]byte(out), &fin); err != nil {
			t.Fatal(err)
		}
		if fin.Cost == nil {
			return "null " + fin.Source
		}
		return fmt.Sprintf("%g %s", *fin.Cost, fin.Source)
	}
	if got := cost(); got != "null unknown" {
		t.Errorf("no price file: cost %s, want null unknown", got)
	}
	// 1 M input × $1 + 1 M output × $2 = $3; with --prices, $10 + $20 = $30.
	if err := os.MkdirAll(filepath.Join(cfg, "hub"), 0o755); err != nil {
		t.Fatal(err)
	}
	row := `{"prices":[{"model":"my-model","input":%d,"cached_input":0,"output":%d,"as_of":"2026-11-30"}]}`
	if err := os.WriteFile(filepath.Join(cfg, "hub", "prices.json"), fmt.Appendf(nil, row, 1, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := cost(); got != "3 estimated" {
		t.Errorf("user price file: cost %s, want 3 estimated", got)
	}
	// A broken user price file stops codex runs (their cost would be
	// wrong), not runs of agents that report their own cost.
	good, err := os.ReadFile(filepath.Join(cfg, "hub", "prices.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "hub", "prices.json"), []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := hubCLI(t, "", "run", "--agent", "codex", "--bin", bin, "x"); code != 2 || !strings.Contains(stderr, "prices.json") {
		t.Errorf("codex with a broken price file: exit %d, stderr %q; want 2 naming the file", code, stderr)
	}
	oc := fakeAgent(t, okBody)
	if code, _, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", oc, "--output", "json", "x"); code != 0 {
		t.Errorf("opencode with a broken price file: exit %d (%s), want 0", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(cfg, "hub", "prices.json"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(dir, "flag.json")
	if err := os.WriteFile(flag, fmt.Appendf(nil, row, 10, 20), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HUB_PRICES", flag)
	if got := cost(); got != "30 estimated" {
		t.Errorf("--prices: cost %s, want 30 estimated", got)
	}
}

// TestReplayCommand: hub replay normalizes saved transcripts with the same
// rules and exit statuses as hub run.
func TestReplayCommand(t *testing.T) {
	root := filepath.Join("..", "..", "testdata")
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"--agent", "codex", "--model", "gpt-5.5", filepath.Join(root, "codex", "bigusage.jsonl")}, 0},
		{[]string{"--agent", "codex", "--model", "gpt-5.5", "--max-cost", "1", filepath.Join(root, "codex", "bigusage.jsonl")}, 9},
		{[]string{"--agent", "codex", "--exit-status", "1", filepath.Join(root, "codex", "overflow.jsonl")}, 5},
		{[]string{"--agent", "pi", filepath.Join(root, "pi", "401.jsonl")}, 7},
		{[]string{"--agent", "claude", "--signal", "SIGTERM", filepath.Join(root, "claude", "hang.jsonl")}, 1},
	}
	for _, tt := range tests {
		code, out, stderr := hubCLI(t, "", append([]string{"replay"}, tt.args...)...)
		if code != tt.code {
			t.Errorf("replay %q: exit %d, want %d (%s)", tt.args, code, tt.code, stderr)
		}
		if err := hubtest.ValidateStream([]byte(out)); err != nil {
			t.Errorf("replay %q: %v", tt.args, err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(root, "codex", "text.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := hubCLI(t, string(raw), "replay", "--agent", "codex", "--output", "json", "-")
	if code != 0 || !strings.Contains(out, `"text":"Hello from the mock model."`) || strings.Count(out, "\n") != 1 {
		t.Errorf("replay from stdin, json: exit %d, %q", code, out)
	}
	for _, args := range [][]string{
		{"--agent", "codex"},
		{"--agent", "codex", "a", "b"},
		{"--agent", "nope", "f"},
		{"--agent", "codex", "--signal", "SIGNOPE", "f"},
		{"--agent", "codex", "--signal", "SIGTERM", "--exit-status", "1", "f"},
		{"--agent", "codex", "/nonexistent"},
	} {
		if code, _, _ := hubCLI(t, "", append([]string{"replay"}, args...)...); code != 2 {
			t.Errorf("replay %q: exit %d, want 2", args, code)
		}
	}
}

// TestStalledStdout: a consumer that never reads hub's stdout cannot hold
// hub past --timeout: the agent is stopped at the timeout, hub gives up on
// its output shortly after and exits 11 with the reason on stderr.
func TestStalledStdout(t *testing.T) {
	t.Parallel()
	// 200 KiB of events fill any pipe buffer, then the agent waits.
	line := `{"type":"text","sessionID":"ses_full","part":{"type":"text","text":"` + strings.Repeat("x", 100) + `"}}`
	code, stderr := runStalled(t, "jsonl", line, false)
	if code != 11 || !strings.Contains(stderr, "not being read") {
		t.Errorf("exit %d, stderr %q; want 11 naming the stalled consumer", code, stderr)
	}
}

// TestStalledStderr: with --output text, tool lines go to stderr; a stderr
// nobody reads holds hub no longer than a stalled stdout does.
func TestStalledStderr(t *testing.T) {
	t.Parallel()
	line := `{"type":"tool_use","sessionID":"ses_full","part":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"` +
		strings.Repeat("x", 200) + `"},"output":""}}}`
	code, _ := runStalled(t, "text", line, true)
	// The text printer's stderr lines are best effort: the run ends with its
	// own cause, the --timeout.
	if code != 8 {
		t.Errorf("exit %d, want 8 (timeout/wall)", code)
	}
}

// runStalled runs hub (this test binary as hub) with --output output,
// --timeout 1s and --grace 300ms over a fake agent that prints line 2,000
// times and waits, with its stdout (or its stderr, when onStderr) a pipe
// held open and never read. It fails t unless hub exits within the
// timeout, the grace and stallMargin (plus slack) and the agent is gone; it
// returns the exit status and what hub wrote on the other stream.
func runStalled(t *testing.T, output, line string, onStderr bool) (code int, other string) {
	t.Helper()
	exe, _ := os.Executable()
	pidfile := filepath.Join(t.TempDir(), "pid")
	bin := fakeAgent(t, `echo $$ > `+pidfile+`
i=0; while [ $i -lt 2000 ]; do echo '`+line+`'; i=$((i+1)); done
sleep 300`)
	cmd := exec.Command(exe, "run", "--agent", "opencode", "--bin", bin, "--output", output, "--timeout", "1s", "--grace", "300ms", "--permission", "full", "--yes", "x")
	cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // held open and never read
	var buf bytes.Buffer
	if onStderr {
		cmd.Stdout, cmd.Stderr = &buf, w
	} else {
		cmd.Stdout, cmd.Stderr = w, &buf
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("hub hung on an %s nobody reads", map[bool]string{false: "stdout", true: "stderr"}[onStderr])
	}
	if took := time.Since(start); took > 1300*time.Millisecond+stallMargin+3*time.Second {
		t.Errorf("hub took %s, want about --timeout + --grace + %s", took, stallMargin)
	}
	wantAgentGone(t, pidfile)
	return cmd.ProcessState.ExitCode(), buf.String()
}

// TestStallGuard: a slow reader loses nothing; a stalled one makes writes
// fail once giveUp closes.
func TestStallGuard(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	giveUp := make(chan struct{})
	g := &stallGuard{w: w, giveUp: giveUp}
	got := make(chan []byte)
	go func() {
		time.Sleep(100 * time.Millisecond) // slow, not stalled
		b := make([]byte, 5)
		n, _ := io.ReadFull(r, b)
		got <- b[:n]
	}()
	if n, err := g.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("write to a slow reader = %d, %v", n, err)
	}
	if b := <-got; string(b) != "hello" {
		t.Fatalf("reader got %q", b)
	}
	close(giveUp)
	if _, err := g.Write([]byte("stuck")); !errors.Is(err, errStalled) {
		t.Errorf("write after giving up on a stalled reader = %v, want errStalled", err)
	}
	if _, err := g.Write([]byte("more")); !errors.Is(err, errStalled) {
		t.Errorf("later write = %v, want errStalled at once", err)
	}
}

// wantAgentGone fails t unless the fake agent whose pid is in pidfile wrote
// it and nothing of its process group is left.
func wantAgentGone(t *testing.T, pidfile string) {
	t.Helper()
	b, _ := os.ReadFile(pidfile)
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid == 0 {
		t.Fatal("agent never wrote its pid")
	}
	if live := proc.LiveInGroup(pid); len(live) > 0 {
		t.Errorf("agent's processes %v still running after hub exited", live)
	}
}

// TestTreeDiesOnEveryStop: an agent that ignores SIGTERM (and so do the
// processes it starts) runs a grandchild in its own process group, one in a
// session of its own, and a double-forked daemon, then reports usage. For
// every way hub stops a run — budget, wall timeout, idle timeout, SIGTERM to
// hub — none of them may survive hub (kill(pid, 0) after it exited).
func TestTreeDiesOnEveryStop(t *testing.T) {
	t.Parallel()
	exe, _ := os.Executable()
	for _, tc := range []struct {
		name   string
		args   []string
		signal bool // send SIGTERM to hub once the tree is up
		code   int
	}{
		{"budget", []string{"--max-tokens", "5"}, false, 9},
		{"wall timeout", []string{"--timeout", "1500ms"}, false, 8},
		{"idle timeout", []string{"--idle-timeout", "1s"}, false, 8},
		{"SIGTERM to hub", nil, true, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pids := filepath.Join(dir, "pids")
			body := `trap '' TERM
sleep 300 & echo $! >> ` + pids + `
setsid -f sh -c 'echo $$ >> ` + pids + `; exec sleep 300' </dev/null >/dev/null 2>&1
( setsid sh -c 'echo $$ >> ` + pids + `; exec sleep 300' </dev/null >/dev/null 2>&1 & )
while [ $(wc -l < ` + pids + `) -lt 3 ]; do sleep 0.01; done
echo '{"type":"step_start","sessionID":"ses_t","part":{}}'
sleep 0.2
echo '{"type":"step_finish","sessionID":"ses_t","part":{"reason":"tool-calls","tokens":{"input":6,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'
sleep 300`
			bin := fakeAgent(t, body)
			args := append([]string{"run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--grace", "300ms"}, tc.args...)
			cmd := exec.Command(exe, append(args, "x")...)
			cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
			var out bytes.Buffer
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.signal {
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					if b, _ := os.ReadFile(pids); bytes.Count(b, []byte("\n")) >= 3 || time.Now().After(deadline) {
						break
					}
				}
				time.Sleep(100 * time.Millisecond) // let hub take a snapshot of the tree
				cmd.Process.Signal(syscall.SIGTERM)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatal("hub did not exit")
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("hub exit %d, want %d\n%s", code, tc.code, out.Bytes())
			}
			b, _ := os.ReadFile(pids)
			var n int
			for _, f := range strings.Fields(string(b)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					continue
				}
				n++
				if proc.Running(pid) {
					t.Errorf("process %d of the agent's tree survived hub", pid)
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if n != 3 {
				t.Errorf("%d pids recorded, want 3 (grandchild, own session, daemon)", n)
			}
		})
	}
}

// hub agents: a version newer than the newest tested is ok, with a
// warning naming both; the tested version itself has none. The agents
// hub finds are only those on PATH, here one script.
func TestAgentsNewerThanTested(t *testing.T) { // not parallel: it sets PATH
	for _, tt := range []struct{ version, warn string }{
		{"1.18.33", ""},
		{"1.99.0", "version 1.99.0 is newer than the newest hub was tested on (1.18.33)"},
	} {
		dir := t.TempDir()
		script := "#!/bin/sh\necho " + tt.version + "\n"
		if err := hubtest.WriteScript(filepath.Join(dir, "opencode"), []byte(script)); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", dir)
		code, out, errOut := hubCLI(t, "", "agents", "--json")
		var rows []agentStatus
		if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
			t.Fatalf("hub agents --json: exit %d, %v: %s %s", code, err, out, errOut)
		}
		for _, r := range rows {
			if r.Name != "opencode" {
				continue
			}
			if r.Status != "ok" || r.Version != tt.version || r.TestedVersion != "1.18.33" || !strings.Contains(r.Warning, tt.warn) || (tt.warn == "") != (r.Warning == "") {
				t.Errorf("%s: %+v, want ok with warning %q", tt.version, r, tt.warn)
			}
		}
		_, text, _ := hubCLI(t, "", "agents")
		if tt.warn != "" && !strings.Contains(text, "opencode: warning: "+tt.warn) {
			t.Errorf("hub agents does not warn:\n%s", text)
		}
	}
}
