package hub_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hubcli/hub"
	_ "github.com/hubcli/hub/adapters/all" // registers claude, codex, opencode and pi
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
)

// exampleAgent writes a scripted OpenCode (this test binary playing
// scenario) into a new directory and returns its path; a real program
// leaves Request.Bin empty to run opencode from PATH.
func exampleAgent(scenario string) (bin string, cleanup func()) {
	use(scenario)
	dir, err := os.MkdirTemp("", "hub-example")
	if err != nil {
		panic(err)
	}
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "opencode")
	script := fmt.Sprintf("#!/bin/sh\nGORACE=atexit_sleep_ms=0 HUB_FAKE_SCENARIO=%s exec %q \"$@\"\n", scenario, exe)
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		panic(err)
	}
	return bin, func() { os.RemoveAll(dir) }
}

func ExampleRun() {
	bin, cleanup := exampleAgent("ok")
	defer cleanup()
	req := hub.Request{Agent: "opencode", Prompt: "say hello", Bin: bin}
	req.Limits.Timeout = time.Minute
	fin := hub.Run(context.Background(), req, func(ev events.Event) error {
		fmt.Println(ev.Seq, ev.Type())
		return nil
	})
	fmt.Printf("ok=%v text=%q cost=$%.2f tokens=%d\n", fin.OK, fin.Text, *fin.CostUSD, fin.Usage.Sum())
	// Output:
	// 0 run.started
	// 1 session.started
	// 2 message
	// 3 usage
	// 4 run.finished
	// ok=true text="fake answer" cost=$0.25 tokens=18
}

func ExampleEvents() {
	bin, cleanup := exampleAgent("ok")
	defer cleanup()
	req := hub.Request{Agent: "opencode", Prompt: "say hello", Bin: bin}
	for ev, err := range hub.Events(context.Background(), req) {
		if err != nil {
			fmt.Println("run failed:", err)
			return
		}
		switch b := ev.Body.(type) {
		case events.Message:
			fmt.Println("answer:", b.Text)
		case events.RunFinished:
			fmt.Println("finished, ok:", b.OK)
		}
	}
	// Output:
	// answer: fake answer
	// finished, ok: true
}

func ExampleEvents_failure() {
	req := hub.Request{Agent: "opencode", Prompt: "say hello", Bin: "/nonexistent/opencode"}
	for ev, err := range hub.Events(context.Background(), req) {
		var e *events.Error
		if ev.Type() == events.TypeRunFinished && err != nil && errors.As(err, &e) {
			fmt.Printf("%s/%s (exit %d): %s\n", e.Bin, e.Reason, e.Bin.ExitCode(), e.Message)
		}
	}
	// Output:
	// not_installed/not_found (exit 3): /nonexistent/opencode: no such file
}

func ExampleReplay() {
	transcript := strings.Join([]string{
		`{"type":"step_start","timestamp":1,"sessionID":"ses_1","part":{"type":"step-start"}}`,
		`{"type":"text","timestamp":1,"sessionID":"ses_1","part":{"type":"text","text":"hi"}}`,
		`{"type":"step_finish","timestamp":1,"sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"input":3,"output":1,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}`,
	}, "\n")
	exit := 0
	clock := func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }
	enc := events.NewEncoder(os.Stdout)
	hub.Replay(context.Background(), hub.Request{Agent: "opencode", Cwd: "/work"},
		strings.NewReader(transcript), normalize.End{ExitCode: &exit},
		func(ev events.Event) error {
			if ev.Type() != events.TypeRunFinished {
				return nil
			}
			return enc.Encode(ev)
		},
		hub.WithRunID("run_example"), hub.WithClock(clock))
	// Output:
	// {"v":1,"seq":4,"ts":"2026-12-01T00:00:00.000Z","run_id":"run_example","agent":"opencode","type":"run.finished","ok":true,"error":null,"text":"hi","session_id":"ses_1","exit_code":0,"signal":null,"duration_ms":0,"turns":1,"tool_calls":0,"tool_calls_denied":0,"usage":{"input_tokens":3,"output_tokens":1,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"cost_usd":0.001},"cost_usd":0.001,"cost_source":"reported"}
}
