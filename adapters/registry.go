package adapters

import (
	"fmt"
	"slices"
	"sync"
)

// AllPackage is the package whose import registers every built-in agent.
const AllPackage = "github.com/hubcli/hub/adapters/all"

var (
	regMu    sync.RWMutex
	registry = map[string]Adapter{}
)

// Register makes a available under a.Name(). It panics if the name is empty
// or already registered, like database/sql.Register. Adapter packages call it
// from init; nothing else does.
func Register(a Adapter) {
	regMu.Lock()
	defer regMu.Unlock()
	name := a.Name()
	if name == "" {
		panic("adapters: Register with empty name")
	}
	if _, dup := registry[name]; dup {
		panic("adapters: Register called twice for " + name)
	}
	registry[name] = a
}

// Lookup returns the adapter registered as name.
func Lookup(name string) (Adapter, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	a, ok := registry[name]
	if !ok {
		if len(registry) == 0 {
			return nil, fmt.Errorf("adapters: unknown agent %q: no agent is registered; the built-in agents register when the program imports _ %q", name, AllPackage)
		}
		return nil, fmt.Errorf("adapters: unknown agent %q (known: %v; the built-in agents register when the program imports _ %q)", name, namesLocked(), AllPackage)
	}
	return a, nil
}

// Names returns the registered adapter names, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
