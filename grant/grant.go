// Package grant is what a run's agent may do and how each agent is held to
// it (SPEC §6.1): the permission levels (Level: none, read-only,
// workspace-write, full), the rule by which one agent holds one level
// (Rule, Enforcement: native, watched, refused; the agent × level table
// each adapter fills in adapters.Info.Grants), the watch that checks every
// tool call against the grant (Watch) with the kernel's path resolution
// (RealPath, Within, CheckLinks), and how the agent authenticates (Auth:
// inherit or login, and BilledKeys, the variables login removes).
//
// It runs nothing: the run engine (package hub) decides a run's grant with
// For before anything starts and gives the Watch every event.
package grant

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Level is what a run's agent may do (SPEC §6.1), granted before the
// agent starts. The zero value means ReadOnly.
type Level string

// The permission levels, from the least to the most granted.
const (
	// None grants no tool at all: the model only reasons (for
	// callers that run tools themselves).
	None Level = "none"
	// ReadOnly grants reading and searching the working tree: no
	// write, no edit, no shell command that could write.
	ReadOnly Level = "read-only"
	// WorkspaceWrite grants changing files under the run's
	// working directory (Request.Cwd), nothing outside it.
	WorkspaceWrite Level = "workspace-write"
	// Full grants anything the CLI can do.
	Full Level = "full"
)

// Levels are the levels in order, the least granted first.
var Levels = []Level{None, ReadOnly, WorkspaceWrite, Full}

// ParseLevel returns the level named s (one of Levels, as the
// --permission flag spells them). Any other s is an error naming the levels.
func ParseLevel(s string) (Level, error) {
	p := Level(s)
	if slices.Contains(Levels, p) {
		return p, nil
	}
	names := make([]string, len(Levels))
	for i, l := range Levels {
		names[i] = string(l)
	}
	return "", fmt.Errorf("permission %q: want one of %s", s, strings.Join(names, ", "))
}

// OrDefault returns p, or ReadOnly when p is "".
func (p Level) OrDefault() Level {
	if p == "" {
		return ReadOnly
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

// Rule is how one agent honours one permission level: what Info.Grants
// holds, and what the CLI's --confirm prompt shows.
type Rule struct {
	Level Level       `json:"level"`
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
	// acceptEdits. Under None nothing passes.
	Confined []events.ToolKind `json:"confined,omitempty"`
}

// For returns the rule of level among an agent's rules (adapters.Info.Grants),
// or the run's error when the agent refuses the level or has no rule for
// it (an adapter that does not say how it holds a level cannot be trusted
// with it): permission_denied/effect_not_granted.
func For(agent string, rules map[Level]Rule, level Level) (Rule, *events.Error) {
	g, ok := rules[level]
	if !ok {
		return Rule{}, events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
			"run it with another --permission, or report that the adapter lacks the level",
			"%s: hub does not know how to hold %s to --permission %s, so it does not run it", agent, agent, level)
	}
	if g.How == Refused {
		return g, events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted, g.Note,
			"%s cannot be held to --permission %s, so hub does not run it with a weaker grant", agent, level)
	}
	g.Level = level
	return g, nil
}

// allowedKinds are the tool kinds a level lets through hub's watch without
// the CLI's help: none for none; reading, searching and the web (no change
// to the machine) for read-only; those and writes and edits (whose paths
// are checked) for workspace-write. Shells, sub-agents and MCP tools can do
// anything, so they pass only where the CLI confines them (Rule.Confined).
// Full lets everything through.
func allowedKinds(level Level) []events.ToolKind {
	switch level {
	case ReadOnly:
		return []events.ToolKind{events.ToolRead, events.ToolSearch, events.ToolWeb, events.ToolOther}
	case WorkspaceWrite:
		return []events.ToolKind{events.ToolRead, events.ToolSearch, events.ToolWeb, events.ToolOther, events.ToolWrite, events.ToolEdit}
	}
	return nil
}

// Watch is hub's watch of a run's tool calls against its grant
// (SPEC §6.1): a call of a kind the level does not grant, or under
// workspace-write a write or edit whose path resolves outside the working
// directory, stops the run at its tool.started as
// permission_denied/effect_not_granted.
type Watch struct {
	agent string
	g     Rule
	cwd   string // the working directory as the agent is given it (PWD)
	root  string // the working directory with every link resolved
	// AnswerTool is the tool through which the CLI delivers a --schema
	// answer (adapters.Info.AnswerTool) when the run has one: not an effect.
	AnswerTool string
	// Original, in a sandboxed run, is the tree the sandbox copies: a
	// write there is named as such.
	Original string
	// Decided, in a run with an approver (hub.WithApprover), says what it
	// decided about a call: a call outside the grant is then let through
	// at its tool.started (the CLI asks about it, often after announcing
	// it), and stops the run only when it finished without the approver
	// having been asked, or having denied it (the CLI ran it anyway).
	Decided func(callID string) (asked, allowed bool)

	mu      sync.Mutex
	outside map[string]*events.Error // calls outside the grant let through for the approver, by call id
}

// Level is the level the watch holds the run to.
func (w *Watch) Level() Level { return w.g.Level }

// NewWatch returns the watch of agent's calls under rule g in the working
// directory cwd (relative to hub's; links resolved once here).
func NewWatch(agent string, g Rule, cwd string) *Watch {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		abs = cwd
	}
	root, _ := RealPath(abs)
	// The agent's PWD is root (hub's run sets it so).
	return &Watch{agent: agent, g: g, cwd: root, root: root}
}

// Check returns nil for an event that is not a tool.started or a call the
// grant allows, else the permission_denied/effect_not_granted error that
// stops the run at that call. It is safe for concurrent use.
func (w *Watch) Check(b events.Body) *events.Error {
	if w.Decided != nil {
		if fin, ok := b.(events.ToolFinished); ok {
			return w.finished(fin)
		}
		err := w.check(b)
		if st, ok := b.(events.ToolStarted); ok && err != nil {
			w.mu.Lock()
			if w.outside == nil {
				w.outside = map[string]*events.Error{}
			}
			w.outside[st.CallID] = err
			w.mu.Unlock()
		}
		return nil
	}
	return w.check(b)
}

// finished is the watch's check of a call that was outside the grant, in a
// run with an approver: the approver must have allowed it, or the CLI
// reported it denied.
func (w *Watch) finished(fin events.ToolFinished) *events.Error {
	w.mu.Lock()
	err, ok := w.outside[fin.CallID]
	delete(w.outside, fin.CallID)
	w.mu.Unlock()
	if !ok || fin.Status == events.ToolDenied {
		return nil
	}
	asked, allowed := w.Decided(fin.CallID)
	switch {
	case allowed:
		return nil
	case asked && fin.Status == events.ToolError:
		return nil // denied, and the CLI reports the refusal as the call's error
	case asked:
		return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted, err.Hint,
			"%s ran tool %s although the approver denied it; hub stopped the run", w.agent, fin.Name)
	}
	return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted, err.Hint,
		"%s ran tool %s, outside --permission %s, without asking the approver; hub stopped the run", w.agent, fin.Name, w.g.Level)
}

// Grants is Check without an approver: nil when the grant allows the call
// st, else the error Check would stop the run with.
func (w *Watch) Grants(st events.ToolStarted) *events.Error { return w.check(st) }

func (w *Watch) check(b events.Body) *events.Error {
	st, ok := b.(events.ToolStarted)
	if !ok || w.g.Level == Full || w.AnswerTool != "" && st.Name == w.AnswerTool && st.Kind == events.ToolOther {
		return nil
	}
	confined := w.g.Level != None && slices.Contains(w.g.Confined, st.Kind)
	if !slices.Contains(allowedKinds(w.g.Level), st.Kind) && !confined {
		return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted, w.hint(st.Kind),
			"%s called tool %s (kind %s), which --permission %s does not grant; hub stopped the run at that call",
			w.agent, st.Name, st.Kind, w.g.Level)
	}
	if w.g.Level != WorkspaceWrite || st.Kind != events.ToolWrite && st.Kind != events.ToolEdit {
		return nil
	}
	for _, p := range inputPaths(st.Input) {
		if err := w.checkPath(st.Name, p, p); err != nil {
			return err
		}
		if !filepath.IsAbs(p) {
			// The CLIs join a relative path to their directory lexically
			// (Node's path.resolve); one that passed it on as written
			// would leave the kernel to resolve it: both must stay.
			if err := w.checkPath(st.Name, p, filepath.Join(w.cwd, p)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPath is the watch's error when the call name's path p, as abs,
// lands outside the working directory, or where cannot be told.
func (w *Watch) checkPath(name, p, abs string) *events.Error {
	if !filepath.IsAbs(abs) {
		abs = w.cwd + "/" + abs
	}
	real, ok := RealPath(abs)
	if !ok {
		return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
			"give the agent paths it can write through fewer links, or use --permission full (with --yes)",
			"%s called %s on %s: hub cannot tell where it lands (longer than PATH_MAX, or more than 40 symbolic links), so it stopped the run at that call",
			w.agent, name, normalize.Shorten(p, 300))
	}
	if !Within(w.root, real) {
		if w.Original != "" && Within(w.Original, real) {
			return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
				"in a sandboxed run the agent works in a copy: have it refer to files by paths relative to its working directory, not by the original's",
				"%s called %s on %s, in the original tree %s rather than in its sandbox %s; hub stopped the run at that call",
				w.agent, name, normalize.Shorten(p, 300), w.Original, w.root)
		}
		return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
			"give the agent a --cwd that holds every file it should change, or use --permission full (with --yes)",
			"%s called %s on %s, which resolves to %s, outside the working directory %s that --permission workspace-write grants; hub stopped the run at that call",
			w.agent, name, normalize.Shorten(p, 300), normalize.Shorten(real, 300), w.root)
	}
	return nil
}

// hint is the next step after a call of kind was refused.
func (w *Watch) hint(kind events.ToolKind) string {
	switch {
	case w.g.Level == None:
		return "run it with --permission read-only (or more), or ask for an answer that needs no tool"
	case kind == events.ToolWrite || kind == events.ToolEdit:
		return "grant writes with --permission workspace-write, or ask for a task that changes nothing"
	}
	return fmt.Sprintf("%s tools need --permission full (with --confirm or --yes) for this agent", kind)
}

// inputPaths are the paths a write or edit call names in its input: the
// agents' own keys (Claude Code file_path and notebook_path, OpenCode
// filePath, pi path), Codex's file_change changes[].path and the
// locations hub adds to an ACP call's input (normalize/acp). Inputs that
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
	for _, v := range r.Get("locations").Array() { // an ACP call's (normalize/acp)
		if v.Type == gjson.String && v.Str != "" {
			out = append(out, v.Str)
		}
	}
	return out
}

// pathMax is Linux's PATH_MAX: the kernel refuses a longer path
// (ENAMETOOLONG), and RealPath resolves no more components than it holds.
const pathMax = 4096

// RealPath is where a write to p (absolute, as written) lands, resolved as
// the kernel resolves it: component by component, a symbolic link replaced
// by its target before the components after it (so "link/.." is the parent
// of the link's target, not the directory holding the link; a lexical
// filepath.Clean first would get it wrong), "." dropped, ".." the parent of
// what came before. A component that does not exist yet is taken as
// written (tools create missing directories), and so is a dangling link's
// target. ok is false for a path longer than PATH_MAX, more than 40 links
// (ELOOP), or more components than PATH_MAX bytes hold in all: the kernel
// would not open it either, and hub cannot say where it lands. It costs one
// lstat per component.
func RealPath(p string) (real string, ok bool) {
	if len(p) > pathMax {
		return p, false
	}
	rest := strings.Split(p, "/")
	cur, hops, steps := "/", 0, 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if steps++; steps > pathMax || len(cur) > pathMax {
			return cur, false
		}
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(next)
		if hops++; err != nil || hops > 40 {
			return next, false
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, true
}

// Within reports whether p is root or below it (both clean and absolute).
func Within(root, p string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+string(filepath.Separator))
}

// CheckLinks refuses a working directory (dir, "" for hub's) through
// whose symbolic links a write could leave it, for an agent whose CLI
// checks the paths of its writes lexically, without resolving links
// (OpenCode's external_directory rule): a link that leads outside, a link
// to a directory no deeper than the link itself (self -> ., a/x -> ../b:
// then <link>/../… is inside by its letters and outside on the disk), a
// link hub cannot resolve, and a directory hub cannot list (it may hold
// such links). The error is permission_denied/effect_not_granted naming
// the first one found. It reads the whole tree: 0.11 s for the 21,343
// entries of hub's .tools (npm packages, warm cache, 2 busy cores).
func CheckLinks(agent, dir string) error {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	root, _ := RealPath(abs)
	var why string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			why = fmt.Sprintf("hub cannot list %s (%v) to look for links in it", p, err)
		case d.Type()&fs.ModeSymlink != 0:
			why = linkEscape(root, p)
		}
		if why != "" {
			return fs.SkipAll
		}
		return nil
	})
	if why == "" {
		return nil
	}
	return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
		"remove the link or point --cwd at a tree without one, or use --permission full (with --yes)",
		"%s checks the paths of its writes without resolving symbolic links, and %s: --permission workspace-write cannot be held, so hub does not run it",
		agent, why)
}

// linkEscape says how a write through the link p (below root, both
// resolved) could leave root, or "" when it cannot.
func linkEscape(root, p string) string {
	target, ok := RealPath(p)
	switch {
	case !ok:
		return fmt.Sprintf("hub cannot resolve the link %s", p)
	case !Within(root, target):
		return fmt.Sprintf("%s leads outside the working directory (to %s)", p, target)
	}
	// A link to a directory, or to nothing yet (a write may make it one),
	// no deeper than the link.
	if fi, err := os.Stat(target); (err != nil || fi.IsDir()) && depth(root, target) < depth(root, p) {
		return fmt.Sprintf("%s leads to %s, above it, so %s/../… can lead outside", p, target, p)
	}
	return ""
}

// depth is how many components p (at or below root) has below root.
func depth(root, p string) int {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." {
		return 0
	}
	return strings.Count(rel, string(filepath.Separator)) + 1
}
