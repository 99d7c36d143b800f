package sandbox

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// entry is one path of the snapshot: a regular file or a symbolic link as
// the sandbox held it when the agent started.
type entry struct {
	mode  gitMode
	size  int64
	oid   string // git's blob id of the content (of the link's target for a link)
	link  string // a link's target
	st    stamp  // the sandbox file's, to tell an untouched file without reading it
	base  base   // where the content is kept for the diff
	nlink uint64
}

// base is where a snapshot entry's content is kept.
type base int

const (
	baseNone     base = iota // not kept (protected: never diffed)
	baseRepo                 // a blob of the repository
	baseOriginal             // the original tree's file, while it is unchanged
	baseLink                 // the entry's link field
)

// gitMode is a path's mode as git records it.
type gitMode uint32

const (
	modeFile gitMode = 0o100644
	modeExec gitMode = 0o100755
	modeLink gitMode = 0o120000
)

// modeOf returns fi's git mode, and false for what git cannot hold (a
// directory, a FIFO, a socket, a device).
func modeOf(fi fs.FileInfo) (gitMode, bool) {
	switch m := fi.Mode(); {
	case m.Type() == fs.ModeSymlink:
		return modeLink, true
	case m.IsRegular() && m.Perm()&0o100 != 0:
		return modeExec, true
	case m.IsRegular():
		return modeFile, true
	}
	return 0, false
}

// stamp is what the kernel says of a file that no write can leave as it
// was: its change time moves on every write, chmod, rename or link, and
// no system call sets it back.
type stamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns
	mode         uint32
}

func stampOf(fi fs.FileInfo) stamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{}
	}
	return stamp{
		dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mode: st.Mode,
		mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
	}
}

func nlinkOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// blobID returns git's blob id of content.
func blobID(content []byte) string {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// fileID returns git's blob id of the regular file p, reading it.
func fileID(p string, size int64) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha1.New()
	h.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	n, err := io.Copy(h, f)
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("sandbox: %s changed while hub read it", p)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyFile copies the regular file src to the new file dst with perm and
// src's modification time: a reflink where the file system has them
// (FICLONE), else copy_file_range through io.Copy.
func copyFile(src, dst string, fi fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if cerr := unix.IoctlFileClone(int(out.Fd()), int(in.Fd())); cerr != nil {
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
	}
	if err := out.Chmod(fi.Mode().Perm()); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// hasGitPart reports whether the slash path rel has a .git component.
func hasGitPart(rel string) bool {
	for _, p := range strings.Split(rel, "/") {
		if strings.EqualFold(p, ".git") { // .GIT is .git on a case-insensitive file system
			return true
		}
	}
	return false
}

// skipped reports whether the copy's ignore list covers rel.
func (s *Sandbox) skipped(rel string) bool {
	if len(s.skip) == 0 {
		return false
	}
	if s.skip[rel] || s.skip[rel+"/"] {
		return true
	}
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		if s.skip[d+"/"] {
			return true
		}
	}
	return false
}

// copyTree makes Dir a copy of Root (copy mode): every directory, regular
// file and symbolic link (as a link, its target as it is), except .git
// (the repository's history stays out of the copy; worktree mode is for
// an agent that needs it), FIFOs, sockets and devices. Paths the
// repository ignores are copied but left out of the snapshot: they are no
// part of the change.
func (s *Sandbox) copyTree(ctx context.Context) error {
	if s.repo != nil {
		if err := s.repo.knownBlobs(ctx); err != nil {
			s.repo = nil // a repository git cannot read: the copy goes on as for any directory
		} else if ign, err := s.repo.ignored(ctx, s.Root); err == nil {
			s.skip = ign
		} else {
			s.repo = nil
		}
	}
	type dirMode struct {
		path string
		perm fs.FileMode
	}
	var dirs []dirMode
	n := 0
	cp := s.newCopier(ctx)
	err := filepath.WalkDir(s.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("sandbox: copying %s: %w", s.Root, err)
		}
		if n++; n%256 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		rel, _ := filepath.Rel(s.Root, p)
		rel = filepath.ToSlash(rel)
		dst := filepath.Join(s.Dir, filepath.FromSlash(rel))
		if rel == "." {
			dirs = append(dirs, dirMode{dst, 0o755})
			if fi, err := d.Info(); err == nil {
				dirs[0].perm = fi.Mode().Perm()
			}
			return os.Mkdir(dst, 0o700)
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return fmt.Errorf("sandbox: copying %s: %w", p, err)
		}
		switch {
		case fi.IsDir() && s.isSandboxTmp(p, fi):
			// TMPDIR inside --cwd: the sandbox (or another run's) is no
			// part of the tree it copies.
			return filepath.SkipDir
		case fi.IsDir():
			dirs = append(dirs, dirMode{dst, fi.Mode().Perm()})
			return os.Mkdir(dst, 0o700)
		case fi.Mode().IsRegular(), fi.Mode().Type() == fs.ModeSymlink:
			return cp.add(copyJob{src: p, dst: dst, rel: rel, fi: fi, skip: s.skipped(rel)})
		default:
			return nil // a FIFO, socket or device: no file git or a diff can hold
		}
	})
	if werr := cp.wait(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].perm|0o700); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

// addWorktree makes Dir a git worktree of the repository at HEAD and
// carries the user's view over: every file of the index and every
// untracked, non-ignored file, as it is in the original tree (files the
// user deleted stay deleted), with the user's index as the worktree's, so
// `git status` in the sandbox says what it says in the original.
func (s *Sandbox) addWorktree(ctx context.Context) error {
	r := s.repo
	if err := r.knownBlobs(ctx); err != nil {
		return err
	}
	meta, err := s.readGitMeta(ctx)
	if err != nil {
		return err
	}
	s.gitMeta = meta
	s.objStamps = objectStamps(s.commonDir)
	if _, err := r.git(ctx, "worktree", "add", "--detach", "--no-checkout", s.Dir, "HEAD"); err != nil {
		return err
	}
	if admin, err := r.gitIn(ctx, s.Dir, nil, "rev-parse", "--absolute-git-dir"); err == nil {
		s.adminDir = strings.TrimSpace(string(admin))
	}
	out, err := r.git(ctx, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--full-name")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	cp := s.newCopier(ctx)
	if err := s.carry(ctx, cp, zsplit(out), seen); err != nil {
		_ = cp.wait()
		return err
	}
	if err := cp.wait(); err != nil {
		return err
	}
	if err := s.afterCarry(ctx); err != nil {
		return err
	}
	return nil
}

// carry queues every path of rels (the index's and the untracked,
// non-ignored files, relative to the top) on cp, as the original holds
// it, making its directories first.
func (s *Sandbox) carry(ctx context.Context, cp *copier, rels []string, seen map[string]bool) error {
	for i, rel := range rels {
		if seen[rel] {
			continue // an unmerged path is listed once per stage
		}
		seen[rel] = true
		if i%256 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		src := filepath.Join(s.Root, filepath.FromSlash(rel))
		fi, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) { // (a parent made a file)
			continue // deleted in the original: deleted in the sandbox
		}
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if _, ok := modeOf(fi); !ok {
			continue // a submodule's directory, or what git cannot hold
		}
		dst := filepath.Join(s.Dir, filepath.FromSlash(rel))
		if err := s.mkdirsLike(rel); err != nil {
			return err
		}
		if err := cp.add(copyJob{src: src, dst: dst, rel: rel, fi: fi}); err != nil {
			return err
		}
	}
	return nil
}

// afterCarry gives the worktree the user's index and snapshots its .git
// file.
func (s *Sandbox) afterCarry(ctx context.Context) error {
	r := s.repo
	// The worktree's index: the user's (its tree), else HEAD's.
	tree := "HEAD"
	if t, err := s.userIndexTree(ctx); err == nil {
		tree = t
	}
	if _, err := r.gitIn(ctx, s.Dir, nil, "read-tree", tree); err != nil {
		return err
	}
	_, _ = r.gitIn(ctx, s.Dir, nil, "update-index", "-q", "--refresh")
	if fi, err := os.Lstat(filepath.Join(s.Dir, ".git")); err == nil {
		s.snap[".git"] = &entry{mode: modeFile, size: fi.Size(), st: stampOf(fi)}
		if id, err := fileID(filepath.Join(s.Dir, ".git"), fi.Size()); err == nil {
			s.snap[".git"].oid = id
		}
	}
	return nil
}

// mkdirsLike makes the parents of rel in Dir with the modes of the
// original's.
func (s *Sandbox) mkdirsLike(rel string) error {
	parent := path.Dir(rel)
	if parent == "." {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(s.Dir, filepath.FromSlash(parent))); err == nil {
		return nil
	}
	if err := s.mkdirsLike(parent); err != nil {
		return err
	}
	perm := fs.FileMode(0o755)
	if fi, err := os.Stat(filepath.Join(s.Root, filepath.FromSlash(parent))); err == nil {
		perm = fi.Mode().Perm() | 0o700
	}
	if err := os.Mkdir(filepath.Join(s.Dir, filepath.FromSlash(parent)), perm); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}

// record adds the sandbox's rel to the snapshot, and says where the diff
// can find its content: the repository when it holds the blob, else the
// original tree (checked against the id when it is read). A protected
// path's content is not needed: it is never diffed.
func (s *Sandbox) record(ctx context.Context, rel string) error {
	p := filepath.Join(s.Dir, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	m, ok := modeOf(fi)
	if !ok {
		return nil
	}
	e := &entry{mode: m, size: fi.Size(), st: stampOf(fi), nlink: nlinkOf(fi)}
	if m == modeLink {
		if e.link, err = os.Readlink(p); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		e.oid, e.base = blobID([]byte(e.link)), baseLink
		s.snapMu.Lock()
		s.snap[rel] = e
		s.snapMu.Unlock()
		return nil
	}
	if fi.Size() > MaxFileBytes {
		e.oid = largeID(rel, fi) // never diffed (tooLarge): not read
	} else if e.oid, err = fileID(p, fi.Size()); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	switch {
	case s.protectedBy(rel) != "":
	case s.repo != nil && s.repo.blobs[e.oid]:
		e.base = baseRepo
	default:
		e.base = baseOriginal
	}
	s.snapMu.Lock()
	s.snap[rel] = e
	s.snapMu.Unlock()
	return nil
}

// errBaseGone is a snapshot entry whose content hub no longer has: the
// original's file changed since the sandbox was made (by the user, or by
// the agent through its absolute path).
var errBaseGone = errors.New("sandbox: the original changed since the snapshot")

// baseContent returns the snapshot's content of rel, checked against its
// id; errBaseGone when the original no longer holds it.
func (s *Sandbox) baseContent(ctx context.Context, rel string) ([]byte, error) {
	e := s.snap[rel]
	var b []byte
	var err error
	switch e.base {
	case baseLink:
		return []byte(e.link), nil
	case baseRepo:
		if b, err = s.repo.blob(ctx, e.oid); err != nil {
			return nil, fmt.Errorf("sandbox: reading the snapshot of %s: %w", rel, err)
		}
	case baseOriginal:
		if b, err = readRegular(s.Root, rel, e.size); err != nil {
			return nil, errBaseGone
		}
	default:
		return nil, fmt.Errorf("sandbox: no content kept for %s", rel)
	}
	if blobID(b) != e.oid {
		return nil, errBaseGone
	}
	return b, nil
}

// readRegular reads the regular file rel below root, no link followed out
// of root and no more than size bytes (and one to tell it grew).
func readRegular(root, rel string, size int64) ([]byte, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := r.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is no longer a regular file", rel)
	}
	f, err := r.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != size {
		return nil, fmt.Errorf("%s changed size", rel)
	}
	return b, nil
}

// indexCopy is the name of userIndexTree's copy of the index, beside Dir.
const indexCopy = ".hub-index"

// userIndexTree writes the tree of the user's index and returns its id,
// from a copy of the index: `git write-tree` on the index itself would
// rewrite it (its cache-tree) and take its lock while the user may be
// using it.
func (s *Sandbox) userIndexTree(ctx context.Context) (string, error) {
	idx, err := s.repo.git(ctx, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(strings.TrimSpace(string(idx)))
	if err != nil {
		return "", err
	}
	cp := filepath.Join(s.tmp, indexCopy)
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		return "", err
	}
	defer os.Remove(cp)
	r := *s.repo
	r.env = []string{"GIT_INDEX_FILE=" + cp}
	t, err := r.git(ctx, "write-tree")
	return strings.TrimSpace(string(t)), err
}

// isSandboxTmp reports whether the directory p (fi) is this sandbox's
// temporary directory or another hub run's (hub-sandbox-* holding an
// owner file).
func (s *Sandbox) isSandboxTmp(p string, fi fs.FileInfo) bool {
	if t, err := os.Lstat(s.tmp); err == nil && os.SameFile(t, fi) {
		return true
	}
	if !strings.HasPrefix(filepath.Base(p), "hub-sandbox-") {
		return false
	}
	_, err := os.Lstat(filepath.Join(p, ownerFile))
	return err == nil
}
