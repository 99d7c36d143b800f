package main

// `hub acp` driven by a real ACP client that nobody here wrote: acpx
// (pinned in scripts/install-agents.sh), running each real agent CLI
// through hub against the mock model server, offline, pointed at it by
// scripts/mock-env.sh as the real-CLI tests point them.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// acpxRun is one acpx process driving hub acp.
type acpxRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	marker         string // in the environment of acpx, hub and the agent
	pidFile        string // hub's pid
	server         *mockllm.Server
}

// newACPX prepares `acpx [acpxArgs] --agent "hub acp --agent AGENT --bin
// CLI [--model M] [hubArgs]" exec PROMPT` with the real CLI agent pointed at
// a new mock server, in a private home. It skips (or fails, with
// HUB_REQUIRE_REAL_CLIS) when acpx or the CLI is missing.
func newACPX(t *testing.T, agent string, hubArgs, acpxArgs []string, prompt string) *acpxRun {
	t.Helper()
	acpx := hubtest.Bin(t, "acpx")
	cli := hubtest.Bin(t, agent)
	s, err := mockllm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	dir := t.TempDir()
	env, model := mockEnvModel(t, agent, s.URL(), filepath.Join(dir, "mock"))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &acpxRun{marker: "HUB_ACPX_TEST=" + dir, pidFile: filepath.Join(dir, "hub.pid"), server: s}
	// hub is this test binary acting as hub (TestMain), under the name
	// an editor's configuration would give.
	hub := filepath.Join(dir, "bin", "hub")
	if err := os.MkdirAll(filepath.Dir(hub), 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %s\nHUB_TEST_AS_HUB=1 GORACE=atexit_sleep_ms=0 exec %s \"$@\"\n", r.pidFile, exe)
	if err := hubtest.WriteScript(hub, []byte(script)); err != nil {
		t.Fatal(err)
	}
	agentCmd := []string{hub, "acp", "--agent", agent, "--bin", cli, "--timeout", "10m", "--grace", "1s"}
	if model != "" {
		agentCmd = append(agentCmd, "--model", model)
	}
	agentCmd = append(agentCmd, hubArgs...)
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--cwd", work}, acpxArgs...)
	args = append(args, "--agent", strings.Join(agentCmd, " "), "exec", prompt)
	r.cmd = exec.CommandContext(t.Context(), acpx, args...)
	r.cmd.Dir = work
	r.cmd.Env = append(env, "PATH="+os.Getenv("PATH"), "TMPDIR="+os.TempDir(), "HUB_CONFIG="+os.DevNull, r.marker)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("acpx %q\nstdout:\n%s\nstderr:\n%s", args, r.stdout.Bytes(), r.stderr.Bytes())
		}
	})
	return r
}

// mockEnvModel is scripts/mock-env.sh's environment for agent (the variables it
// exports, evaluated by bash) and the --model it names ("" for none).
func mockEnvModel(t *testing.T, agent, url, dir string) (env []string, model string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", `out=$(bash "$0" "$@") || exit; eval "$out"; grep '^# model: ' <<<"$out"; env -0`,
		hubtest.MockEnvScript(), agent, url, dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mock-env.sh %s: %v\n%s", agent, err, stderr.Bytes())
	}
	line, vars, _ := bytes.Cut(out, []byte("\n"))
	model = strings.TrimPrefix(string(line), "# model: ")
	if strings.HasPrefix(model, "(none") {
		model = ""
	}
	for _, kv := range strings.Split(strings.TrimSuffix(string(vars), "\x00"), "\x00") {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "PATH", "PWD", "SHLVL", "_", "OLDPWD":
			continue
		}
		env = append(env, kv)
	}
	return env, model
}

// hubGone waits until the hub process acpx started has exited (acpx does
// not wait for it), then checks that no process of the run is left.
func (r *acpxRun) hubGone(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(r.pidFile)
	if err != nil {
		t.Fatalf("hub never started: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// Bounded by the test's deadline: hub exits within its --grace and
	// hub.StopWait of its client going away, on a machine that runs it.
	for alive(pid) {
		select {
		case <-t.Context().Done():
			t.Fatalf("hub (pid %d) still running", pid)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if left := hubtest.Leftovers(r.marker); len(left) > 0 {
		t.Errorf("processes of the run alive after hub exited: %v", left)
	}
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

var realAgents = []string{"claude", "codex", "opencode", "pi"}

// TestACPXReal: acpx gets the mock model's answer through hub acp and each
// real agent, ending end_turn; with --max-tokens the turn ends max_tokens.
func TestACPXReal(t *testing.T) {
	t.Parallel()
	for _, agent := range realAgents {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			t.Run("text", func(t *testing.T) {
				t.Parallel()
				r := newACPX(t, agent, nil, nil, "Say hello. "+string(mockllm.Text))
				if err := r.cmd.Run(); err != nil {
					t.Fatalf("acpx: %v", err)
				}
				if out := r.stdout.String(); !strings.Contains(out, mockllm.TextAnswer) || !strings.Contains(out, "[done] end_turn") {
					t.Errorf("acpx printed %q, want %q and [done] end_turn", out, mockllm.TextAnswer)
				}
				r.hubGone(t)
			})
			t.Run("max-tokens", func(t *testing.T) {
				t.Parallel()
				r := newACPX(t, agent, []string{"--max-tokens", "1"}, nil, "Say hello. "+string(mockllm.Text))
				if err := r.cmd.Run(); err != nil {
					t.Fatalf("acpx: %v", err)
				}
				if out := r.stdout.String(); !strings.Contains(out, "[done] max_tokens") {
					t.Errorf("acpx printed %q, want [done] max_tokens", out)
				}
				r.hubGone(t)
			})
		})
	}
}

// TestACPXCancel: acpx's Ctrl-C while the model hangs sends session/cancel;
// hub stops the agent, and nothing of the run is left once hub exits.
func TestACPXCancel(t *testing.T) {
	t.Parallel()
	for _, agent := range realAgents {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			r := newACPX(t, agent, nil, []string{"--format", "json"}, "Say hello. "+string(mockllm.Hang))
			if err := r.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The agent is running once the mock has its model call.
			for len(hubtest.ModelCalls(r.server)) == 0 {
				select {
				case <-t.Context().Done():
					t.Fatal("no model call")
				case <-time.After(20 * time.Millisecond):
				}
			}
			if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			_ = r.cmd.Wait() // acpx exits 1 or 130 after a cancel
			sent := false
			sc := bufio.NewScanner(bytes.NewReader(r.stdout.Bytes()))
			for sc.Scan() {
				sent = sent || strings.Contains(sc.Text(), `"method":"session/cancel"`)
			}
			if !sent {
				t.Errorf("acpx sent no session/cancel")
			}
			r.hubGone(t)
		})
	}
}

// TestACPXTimeout: hub's --timeout ends a hanging turn, and acpx shows the
// bin, reason and hint of hub's error.
func TestACPXTimeout(t *testing.T) {
	t.Parallel()
	r := newACPX(t, "opencode", []string{"--timeout", "2s"}, nil, "Say hello. "+string(mockllm.Hang))
	err := r.cmd.Run()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("acpx = %v, want a failure", err)
	}
	out := r.stdout.String() + r.stderr.String()
	if !strings.Contains(out, "timeout/wall: ") || !strings.Contains(out, "raise --timeout") {
		t.Errorf("acpx printed %q, want hub's timeout/wall error with its hint", out)
	}
	r.hubGone(t)
}

// TestACPXApprove (issue 36): hub acp --approve editor under acpx, each real
// agent read-only: the agent's question about a write reaches acpx as
// session/request_permission; with --approve-all the file is on disk, with
// --deny-all it is not, the prompt still ends (end_turn) and acpx exits 5,
// its "permission denied" status; nothing of the run is left once hub
// exits.
func TestACPXApprove(t *testing.T) {
	t.Parallel()
	writes := map[string]func(path string) string{
		"claude": func(p string) string {
			return `write it MOCK_CALL Write {"file_path":"` + p + `","content":"approved"}`
		},
		"codex": func(p string) string {
			return `write it MOCK_CALL apply_patch *** Begin Patch\n*** Add File: ` + filepath.Base(p) + `\n+approved\n*** End Patch`
		},
		"opencode": func(p string) string {
			return "Write it. " + string(mockllm.Call) + " " + hubtest.JSONCall("write", map[string]string{"filePath": p, "content": "approved"})
		},
		"pi": func(p string) string {
			return "Write it. " + string(mockllm.Call) + " " + hubtest.JSONCall("write", map[string]string{"path": p, "content": "approved"})
		},
	}
	for _, agent := range realAgents {
		for _, answer := range []string{"--approve-all", "--deny-all"} {
			t.Run(agent+answer, func(t *testing.T) {
				t.Parallel()
				// newACPX's working directory: dir/work, dir in the marker.
				r := newACPX(t, agent, []string{"--approve", "editor"}, []string{answer}, "")
				work := filepath.Join(strings.TrimPrefix(r.marker, "HUB_ACPX_TEST="), "work")
				path := filepath.Join(work, "asked.txt")
				r.cmd.Args[len(r.cmd.Args)-1] = writes[agent](path)
				// acpx exits 5 (its PERMISSION_DENIED) when it was asked and
				// every question was denied: proof the question reached it.
				err := r.cmd.Run()
				var ee *exec.ExitError
				switch code := 0; {
				case errors.As(err, &ee):
					code = ee.ExitCode()
					fallthrough
				case err == nil:
					if want := map[string]int{"--approve-all": 0, "--deny-all": 5}[answer]; code != want {
						t.Errorf("acpx %s exited %d, want %d", answer, code, want)
					}
				default:
					t.Fatalf("acpx: %v", err)
				}
				if out := r.stdout.String(); !strings.Contains(out, "[done] end_turn") || !strings.Contains(out, "session/request_permission") {
					t.Errorf("acpx printed %q, want the permission request and [done] end_turn", out)
				}
				b, err := os.ReadFile(path)
				if want := answer == "--approve-all"; (err == nil) != want || want && strings.TrimSpace(string(b)) != "approved" {
					t.Errorf("%s: asked.txt on disk %v (%q), want %v", answer, err == nil, b, want)
				}
				r.hubGone(t)
			})
		}
	}
}
