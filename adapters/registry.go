package adapters

import (
	"fmt"
	"slices"
	"sync"
)

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
		return nil, fmt.Errorf("adapters: unknown agent %q (known: %v)", name, namesLocked())
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
