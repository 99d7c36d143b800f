package adapters_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
)

// TestBase: Name and Info come from the Info value; Detect probes the
// binary with Info's version arguments, minimum version and timeout.
func TestBase(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "agent")
	// Prints a version only for -V: --version would be unparseable.
	script := "#!/bin/sh\nif [ \"$1\" = -V ]; then echo 'agent 1.2.3'; else echo usage; fi\n"
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	info := adapters.Info{Name: "base-test", Binary: "agent", MinVersion: "1.2.0", VersionArgs: []string{"-V"}, ProbeTimeout: 30 * time.Second}
	b := adapters.NewBase(info)
	if b.Name() != "base-test" {
		t.Errorf("Name() = %q, want base-test", b.Name())
	}
	if got := b.Info(); got.Binary != "agent" || got.MinVersion != "1.2.0" || len(got.VersionArgs) != 1 || got.VersionArgs[0] != "-V" {
		t.Errorf("Info() = %+v, want the Info it was built from", got)
	}
	b.Info().VersionArgs[0] = "changed" // a copy
	inst, err := b.Detect(t.Context(), bin)
	if err != nil || inst.Version != "1.2.3" || inst.Path != bin {
		t.Errorf("Detect = %+v, %v; want version 1.2.3 at %s", inst, err, bin)
	}

	info.MinVersion = "2.0.0"
	_, err = adapters.NewBase(info).Detect(t.Context(), bin)
	var e *events.Error
	if !errors.As(err, &e) || e.Bin != events.BinUnsupportedVersion || e.Reason != events.ReasonTooOld {
		t.Errorf("Detect with MinVersion 2.0.0 = %v, want unsupported_version/too_old", err)
	}

	info.VersionArgs = nil // --version: "usage"
	_, err = adapters.NewBase(info).Detect(t.Context(), bin)
	if !errors.As(err, &e) || e.Reason != events.ReasonUnparseable {
		t.Errorf("Detect with --version = %v, want unsupported_version/unparseable", err)
	}
}

// TestNewBasePanics: an Info without a name, with a minimum or tested
// version that does not parse, or tested below its minimum is a bug of the
// adapter's package, caught at init.
func TestNewBasePanics(t *testing.T) {
	t.Parallel()
	adapters.NewBase(adapters.Info{Name: "x", MinVersion: "1.2.0", TestedVersion: "1.2.0"}) // equal is fine
	for _, info := range []adapters.Info{{Binary: "x"}, {Name: "x", MinVersion: "one"}, {Name: "x", TestedVersion: "one"},
		{Name: "x", MinVersion: "1.10.0", TestedVersion: "1.9.0"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewBase(%+v) did not panic", info)
				}
			}()
			adapters.NewBase(info)
		}()
	}
}
