package adapters

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
)

// Permission is what a run's agent may do (SPEC §6.1), granted before the
// agent starts. The zero value means PermissionReadOnly.
type Permission string

// The permission levels, from the least to the most granted.
const (
	// PermissionNone grants no tool at all: the model only reasons (for
	// callers that run tools themselves).
	PermissionNone Permission = "none"
	// PermissionReadOnly grants reading and searching the working tree: no
	// write, no edit, no shell command that could write.
	PermissionReadOnly Permission = "read-only"
	// PermissionWorkspaceWrite grants changing files under the run's
	// working directory (Request.Cwd), nothing outside it.
	PermissionWorkspaceWrite Permission = "workspace-write"
	// PermissionFull grants anything the CLI can do.
	PermissionFull Permission = "full"
)

// Permissions are the levels in order, the least granted first.
var Permissions = []Permission{PermissionNone, PermissionReadOnly, PermissionWorkspaceWrite, PermissionFull}

// ParsePermission returns the level named s (one of Permissions, as the
// --permission flag spells them). Any other s is an error naming the levels.
func ParsePermission(s string) (Permission, error) {
	p := Permission(s)
	if slices.Contains(Permissions, p) {
		return p, nil
	}
	names := make([]string, len(Permissions))
	for i, l := range Permissions {
		names[i] = string(l)
	}
	return "", fmt.Errorf("permission %q: want one of %s", s, strings.Join(names, ", "))
}

// OrDefault returns p, or PermissionReadOnly when p is "".
func (p Permission) OrDefault() Permission {
	if p == "" {
		return PermissionReadOnly
	}
	return p
}

// Enforcement is how an agent holds a run to a permission level.
type Enforcement string

const (
	// Native: the CLI's own mechanism (its tool allowlist, permission mode or
	// sandbox) keeps what the level forbids from running; hub's watch of the
	// tool events (see Guard) is a second line.
	Native Enforcement = "native"
	// Watched: the CLI cannot be told the level, or only in part; hub stops
	// the run at the first tool event outside it. A tool the CLI reports
	// only once it has run has then already run.
	Watched Enforcement = "watched"
	// Refused: the agent cannot be held to the level; a run asking for it
	// is refused before anything starts (permission_denied/
	// effect_not_granted).
	Refused Enforcement = "refused"
)

// Grant is how one agent honours one permission level: what Info.Grants
// holds, and what the CLI's --confirm prompt shows.
type Grant struct {
	Level Permission  `json:"level"`
	How   Enforcement `json:"how"`
	// Means is what hub passes the CLI for the level (flags, config,
	// environment), for people reading the table.
	Means string `json:"means"`
	// Note is what the mechanism does not cover; for Refused, what to use
	// instead.
	Note string `json:"note,omitempty"`
	// Confined are the tool kinds beyond the level's own (see allowedKinds)
	// that the CLI itself holds to the level, so the watch lets their calls
	// through: a shell in Codex's sandbox, Claude Code's Bash under
	// acceptEdits. Under PermissionNone nothing passes.
	Confined []events.ToolKind `json:"confined,omitempty"`
}

// grantFor returns the grant of level in info, or the run's error when the
// agent refuses the level or info has no entry for it (an adapter that
// does not say how it holds a level cannot be trusted with it).
func grantFor(info Info, level Permission) (Grant, *events.Error) {
	g, ok := info.Grants[level]
	if !ok {
		return Grant{}, events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
			"run it with another --permission, or report that the adapter lacks the level",
			"%s: hub does not know how to hold %s to --permission %s, so it does not run it", info.Name, info.Name, level)
	}
	if g.How == Refused {
		return g, events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted, g.Note,
			"%s cannot be held to --permission %s, so hub does not run it with a weaker grant", info.Name, level)
	}
	g.Level = level
	return g, nil
}

// allowedKinds are the tool kinds a level lets through hub's watch without
// the CLI's help: none for none; reading, searching and the web (no change
// to the machine) for read-only; those and writes and edits (whose paths
// are checked) for workspace-write. Shells, sub-agents and MCP tools can do
// anything, so they pass only where the CLI confines them (Grant.Confined).
// Full lets everything through.
func allowedKinds(level Permission) []events.ToolKind {
	switch level {
	case PermissionReadOnly:
		return []events.ToolKind{events.ToolRead, events.ToolSearch, events.ToolWeb, events.ToolOther}
	case PermissionWorkspaceWrite:
		return []events.ToolKind{events.ToolRead, events.ToolSearch, events.ToolWeb, events.ToolOther, events.ToolWrite, events.ToolEdit}
	}
	return nil
}

// permissionGuard is hub's watch of a run's tool calls against its grant
// (SPEC §6.1): a call of a kind the level does not grant, or under
// workspace-write a write or edit whose path resolves outside the working
// directory, stops the run at its tool.started as
// permission_denied/effect_not_granted.
type permissionGuard struct {
	agent string
	g     Grant
	root  string // the working directory, absolute, symbolic links resolved
}

func newPermissionGuard(agent string, g Grant, cwd string) *permissionGuard {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		abs = cwd
	}
	return &permissionGuard{agent: agent, g: g, root: realPath(abs)}
}

func (w *permissionGuard) Check(b events.Body) *events.Error {
	st, ok := b.(events.ToolStarted)
	if !ok || w.g.Level == PermissionFull {
		return nil
	}
	confined := w.g.Level != PermissionNone && slices.Contains(w.g.Confined, st.Kind)
	if !slices.Contains(allowedKinds(w.g.Level), st.Kind) && !confined {
		return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted, w.hint(st.Kind),
			"%s called tool %s (kind %s), which --permission %s does not grant; hub stopped the run at that call",
			w.agent, st.Name, st.Kind, w.g.Level)
	}
	if w.g.Level != PermissionWorkspaceWrite || st.Kind != events.ToolWrite && st.Kind != events.ToolEdit {
		return nil
	}
	for _, p := range inputPaths(st.Input) {
		abs := p
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(w.root, abs)
		}
		if real := realPath(abs); !within(w.root, real) {
			return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
				"give the agent a --cwd that holds every file it should change, or use --permission full (with --yes)",
				"%s called %s on %s, which resolves to %s, outside the working directory %s that --permission workspace-write grants; hub stopped the run at that call",
				w.agent, st.Name, p, real, w.root)
		}
	}
	return nil
}

// hint is the next step after a call of kind was refused.
func (w *permissionGuard) hint(kind events.ToolKind) string {
	switch {
	case w.g.Level == PermissionNone:
		return "run it with --permission read-only (or more), or ask for an answer that needs no tool"
	case kind == events.ToolWrite || kind == events.ToolEdit:
		return "grant writes with --permission workspace-write, or ask for a task that changes nothing"
	}
	return fmt.Sprintf("%s tools need --permission full (with --confirm or --yes) for this agent", kind)
}

// inputPaths are the paths a write or edit call names in its input: the
// agents' own keys (Claude Code file_path and notebook_path, OpenCode
// filePath, pi path) and Codex's file_change changes[].path. Inputs that
// name none (a patch text) are left to the CLI's own enforcement.
func inputPaths(input []byte) []string {
	var out []string
	r := gjson.ParseBytes(input)
	for _, k := range []string{"file_path", "filePath", "path", "notebook_path"} {
		if v := r.Get(k); v.Type == gjson.String && v.Str != "" {
			out = append(out, v.Str)
		}
	}
	for _, c := range r.Get("changes").Array() {
		if v := c.Get("path"); v.Type == gjson.String && v.Str != "" {
			out = append(out, v.Str)
		}
	}
	return out
}

// realPath is p (absolute) with every symbolic link resolved, also where
// the path does not exist yet: its longest existing prefix is resolved and
// the rest appended, and a dangling link is followed to where a write
// through it would land. At most 40 links are followed, as the kernel
// does (ELOOP).
func realPath(p string) string { return resolveLinks(filepath.Clean(p), 0) }

func resolveLinks(p string, hops int) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	if hops < 40 {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if t, err := os.Readlink(p); err == nil {
				if !filepath.IsAbs(t) {
					t = filepath.Join(filepath.Dir(p), t)
				}
				return resolveLinks(filepath.Clean(t), hops+1)
			}
		}
	}
	dir := filepath.Dir(p)
	if dir == p {
		return p
	}
	return filepath.Join(resolveLinks(dir, hops), filepath.Base(p))
}

// within reports whether p is root or below it (both clean and absolute).
func within(root, p string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+string(filepath.Separator))
}

// CheckLinks refuses a working directory (dir, "" for hub's) that holds a
// symbolic link leading outside it, for an agent whose CLI checks the
// paths of its writes without resolving links (OpenCode's
// external_directory rule): a write through such a link would land outside
// the grant. The error is permission_denied/effect_not_granted naming the
// first link found; a directory that cannot be read is skipped (the agent
// cannot write there either). It reads the whole tree: 0.11 s for the
// 21,343 entries of hub's .tools (npm packages, warm cache, 2 busy cores).
func CheckLinks(agent, dir string) error {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	root := realPath(abs)
	var found, target string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if t := realPath(p); !within(root, t) {
			found, target = p, t
			return fs.SkipAll
		}
		return nil
	})
	if found == "" {
		return nil
	}
	return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
		"remove the link or point --cwd at a tree without one, or use --permission full (with --yes)",
		"%s checks its writes without resolving symbolic links, and %s leads outside the working directory (to %s): --permission workspace-write cannot be held, so hub does not run it",
		agent, found, target)
}
