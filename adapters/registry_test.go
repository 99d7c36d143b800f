package adapters_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	_ "github.com/hubcli/hub/adapters/opencode" // registered, for the registry and probe tests
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
)

type named string

func (n named) Name() string                                  { return string(n) }
func (n named) Info() adapters.Info                           { return adapters.Info{} }
func (n named) NewDecoder(adapters.Request) normalize.Decoder { return nil }
func (n named) Detect(context.Context, string) (adapters.Install, error) {
	return adapters.Install{}, nil
}
func (n named) Command(adapters.Request, adapters.Install) (adapters.Command, error) {
	return adapters.Command{}, nil
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	adapters.Register(named("zz-test"))
	adapters.Register(named("aa-test"))
	names := adapters.Names()
	if !slices.IsSorted(names) || !slices.Contains(names, "zz-test") || !slices.Contains(names, "opencode") {
		t.Errorf("Names() = %v, want sorted, with opencode and the test adapters", names)
	}
	if _, err := adapters.Lookup("zz-test"); err != nil {
		t.Errorf("Lookup(zz-test) = %v", err)
	}
	if _, err := adapters.Lookup("missing"); err == nil || !strings.Contains(err.Error(), `_ "github.com/hubcli/hub/adapters/all"`) {
		t.Errorf("Lookup(missing) = %v, want an error that names the package registering the built-in agents", err)
	}
	for _, name := range []string{"zz-test", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			adapters.Register(named(name))
		}()
	}
}

// TestProbeTimeout: a version command that prints nothing in time is
// timeout/idle (retryable: an overloaded machine), not an unsupported
// version, and is killed.
func TestProbeTimeout(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agent")
	if err := hubtest.WriteScript(bin, []byte("#!/bin/sh\nexec sleep 30\n")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := adapters.VersionProbe{Info: adapters.Info{Binary: "agent"}, Timeout: 300 * time.Millisecond}.Detect(t.Context(), bin)
	var e *events.Error
	if !errors.As(err, &e) || e.Bin != events.BinTimeout || e.Reason != events.ReasonIdle || !e.Retryable {
		t.Fatalf("err = %#v, want retryable timeout/idle", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("probe took %s, want about its 300ms timeout", took)
	}
}

// TestProbeFails: a version command that exits non-zero is a broken install
// even when its output holds something like a version (a Node crash trace
// ends in "Node.js v20.20.2"); the message keeps the agent's error line.
func TestProbeFails(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agent")
	script := "#!/bin/sh\necho 'file:///x/bin/codex.js:100' >&2\necho 'Error: Missing optional dependency @openai/codex-linux-x64. Reinstall Codex.' >&2\necho 'Node.js v20.20.2' >&2\nexit 1\n"
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	inst, err := adapters.VersionProbe{Info: adapters.Info{Binary: "agent", InstallHint: "npm i -g agent"}}.Detect(t.Context(), bin)
	var e *events.Error
	if !errors.As(err, &e) || e.Bin != events.BinNotInstalled || e.Reason != events.ReasonNotExecutable {
		t.Fatalf("Detect = %+v, %v; want not_installed/not_executable", inst, err)
	}
	if !strings.Contains(e.Message, "Missing optional dependency") || !strings.Contains(e.Hint, "npm i -g agent") || inst.Version != "" {
		t.Errorf("error %q (hint %q), version %q: want the agent's error line, the install hint and no version", e.Message, e.Hint, inst.Version)
	}
}
