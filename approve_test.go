package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
)

// unasking is OpenCode as an agent whose CLI cannot ask hub before its tool
// calls: its one-shot `opencode run` only (an adapters.Adapter, no
// adapters.Sessioner).
type unasking struct{ adapters.Adapter }

const unaskingName = "opencode-unasking"

func (unasking) Name() string { return unaskingName }

func (u unasking) Info() adapters.Info {
	info := u.Adapter.Info()
	info.Name = unaskingName
	return info
}

func init() {
	oc, err := adapters.Lookup("opencode")
	if err != nil {
		panic(err)
	}
	adapters.Register(unasking{oc})
}

// TestApproverRefusedAgent: an agent whose CLI cannot ask hub before its
// tool calls is refused an approver before it starts (its binary asked
// only --version), by hub.Run and hub.NewSession alike, with
// invalid_input/bad_request; hub.CanApprove says so ahead.
func TestApproverRefusedAgent(t *testing.T) {
	t.Parallel()
	if hub.CanApprove(unaskingName) {
		t.Errorf("CanApprove(%q) = true, want false", unaskingName)
	}
	if !hub.CanApprove("opencode") {
		t.Errorf("CanApprove(opencode) = false, want true")
	}
	approve := hub.WithApprover(func(context.Context, hub.ToolCall) hub.Decision { return hub.Decision{Verdict: hub.AllowOnce} })
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	bin := filepath.Join(dir, "opencode")
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = --version ] && { echo 1.18.33; exit 0; }\necho \"$@\" >> %q\n", ran)
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	req := hub.Request{Agent: unaskingName, Bin: bin, Cwd: dir, Prompt: "hi"}
	fin := hub.Run(t.Context(), req, func(events.Event) error { return nil }, approve)
	if fin.OK || fin.Error == nil || fin.Error.Bin != events.BinInvalidInput || fin.Error.Reason != events.ReasonBadRequest {
		t.Errorf("hub.Run: %+v, want invalid_input/bad_request", fin.Error)
	}
	if _, err := hub.NewSession(t.Context(), req, approve); err == nil {
		t.Errorf("hub.NewSession with an approver: no error, want invalid_input/bad_request")
	} else if e, ok := err.(*events.Error); !ok || e.Bin != events.BinInvalidInput {
		t.Errorf("hub.NewSession: %v, want invalid_input", err)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("the agent was started: %q", b)
	}
}
