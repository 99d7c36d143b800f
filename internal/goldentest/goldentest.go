// Package goldentest replays recorded agent transcripts
// (testdata/<agent>/<scenario>.jsonl, with .exit and .stderr beside them)
// through adapters.Replay and compares the normalized events with
// <scenario>.golden.jsonl. Rewrite the golden files with -update.
package goldentest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/realcli"
	"github.com/hubcli/hub/internal/schematest"
	"github.com/hubcli/hub/normalize"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// Check replays every transcript of agent (its adapter must be registered)
// and compares with the golden files; it fails when there are none.
func Check(t *testing.T, agent, model string) {
	dir := filepath.Join(realcli.Root(), "testdata", agent)
	raws, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	n := 0
	for _, raw := range raws {
		if strings.HasSuffix(raw, ".golden.jsonl") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(raw), ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := Replay(t, agent, model, raw)
			if err := schematest.ValidateStream(got); err != nil {
				t.Errorf("replayed stream invalid: %v", err)
			}
			golden := strings.TrimSuffix(raw, ".jsonl") + ".golden.jsonl"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Replay(%s) differs from %s:\n got: %s\nwant: %s", name, filepath.Base(golden), got, want)
			}
		})
	}
	if n == 0 {
		t.Fatalf("no transcripts in %s", dir)
	}
}

// Replay normalizes one recorded transcript with a fixed clock and run id.
// The .exit file holds the exit status or the name of the signal that ended
// the process (who sent it is not recorded); no .exit means 0. A .model file
// names the model the transcript was recorded with, in place of model.
func Replay(t *testing.T, agent, model, raw string) []byte {
	t.Helper()
	f, err := os.Open(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base := strings.TrimSuffix(raw, ".jsonl")
	var end normalize.End
	if b, err := os.ReadFile(base + ".exit"); err == nil {
		s := strings.TrimSpace(string(b))
		if code, err := strconv.Atoi(s); err == nil {
			end.ExitCode = &code
		} else {
			end.Signal = s
		}
	} else {
		zero := 0
		end.ExitCode = &zero
	}
	if b, err := os.ReadFile(base + ".stderr"); err == nil {
		end.Stderr = string(b)
	}
	if b, err := os.ReadFile(base + ".model"); err == nil {
		model = strings.TrimSpace(string(b))
	}
	clock := func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }
	req := adapters.Request{Agent: agent, Model: model, Cwd: "/golden"}
	var out bytes.Buffer
	enc := events.NewEncoder(&out)
	adapters.Replay(t.Context(), req, f, end, enc.Encode, adapters.WithRunID("run_golden"), adapters.WithClock(clock))
	return out.Bytes()
}
