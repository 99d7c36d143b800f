package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// ranAgent returns a fake agent that creates marker when it runs (not for
// its version probe) and then answers, and the marker's path.
func ranAgent(t *testing.T) (bin, marker string) {
	t.Helper()
	marker = filepath.Join(t.TempDir(), "ran")
	return fakeAgent(t, "touch "+marker+"\n"+okBody), marker
}

// lastEvent is the run.finished line of a jsonl stdout.
func lastEvent(t *testing.T, stdout string) events.RunFinished {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var fin struct {
		Type string `json:"type"`
		events.RunFinished
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &fin); err != nil || fin.Type != "run.finished" {
		t.Fatalf("last line %q is not run.finished (%v)", lines[len(lines)-1], err)
	}
	return fin.RunFinished
}

func TestPermissionFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--permission", "write"},
		{"--auth", "key"},
		{"--confirm", "--yes"},
	} {
		code, _, stderr := hubCLI(t, "", append(append([]string{"run", "--agent", "opencode"}, args...), "x")...)
		if code != 2 || !strings.Contains(stderr, "--") {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming the flag", args, code, stderr)
		}
	}
}

// TestPermissionFullNeedsApproval checks that --permission full starts
// nothing without --confirm or --yes (permission_denied/
// confirmation_required, exit 6, run.finished written), and runs with --yes.
func TestPermissionFullNeedsApproval(t *testing.T) {
	bin, marker := ranAgent(t)
	code, stdout, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--permission", "full", "x")
	if code != 6 {
		t.Fatalf("exit %d, want 6; stderr %s", code, stderr)
	}
	if fin := lastEvent(t, stdout); fin.Error == nil || fin.Error.Reason != events.ReasonConfirmationRequired || !strings.Contains(fin.Error.Hint, "--yes") {
		t.Errorf("run.finished error %+v, want confirmation_required with a hint naming --yes", fin.Error)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent ran without approval")
	}
	code, stdout, stderr = hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--permission", "full", "--yes", "x")
	if code != 0 {
		t.Fatalf("--yes: exit %d, stderr %s", code, stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("--yes: the agent did not run")
	}
	_ = stdout
}

// TestConfirmNoTerminal runs hub in a session of its own, without a
// controlling terminal (as under CI): --confirm refuses and starts nothing.
func TestConfirmNoTerminal(t *testing.T) {
	bin, marker := ranAgent(t)
	h := startHubWith(t, nil, &syscall.SysProcAttr{Setsid: true}, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--confirm", "x")
	h.wait(t, time.Minute)
	if code := h.cmd.ProcessState.ExitCode(); code != 6 {
		t.Fatalf("exit %d, want 6; stderr %s", code, h.stderr.String())
	}
	fin := lastEvent(t, h.stdout.String())
	if fin.Error == nil || fin.Error.Reason != events.ReasonConfirmationRequired || !strings.Contains(fin.Error.Message, "terminal") {
		t.Errorf("run.finished error %+v, want confirmation_required saying there is no terminal", fin.Error)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent ran without a confirmation")
	}
}

// TestConfirmTerminal answers --confirm's question on a real pseudo
// terminal, hub's controlling terminal: "y" runs the agent, anything else
// refuses; the question shows the grant.
func TestConfirmTerminal(t *testing.T) {
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			bin, marker := ranAgent(t)
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pseudo terminal here: %v", err)
			}
			defer ptmx.Close()
			h := startHubWith(t, tty, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0},
				"run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--confirm", "--permission", "full", "--timeout", "5m", "x")
			tty.Close()
			asked := readUntil(t, ptmx, "[y/N] ")
			for _, want := range []string{"opencode", "permission:", "full (native", "limits:", "timeout 5m0s", "auth:", "inherit"} {
				if !strings.Contains(asked, want) {
					t.Errorf("question %q lacks %q", asked, want)
				}
			}
			if _, err := ptmx.WriteString(answer + "\n"); err != nil {
				t.Fatal(err)
			}
			h.wait(t, time.Minute)
			_, ranErr := os.Stat(marker)
			code := h.cmd.ProcessState.ExitCode()
			if answer == "y" && (code != 0 || ranErr != nil) {
				t.Errorf("answered y: exit %d, agent ran: %v; stderr %s", code, ranErr == nil, h.stderr.String())
			}
			if answer == "n" && (code != 6 || ranErr == nil || lastEvent(t, h.stdout.String()).Error.Reason != events.ReasonConfirmationRequired) {
				t.Errorf("answered n: exit %d, agent ran: %v; want 6 and nothing run", code, ranErr == nil)
			}
		})
	}
}

// readUntil reads the terminal until it has shown want, or a minute passed.
func readUntil(t *testing.T, ptmx *os.File, want string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		r := bufio.NewReader(ptmx)
		for !strings.Contains(b.String(), want) {
			c, err := r.ReadByte()
			if err != nil {
				break
			}
			b.WriteByte(c)
		}
		got <- b.String()
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(time.Minute):
		t.Fatalf("the terminal never showed %q", want)
		return ""
	}
}

// TestAuthLoginHint checks that a run with --auth login that fails to
// authenticate names the CLI's login command.
func TestAuthLoginHint(t *testing.T) {
	body := `echo '{"type":"error","sessionID":"ses_x","error":{"name":"APIError","data":{"message":"Unauthorized: invalid x-api-key","statusCode":401}}}'; exit 1`
	code, stdout, _ := hubCLI(t, "", "run", "--agent", "opencode", "--bin", fakeAgent(t, body), "--output", "jsonl", "--auth", "login", "x")
	fin := lastEvent(t, stdout)
	if code != 7 || fin.Error == nil || fin.Error.Reason != events.ReasonAuth || !strings.Contains(fin.Error.Hint, "opencode auth login") {
		t.Errorf("exit %d, error %+v: want unavailable/auth with a hint naming `opencode auth login`", code, fin.Error)
	}
}

// TestReadmePermissionTable checks that docs/permissions.md holds the
// agent × level table as the adapters declare it (hub agents --permissions).
func TestReadmePermissionTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/permissions.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), permissionTable()) {
		t.Errorf("docs/permissions.md does not hold the table `hub agents --permissions` prints; paste it in:\n%s", permissionTable())
	}
}

// TestGrantSummaryEscapes checks that --confirm's question shows a value
// holding control characters quoted, so it cannot redraw the terminal.
func TestGrantSummaryEscapes(t *testing.T) {
	s := grantSummary(hub.Request{Agent: "opencode", Model: "m\x1b[2J\nfake: line", Cwd: "/tmp"}, grant.Rule{Level: grant.Full})
	if strings.Contains(s, "\x1b") || !strings.Contains(s, `"m\x1b[2J\nfake: line"`) {
		t.Errorf("summary shows the model unquoted:\n%s", s)
	}
}
