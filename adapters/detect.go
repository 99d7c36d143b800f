package adapters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/proc"
)

// VersionProbe finds an agent binary and checks its version. Adapters embed
// one to implement Detect.
type VersionProbe struct {
	Info Info
	// Args are the arguments that print the version; default "--version".
	Args []string
	// Timeout bounds the version command; default DefaultProbeTimeout.
	Timeout time.Duration
}

// DefaultProbeTimeout bounds a version command. `pi --version` (Node) takes
// about 2 s on an idle 2-core machine and was seen to take over 15 s with
// both cores busy; the run's own --timeout still bounds the probe.
const DefaultProbeTimeout = 45 * time.Second

// versionLinger is how long a version command that printed a version line
// may go on before hub stops it and takes that version.
const versionLinger = 2 * time.Second

// hasVersionLine reports whether s has a whole line with a version number.
func hasVersionLine(s string) bool {
	i := strings.LastIndexByte(s, '\n')
	return i >= 0 && versionRe.MatchString(s[:i])
}

// versionRe finds the first dotted version number in --version output.
var versionRe = regexp.MustCompile(`v?(\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.-]+)?)`)

// Detect resolves bin (a path, a name looked up in PATH, or "" for
// p.Info.Binary), runs it with the version arguments (stdin /dev/null, own
// process group, killed after the timeout) and parses the first version
// number it prints on stdout or, failing that, stderr. Errors are
// *events.Error: not_installed/not_found, not_installed/not_executable,
// unsupported_version/unparseable or unsupported_version/too_old, each with an
// install or upgrade hint; not_installed/not_executable when the version
// command fails (a broken install); timeout/idle (retryable) when it prints
// no version within the timeout.
//
// A version it parsed is cached (see versioncache.go): while the binary,
// the arguments and hub's own executable are unchanged, and for at most a
// day, Detect takes the cached version instead of running the command
// (unless ctx is from WithFreshProbe), and checks it against MinVersion
// all the same; a cached version that is too old is probed again before
// Detect refuses it.
func (p VersionProbe) Detect(ctx context.Context, bin string) (Install, error) {
	path, err := p.Find(bin)
	if err != nil {
		return Install{}, err
	}
	start := time.Now()
	cache := cacheFor(path, p.args())
	if !freshProbe(ctx) {
		if cached := cache.load(start); cached != "" {
			if have, err := version.NewVersion(cached); err == nil {
				if inst, err := p.check(path, have); err == nil {
					return inst, nil
				}
			}
		}
	}
	out, err := p.run(ctx, path)
	if err != nil {
		return Install{Path: path}, err
	}
	m := versionRe.FindStringSubmatch(out)
	if m == nil {
		return Install{Path: path}, events.NewError(events.BinUnsupportedVersion, events.ReasonUnparseable,
			p.upgradeHint(),
			"%s: cannot find a version number in the output of %s %s: %q",
			path, filepath.Base(path), strings.Join(p.args(), " "), firstLine(out))
	}
	have, err := version.NewVersion(m[1])
	if err != nil {
		return Install{Path: path}, events.NewError(events.BinUnsupportedVersion, events.ReasonUnparseable,
			p.upgradeHint(), "%s: version %q: %v", path, m[1], err)
	}
	cache.store(path, p.args(), have.Original(), start)
	return p.check(path, have)
}

// check is the Install of the binary at path whose version is have, or
// unsupported_version/too_old when have is below p.Info.MinVersion.
func (p VersionProbe) check(path string, have *version.Version) (Install, error) {
	inst := Install{Path: path, Version: have.Original()}
	if p.Info.MinVersion != "" {
		min := version.Must(version.NewVersion(p.Info.MinVersion))
		if have.LessThan(min) {
			return inst, events.NewError(events.BinUnsupportedVersion, events.ReasonTooOld, p.upgradeHint(),
				"%s is version %s; hub needs %s or newer", path, have.Original(), p.Info.MinVersion)
		}
	}
	return inst, nil
}

// Find resolves bin as Detect does, without running it.
func (p VersionProbe) Find(bin string) (string, error) {
	name := bin
	if name == "" {
		name = p.Info.Binary
	}
	path, err := exec.LookPath(name)
	if err == nil {
		if abs, aerr := filepath.Abs(path); aerr == nil {
			path = abs
		}
		return path, nil
	}
	// Tell "there is no such file" from "there is one but it cannot run".
	if strings.ContainsRune(name, '/') {
		if fi, serr := os.Stat(name); serr == nil {
			what := "is not executable"
			if fi.IsDir() {
				what = "is a directory"
			}
			return "", events.NewError(events.BinNotInstalled, events.ReasonNotExecutable,
				"fix the file's permissions (chmod +x) or pass another --bin",
				"%s %s", name, what)
		}
		return "", events.NewError(events.BinNotInstalled, events.ReasonNotFound, p.installHint(),
			"%s: no such file", name)
	}
	return "", events.NewError(events.BinNotInstalled, events.ReasonNotFound, p.installHint(),
		"%s not found in PATH", name)
}

func (p VersionProbe) args() []string {
	if len(p.Args) > 0 {
		return p.Args
	}
	return []string{"--version"}
}

// run runs the version command under a proc.Supervisor and returns stdout,
// or stderr when stdout has no version number (pi prints it on stderr).
func (p VersionProbe) run(ctx context.Context, path string) (string, error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Under a guard like a run: what the version command detaches (a
	// background update check) is stopped when it exits.
	sup, err := proc.Launch(proc.Spec{Path: path, Args: p.args(), Env: os.Environ(), StderrTail: probeOutput})
	if errors.Is(err, proc.ErrGuard) {
		return "", GuardError(path, err)
	}
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
			return "", events.NewError(events.BinNotInstalled, events.ReasonNotExecutable,
				"fix the file's permissions or pass another --bin", "%s cannot be executed: %v", path, err)
		}
		return "", events.NewError(events.BinNotInstalled, events.ReasonNotFound, p.installHint(),
			"%s cannot be started: %v", path, err)
	}
	// Bounded: a version is a short line; a binary that prints megabytes
	// here is not the agent.
	stdout := &headWriter{max: probeOutput}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(stdout, sup.Stdout())
	}()
	timedOut := p.await(ctx, sup, stdout)
	<-copied
	exit := sup.Wait()
	if timedOut {
		if parent.Err() != nil {
			// The caller's context (hub.Run maps its own wall-clock limit).
			return "", events.NewError(events.BinCancelled, events.ReasonCaller,
				"nothing to do if you meant to stop it; run again to retry", "cancelled while probing %s", path)
		}
		// Most likely an overloaded machine (retryable), else not the agent.
		return "", events.NewError(events.BinTimeout, events.ReasonIdle,
			"retry when the machine is less busy; if it repeats, run `"+path+" "+strings.Join(p.args(), " ")+"` by hand to see why it hangs, or pass another --bin",
			"%s %s printed no version within %s", path, strings.Join(p.args(), " "), timeout)
	}
	out := stdout.String()
	if !versionRe.MatchString(out) && versionRe.MatchString(exit.Stderr) {
		out = exit.Stderr // pi prints its version on stderr
	}
	if exit.Cause == nil && (exit.Code == nil || *exit.Code != 0) {
		// A failing version command is a broken install, whatever else it
		// printed (a Node crash trace ends in "Node.js v20.20.2", which is
		// not the agent's version).
		return "", events.NewError(events.BinNotInstalled, events.ReasonNotExecutable,
			"reinstall: "+p.installHint(),
			"%s %s failed (%s): %s", path, strings.Join(p.args(), " "), exitText(exit), errorLine(exit.Stderr+"\n"+stdout.String()))
	}
	return out, nil
}

// probeOutput is how much of the version command's stdout and stderr the
// probe keeps.
const probeOutput = 4096

// errVersionSeen stops a version command that printed its version and did
// not exit; errProbeTimeout one that printed none in time.
var (
	errVersionSeen  = errors.New("adapters: version printed, command did not exit")
	errProbeTimeout = errors.New("adapters: version probe timed out")
)

// await waits for the version command to exit, and reports whether ctx
// ended first (the command is then killed). A command that prints its
// version and then does not exit (seen: one that keeps printing it) is
// killed versionLinger later and taken at its word.
func (p VersionProbe) await(ctx context.Context, sup *proc.Supervisor, stdout *headWriter) bool {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var seen time.Time
	for {
		select {
		case <-sup.Exited():
			return false
		case <-ctx.Done():
			sup.Kill(errProbeTimeout)
			return true
		case <-tick.C:
			if seen.IsZero() && (hasVersionLine(stdout.String()) || hasVersionLine(sup.StderrSoFar())) {
				seen = time.Now()
			}
			if !seen.IsZero() && time.Since(seen) >= versionLinger {
				sup.Kill(errVersionSeen)
				return false
			}
		}
	}
}

// exitText says how a process ended, as os/exec's error would.
func exitText(e proc.Exit) string {
	if e.Signal != "" {
		return "signal: " + e.Signal
	}
	if e.Code != nil {
		return fmt.Sprintf("exit status %d", *e.Code)
	}
	return "unknown exit"
}

func (p VersionProbe) installHint() string {
	if p.Info.InstallHint == "" {
		return "install " + p.Info.Binary + " or pass its path with --bin"
	}
	return "install it with `" + p.Info.InstallHint + "`, or pass its path with --bin"
}

func (p VersionProbe) upgradeHint() string {
	if p.Info.Package == "" {
		return fmt.Sprintf("install %s %s or newer", p.Info.Binary, p.Info.MinVersion)
	}
	if p.Info.TestedVersion != "" {
		return fmt.Sprintf("upgrade with `npm i -g %s@%s` (the version hub is tested on) or @latest", p.Info.Package, p.Info.TestedVersion)
	}
	return fmt.Sprintf("upgrade with `npm i -g %s@latest`", p.Info.Package)
}

// errorLine returns the first line of s that mentions an error, else its
// first line, at most 200 bytes.
func errorLine(s string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(strings.ToLower(line), "error") {
			return firstLine(line)
		}
	}
	return firstLine(s)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// headWriter keeps the first max bytes written to it and discards the rest.
type headWriter struct {
	max int
	mu  sync.Mutex
	buf []byte
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.max - len(h.buf); n > 0 {
		h.buf = append(h.buf, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (h *headWriter) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.buf)
}

// GuardError is the run error of a process whose guard could not start:
// hub's own failure, not the agent's.
func GuardError(path string, err error) *events.Error {
	return events.NewError(events.BinInternal, "",
		"hub runs each agent below a copy of itself: /proc must be mounted and hub's own binary executable (/proc/self/exe), with processes to spare; report it if that holds",
		"cannot start %s: %v", path, err)
}
