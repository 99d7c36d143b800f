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
// regexp.MustCompile, when info has no Name, a MinVersion or TestedVersion
// that is not a version, or a TestedVersion older than MinVersion: it is
// meant for package initialization, where any of them is a bug.
func NewBase(info Info) Base {
	if info.Name == "" {
		panic("adapters: NewBase with empty Info.Name")
	}
	var min, tested *version.Version
	for _, v := range []struct {
		field, s string
		to       **version.Version
	}{{"MinVersion", info.MinVersion, &min}, {"TestedVersion", info.TestedVersion, &tested}} {
		if v.s == "" {
			continue
		}
		parsed, err := version.NewVersion(v.s)
		if err != nil {
			panic("adapters: NewBase(" + info.Name + "): " + v.field + ": " + err.Error())
		}
		*v.to = parsed
	}
	if min != nil && tested != nil && tested.LessThan(min) {
		panic("adapters: NewBase(" + info.Name + "): TestedVersion " + info.TestedVersion + " is older than MinVersion " + info.MinVersion)
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

// NewerThanTested reports whether have, a version Detect found, is newer
// than info.TestedVersion, the newest hub's tests run on. Such a version is
// not refused: unknown events and fields become notices, and `hub agents`
// says it was not tested. false when either is not a version.
func (info Info) NewerThanTested(have string) bool {
	h, err1 := version.NewVersion(have)
	t, err2 := version.NewVersion(info.TestedVersion)
	return err1 == nil && err2 == nil && info.TestedVersion != "" && h.GreaterThan(t)
}
