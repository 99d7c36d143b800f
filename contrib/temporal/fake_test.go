package hubtemporal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The fake agent: a shell script named opencode that answers --version as
// the OpenCode hub tests against and otherwise plays a body of OpenCode's
// JSON lines (run --format json), as cmd/hub's tests do (printf, not echo:
// dash's echo would turn a JSON string's \n into a line break). Each run (not the
// version probe) appends a line to the file runs beside the script, and the
// body sees the run's number, from 1, in $n.

const fakeVersion = "1.18.33"

// The bodies the tests play; lines as testdata/opencode/*.jsonl has them.
const (
	// okBody: a tool call, two model steps (7 and 5 tokens, $0.001 and
	// $0.002) and the answer.
	okBody = `printf '%s\n' '{"type":"step_start","sessionID":"ses_x","part":{}}'
printf '%s\n' '{"type":"tool_use","sessionID":"ses_x","part":{"type":"tool","tool":"bash","callID":"call_1","state":{"status":"completed","input":{"command":"echo hi"},"output":"hi\n","metadata":{"exit":0}}}}'
printf '%s\n' '{"type":"step_finish","sessionID":"ses_x","part":{"reason":"tool-calls","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'
printf '%s\n' '{"type":"step_start","sessionID":"ses_x","part":{}}'
printf '%s\n' '{"type":"text","sessionID":"ses_x","part":{"type":"text","text":"the answer"}}'
printf '%s\n' '{"type":"step_finish","sessionID":"ses_x","part":{"reason":"stop","tokens":{"input":2,"output":3,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.002}}'`

	// authBody: OpenCode's error event for an HTTP 401 (testdata/opencode/401.jsonl).
	authBody = `printf '%s\n' '{"type":"error","sessionID":"ses_401","error":{"name":"APIError","data":{"message":"Incorrect API key provided","statusCode":401,"isRetryable":false,"responseHeaders":{"content-type":"application/json"},"responseBody":"{}"}}}'
exit 1`

	// rateLimitBody: OpenCode's error event for an HTTP 429 with a
	// retry-after of 30 s (testdata/opencode/429.jsonl).
	rateLimitBody = `printf '%s\n' '{"type":"error","sessionID":"ses_429","error":{"name":"APIError","data":{"message":"Rate limit reached for requests","statusCode":429,"isRetryable":true,"responseHeaders":{"content-type":"application/json","retry-after":"30","retry-after-ms":"30000"},"responseBody":"{}"}}}'
exit 1`
)

// hangBody returns a body that writes its pid to pidFile and its child's
// (a sleep, in the same process group) to childFile, then starts a step
// (session ses_hang) and hangs.
func hangBody(pidFile, childFile string) string {
	return `echo $$ > ` + pidFile + `
sleep 300 &
echo $! > ` + childFile + `
printf '%s\n' '{"type":"step_start","sessionID":"ses_hang","part":{}}'
wait`
}

// fakeAgent writes the fake opencode playing body into a new directory and
// returns its path.
func fakeAgent(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "opencode")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo " + fakeVersion + "; exit 0; fi\n" +
		"echo run >> \"$(dirname \"$0\")/runs\"\nn=$(wc -l < \"$(dirname \"$0\")/runs\")\n" + body + "\n"
	if err := writeScript(path, []byte(script)); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeScript writes an executable file while no fork can inherit its
// descriptor open for writing (which makes exec fail with ETXTBSY).
func writeScript(path string, data []byte) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, data, 0o755)
}

// firstThenBody returns a body that plays first on its first run and then
// on every later one.
func firstThenBody(first, then string) string {
	return "if [ \"$n\" -eq 1 ]; then\n" + first + "\nfi\n" + then
}

// runs returns how many times the fake agent at bin ran (not counting its
// version probe).
func runs(t *testing.T, bin string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "runs"))
	if os.IsNotExist(err) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// readPID waits up to d for path to hold a pid and returns it.
func readPID(t *testing.T, path string, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		b, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s after %v", path, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a process that has not exited: it exists
// and is not a zombie (signal 0 succeeds on a zombie too, so /proc says).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// liveInGroup returns the pids of the processes of group pgid that have not
// exited, from /proc.
func liveInGroup(t *testing.T, pgid int) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	var live []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After ") ": state ppid pgrp …
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			live = append(live, pid)
		}
	}
	return live
}

// waitGone waits up to d for pids to have exited and fails the test for
// each that has not.
func waitGone(t *testing.T, d time.Duration, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes %v still running %v after the run stopped", left, d)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
