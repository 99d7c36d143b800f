package adapters_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
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
	if _, err := adapters.Lookup("missing"); err == nil {
		t.Errorf("Lookup(missing) = nil error, want one")
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
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
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
