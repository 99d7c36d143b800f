package adapters

import (
	"context"
	"maps"
	"slices"

	"github.com/hashicorp/go-version"
)

// Base supplies the Name, Info and Detect methods of an Adapter from one
// Info value, so that an agent's package writes only Command and
// NewDecoder:
//
//	type Adapter struct{ adapters.Base }
//
//	func init() { adapters.Register(&Adapter{adapters.NewBase(info)}) }
//
// A Base is immutable and safe for concurrent use. The zero Base has an
// empty Info: Register refuses it (empty name).
type Base struct{ info Info }

// NewBase returns the Base of the agent info describes. It panics, like
// regexp.MustCompile, when info has no Name or a MinVersion that is not a
// version: it is meant for package initialization, where either is a bug.
func NewBase(info Info) Base {
	if info.Name == "" {
		panic("adapters: NewBase with empty Info.Name")
	}
	if info.MinVersion != "" {
		if _, err := version.NewVersion(info.MinVersion); err != nil {
			panic("adapters: NewBase(" + info.Name + "): MinVersion: " + err.Error())
		}
	}
	info.VersionArgs = slices.Clone(info.VersionArgs) // the caller's slice stays the caller's
	info.Grants = maps.Clone(info.Grants)
	return Base{info: info}
}

// Name implements Adapter: Info.Name.
func (b Base) Name() string { return b.info.Name }

// Info implements Adapter.
func (b Base) Info() Info {
	info := b.info
	info.VersionArgs = slices.Clone(info.VersionArgs)
	info.Grants = maps.Clone(info.Grants)
	return info
}

// Detect implements Adapter with a VersionProbe of Info (Info.VersionArgs,
// Info.ProbeTimeout): see VersionProbe.Detect. It blocks until the version
// command has exited or been killed, at most Info.ProbeTimeout.
func (b Base) Detect(ctx context.Context, bin string) (Install, error) {
	return VersionProbe{Info: b.info, Args: b.info.VersionArgs, Timeout: b.info.ProbeTimeout}.Detect(ctx, bin)
}
