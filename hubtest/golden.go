package hubtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Transcripts is a directory of one agent's recorded transcripts and their
// golden output, as hub keeps them in testdata/<agent>: <scenario>.jsonl is
// the CLI's stdout byte for byte, <scenario>.exit its exit status or the
// name of the signal that ended it (none: 0), <scenario>.stderr its stderr,
// <scenario>.model the model it ran with (none: Model), and
// <scenario>.golden.jsonl the events hub makes of them.
type Transcripts struct {
	// Agent is the adapter that replays them; it must be registered.
	Agent string
	// Model is Request.Model for the replay ("" none), unless a .model
	// file names another.
	Model string
	// Dir holds the files; "" is testdata/<Agent> under [Root].
	Dir string
	// Update rewrites the golden files with what the replay produced
	// instead of comparing: pass the test's own -update flag.
	Update bool
}

func (tr Transcripts) dir() string {
	if tr.Dir != "" {
		return tr.Dir
	}
	return filepath.Join(Root(), "testdata", tr.Agent)
}

// Check replays every transcript in its own parallel subtest named after
// the scenario and fails that subtest when the stream is not valid
// (ValidateStream) or differs from the golden file byte for byte (both
// shown); a missing golden file is a fatal error that names -update. Check
// fails t when the directory holds no transcript.
func (tr Transcripts) Check(t *testing.T) {
	t.Helper()
	raws, _ := filepath.Glob(filepath.Join(tr.dir(), "*.jsonl"))
	n := 0
	for _, raw := range raws {
		if strings.HasSuffix(raw, ".golden.jsonl") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(raw), ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := tr.Replay(t, raw)
			if err := ValidateStream(got); err != nil {
				t.Errorf("replayed stream invalid: %v", err)
			}
			golden := strings.TrimSuffix(raw, ".jsonl") + ".golden.jsonl"
			if tr.Update {
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
		t.Fatalf("no transcripts in %s", tr.dir())
	}
}

// Replay normalizes the recorded transcript raw (a path; its .exit, .stderr
// and .model files beside it) through hub.Replay with a fixed clock
// and run id, cwd /golden, and returns the encoded events. It fails tb
// fatally if raw cannot be opened.
func (tr Transcripts) Replay(tb testing.TB, raw string) []byte {
	tb.Helper()
	f, err := os.Open(raw)
	if err != nil {
		tb.Fatal(err)
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
	model := tr.Model
	if b, err := os.ReadFile(base + ".model"); err == nil {
		model = strings.TrimSpace(string(b))
	}
	clock := func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }
	req := hub.Request{Agent: tr.Agent, Model: model, Cwd: "/golden"}
	var out bytes.Buffer
	enc := events.NewEncoder(&out)
	hub.Replay(tb.Context(), req, f, end, enc.Encode, hub.WithRunID("run_golden"), hub.WithClock(clock))
	return out.Bytes()
}
