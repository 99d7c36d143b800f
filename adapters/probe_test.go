package adapters_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/internal/proc"
)

// TestProbeLeavesNothing: a version command that detaches a daemon (a
// background update check in a session of its own, ignoring SIGTERM) and
// exits: the probe succeeds and the daemon is killed with it, whatever
// follows (here no agent is started at all).
func TestProbeLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "daemon")
	bin := filepath.Join(dir, "agent")
	script := "#!/bin/sh\n( setsid sh -c 'trap \"\" TERM; echo $$ > " + pidfile + "; exec sleep 300' </dev/null >/dev/null 2>&1 & )\n" +
		"while [ ! -s " + pidfile + " ]; do sleep 0.01; done\necho 1.18.33\n"
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	probe := adapters.VersionProbe{Info: adapters.Info{Name: "x", Binary: "agent", MinVersion: "1.0.0"}}
	inst, err := probe.Detect(t.Context(), bin)
	if err != nil || inst.Version != "1.18.33" {
		t.Fatalf("Detect = %+v, %v; want version 1.18.33", inst, err)
	}
	b, err := os.ReadFile(pidfile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil {
		t.Fatalf("daemon pid file %q: %v %v", b, err, perr)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) && proc.Running(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the version command's daemon %d is still running after Detect", pid)
	}
}

// TestRunCancelledBeforeStart: a run whose context is already done starts
// nothing — not even the version command — and ends with the cause.
func TestRunCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin, ran := filepath.Join(dir, "opencode"), filepath.Join(dir, "ran")
	if err := hubtest.WriteScript(bin, []byte("#!/bin/sh\necho \"$@\" >> "+ran+"\necho 1.18.33\n")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := events.NewError(events.BinInvalidInput, "prompt_too_large", "use a smaller prompt", "prompt too large")
	cancel(cause)
	fin := hub.Run(ctx, hub.Request{Agent: "opencode", Bin: bin, Prompt: "x"}, func(events.Event) error { return nil })
	if fin.OK || fin.Error == nil || fin.Error.Reason != "prompt_too_large" {
		t.Errorf("run.finished %+v, want the cause's error", fin.Error)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("the agent's binary ran (%q) for a run cancelled before it started", b)
	}
}
