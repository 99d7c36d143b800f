package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Mode is how a run is sandboxed (--sandbox).
type Mode string

// The sandbox modes.
const (
	// None runs the agent in the original tree (the default).
	None Mode = "none"
	// Copy runs it in a copy of the working directory: any directory.
	Copy Mode = "copy"
	// Worktree runs it in a git worktree of the repository at HEAD, with
	// the original's uncommitted changes and untracked, non-ignored files
	// carried over.
	Worktree Mode = "worktree"
)

// Modes are the modes as --sandbox spells them.
var Modes = []Mode{None, Copy, Worktree}

// ParseMode returns the mode named s; "" is None. Any other s is an error
// naming the modes.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "", None:
		return None, nil
	case Copy, Worktree:
		return m, nil
	}
	return "", fmt.Errorf("sandbox %q: want one of none, copy, worktree", s)
}

// The errors of Open.
var (
	// ErrNotRepository: worktree mode needs the working directory to be in
	// a git repository with a commit.
	ErrNotRepository = errors.New("sandbox: --sandbox worktree needs a git repository with at least one commit")
	// ErrNoGit: worktree mode needs the git command.
	ErrNoGit = errors.New("sandbox: --sandbox worktree needs git on PATH")
)

// Options say how to make a sandbox.
type Options struct {
	Mode Mode
	// Protect are globs (doublestar syntax: *, **, ?, [...], {a,b}) of
	// paths relative to the root that the agent may not change. A path
	// with a .git component is always protected.
	Protect []string
	// TempDir is where the sandbox is made; "" means os.TempDir().
	TempDir string
}

// CheckProtect returns an error naming the first glob of globs that is not
// a valid pattern.
func CheckProtect(globs []string) error {
	for _, g := range globs {
		if g == "" || !doublestar.ValidatePattern(g) || strings.HasPrefix(g, "/") {
			return fmt.Errorf("sandbox: --protect %q is not a glob of paths relative to the working directory", g)
		}
	}
	return nil
}

// Sandbox is one run's sandbox. Its methods are not safe for concurrent
// use; Remove is safe to call twice.
type Sandbox struct {
	// Mode is Copy or Worktree.
	Mode Mode
	// Root is the original tree the change is relative to, as a real
	// path: the working directory (copy), or the repository's top level
	// (worktree).
	Root string
	// Dir is the sandbox's copy of Root.
	Dir string
	// Workdir is where the agent runs: the working directory's place in
	// Dir.
	Workdir string

	tmp     string // holds Dir; removed by Remove
	snap    map[string]*entry
	snapMu  sync.Mutex // snap, while the copier's workers record
	repo    *repo      // Root's repository, nil when none (or no git)
	prefix  string
	protect []string
	skip    map[string]bool // copy: ignored paths (dirs end in /) left out of the snapshot
	// gitMeta is the shared git directory as readGitMeta saw it before the
	// run (worktree mode), commonDir where it is, adminDir the sandbox's
	// own worktree entry in it, and metaFiles the changes to it that
	// Changes found (and undid) once.
	gitMeta   map[string]metaEntry
	commonDir string
	adminDir  string
	metaFiles []File
	metaDone  bool
	objStamps map[string]stamp // the object store's files before the run
	nested    []string         // worktree mode: repositories the agent made inside the tree (their .git)
	dirID     stamp            // Dir's own inode, to tell it was not replaced
	racy      time.Time        // when the snapshot was done: a file stamped near it is read, not trusted
	removed   bool
}

// Open makes a sandbox of cwd with o.Mode (Copy or Worktree). It blocks
// until the copy is made; cancelling ctx stops it, and the partial sandbox
// is removed. Errors: ErrNotRepository, ErrNoGit, a bad Protect glob, or
// the file system's.
func Open(ctx context.Context, cwd string, o Options) (sb *Sandbox, err error) {
	if err := CheckProtect(o.Protect); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		// Checked first: with ctx done git cannot run, and a copy too
		// small to reach a check of ctx would otherwise be made.
		return nil, fmt.Errorf("sandbox: %w", context.Cause(ctx))
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox: %s is not a directory", abs)
	}
	s := &Sandbox{Mode: o.Mode, Root: real, protect: o.Protect, snap: map[string]*entry{}}
	rp, rerr := findRepo(ctx, real)
	switch o.Mode {
	case Copy:
		s.repo = rp // nil without a repository: ignore rules and git's blobs are then not used
	case Worktree:
		if errors.Is(rerr, errNoGitBinary) {
			return nil, ErrNoGit
		}
		if rp == nil || !rp.hasHead {
			return nil, ErrNotRepository
		}
		s.repo, s.Root, s.prefix = rp, rp.top, rp.prefix
	default:
		return nil, fmt.Errorf("sandbox: mode %q makes no sandbox", o.Mode)
	}
	sweepStale(o.TempDir)
	s.tmp, err = os.MkdirTemp(o.TempDir, "hub-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer func() {
		if err != nil {
			_ = s.Remove()
			sb = nil
		}
	}()
	if err = os.Chmod(s.tmp, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	top := ""
	if o.Mode == Worktree {
		top = s.repo.top
	}
	if err = writeOwner(s.tmp, top); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	name := filepath.Base(s.Root)
	if name == "/" || name == "." || name == ownerFile || name == indexCopy {
		name = "root" // (Dir and the owner file are siblings: never one name)
	}
	s.Dir = filepath.Join(s.tmp, name)
	if o.Mode == Copy {
		err = s.copyTree(ctx)
	} else {
		err = s.addWorktree(ctx)
	}
	if err != nil {
		return nil, err
	}
	s.Workdir = filepath.Join(s.Dir, filepath.FromSlash(s.prefix))
	if s.prefix != "" {
		// The working directory may hold no file the worktree carries
		// (only ignored ones): the agent still runs there.
		if err = s.mkdirsLike(s.prefix + "/."); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("sandbox: %w", context.Cause(ctx))
	}
	fi, err := os.Lstat(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.dirID = stampOf(fi)
	s.racy = time.Now()
	return s, nil
}

// ErrReplaced is a sandbox whose directory is no longer the one Open made
// (the agent moved it away, or put a link in its place).
var ErrReplaced = errors.New("sandbox: the sandbox's directory was replaced during the run")

// same reports whether Dir is still the directory Open made.
func (s *Sandbox) same() bool {
	fi, err := os.Lstat(s.Dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st := stampOf(fi)
	return st.dev == s.dirID.dev && st.ino == s.dirID.ino
}

// Remove removes the sandbox: its git worktree (worktree mode) and every
// file of it. It is safe to call twice.
func (s *Sandbox) Remove() error {
	if s.removed {
		return nil
	}
	s.removed = true
	var errs []error
	var werr error
	if s.Mode == Worktree && s.repo != nil && s.Dir != "" && s.same() {
		ctx := context.Background()
		// --force twice removes a worktree the agent locked too.
		_, werr = s.repo.git(ctx, "worktree", "remove", "--force", "--force", s.Dir)
		if werr != nil && isMissing(s.Dir) {
			werr = nil
		}
	}
	if s.tmp != "" {
		if err := removeAll(s.tmp); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Mode == Worktree && s.repo != nil {
		// The sandbox's own entry goes, whatever the agent wrote in it (a
		// gitdir naming another directory would keep prune off it).
		if a := s.adminDir; a != "" && s.commonDir != "" && strings.HasPrefix(a, filepath.Join(s.commonDir, "worktrees")+string(filepath.Separator)) {
			_ = os.RemoveAll(a)
		}
		_, _ = s.repo.git(context.Background(), "worktree", "prune")
		// A worktree git would not remove (the agent deleted its .git
		// file) is pruned once its directory is gone: an error only if
		// git still lists it.
		if werr != nil && !s.repo.hasWorktree(context.Background(), s.Dir) {
			werr = nil
		}
	}
	if werr != nil {
		errs = append([]error{werr}, errs...)
	}
	return errors.Join(errs...)
}

// removeAll removes dir and everything under it, making directories the
// agent left unwritable writable first.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("sandbox: removing %s: %w", dir, err)
	}
	return nil
}

func isMissing(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}
