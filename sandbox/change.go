package sandbox

import (
	"compress/zlib"
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
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Kind is how a path changed.
type Kind string

// The kinds of change, as file.changed names them.
const (
	Added    Kind = "added"
	Modified Kind = "modified"
	Deleted  Kind = "deleted"
	Renamed  Kind = "renamed"
)

// File is one changed path of the sandbox.
type File struct {
	Path    string // slash-separated, relative to Root
	OldPath string // a rename's old path, else ""
	Kind    Kind
	// Bytes is the size after the change (a link's: its target's
	// length); -1 when deleted.
	Bytes  int64
	Binary bool
	// Protected, when not "", says why the change is refused: the path is
	// in .git, matches a --protect glob, or resolves outside the root.
	Protected string
}

// Result is the change an agent made in a sandbox.
type Result struct {
	// Files are the changed paths, sorted by path.
	Files []File
	// Diff is the git-style diff of every change that is not protected
	// ("" when none): `git apply` and Apply take it.
	Diff []byte
}

// Protected returns the files whose change is refused.
func (r *Result) Protected() []File {
	var out []File
	for _, f := range r.Files {
		if f.Protected != "" {
			out = append(out, f)
		}
	}
	return out
}

// protectedBy says why a change to rel is refused by its name alone, or "".
func (s *Sandbox) protectedBy(rel string) string {
	if hasGitPart(rel) {
		return "in .git (always protected)"
	}
	for _, g := range s.protect {
		pat := strings.TrimSuffix(g, "/")
		if !strings.Contains(pat, "/") {
			// As in .gitignore, a glob with no slash matches a name at
			// any depth: *.pem protects dir/id.pem too.
			pat = "**/" + pat
		}
		if ok, _ := doublestar.Match(pat, rel); ok {
			return "matches --protect " + g
		}
		// A glob of a directory protects what is below it.
		if ok, _ := doublestar.Match(pat+"/**", rel); ok {
			return "matches --protect " + g
		}
	}
	return ""
}

// current is one path of the sandbox after the run.
type current struct {
	fi   fs.FileInfo
	mode gitMode
}

// Changes compares the sandbox with the snapshot it started from. It reads
// every file whose change time moved; cancelling ctx stops it. It changes
// nothing on the disk.
func (s *Sandbox) Changes(ctx context.Context) (*Result, error) {
	if !s.same() {
		return nil, ErrReplaced
	}
	if s.Mode == Worktree && !s.metaDone {
		// First, before hub runs git where the agent could have set it
		// up (a core.fsmonitor command, a hook, alternates): the shared
		// git directory back as it was.
		meta, err := s.readGitMeta(ctx)
		if err != nil {
			return nil, err
		}
		s.metaFiles, s.metaDone = s.restoreGitMeta(s.gitMeta, meta), true
		s.metaFiles = append(s.metaFiles, rewrittenObjects(s.commonDir, s.objStamps, objectStamps(s.commonDir))...)
	}
	cur, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	inodes := map[[2]uint64]uint64{} // (dev, ino) → links seen in the sandbox
	for _, c := range cur {
		st := stampOf(c.fi)
		inodes[[2]uint64{st.dev, st.ino}]++
	}
	var files []File
	ids := map[string]string{} // changed or added path → its id
	var added, deleted []string
	for rel, e := range s.snap {
		c, ok := cur[rel]
		if !ok {
			deleted = append(deleted, rel)
			continue
		}
		// An untouched file keeps its stamp. One stamped within a second
		// of the snapshot's end is read all the same: the kernel's file
		// clock is coarse (a tick of a few ms), so a write in the same tick
		// as the copy would leave the stamp as it was (git's "racy" files).
		if stampOf(c.fi) == e.st && e.st.ctime < s.racy.Add(-time.Second).UnixNano() {
			continue
		}
		id, err := s.idOf(rel, c)
		if err != nil {
			return nil, err
		}
		if id == e.oid && c.mode == e.mode {
			continue
		}
		if (c.mode == modeLink) != (e.mode == modeLink) {
			// A file that became a link, or the other way: git's diff is
			// a deletion and an addition.
			deleted = append(deleted, rel)
			added = append(added, rel)
			ids[rel] = id
			continue
		}
		ids[rel] = id
		files = append(files, File{Path: rel, Kind: Modified})
	}
	for rel, c := range cur {
		if _, ok := s.snap[rel]; ok {
			continue
		}
		id, err := s.idOf(rel, c)
		if err != nil {
			return nil, err
		}
		ids[rel] = id
		added = append(added, rel)
	}
	sort.Strings(added)
	sort.Strings(deleted)
	// An added path with the content and type of a deleted one is a
	// rename (git's exact renames).
	byID := map[string][]string{}
	for _, d := range deleted {
		if _, still := cur[d]; still {
			continue // a type change: the path is still there, as git's diff has it
		}
		if e := s.snap[d]; e.base != baseNone {
			k := e.oid + fmt.Sprint(e.mode == modeLink)
			byID[k] = append(byID[k], d)
		}
	}
	var stillAdded []string
	renamedFrom := map[string]bool{}
	for _, a := range added {
		k := ids[a] + fmt.Sprint(cur[a].mode == modeLink)
		_, typeChange := s.snap[a] // neither a rename's source nor its target, as in git's diff
		if ds := byID[k]; len(ds) > 0 && !typeChange {
			byID[k] = ds[1:]
			renamedFrom[ds[0]] = true
			files = append(files, File{Path: a, OldPath: ds[0], Kind: Renamed})
			continue
		}
		stillAdded = append(stillAdded, a)
	}
	for _, a := range stillAdded {
		files = append(files, File{Path: a, Kind: Added})
	}
	for _, d := range deleted {
		if !renamedFrom[d] {
			files = append(files, File{Path: d, Kind: Deleted, Bytes: -1})
		}
	}
	for i := range files {
		f := &files[i]
		if f.Kind != Deleted {
			c := cur[f.Path]
			f.Bytes = c.fi.Size()
			f.Protected = s.escapes(f.Path, c, inodes)
		}
		if f.Protected == "" {
			f.Protected = s.protectedBy(f.Path)
		}
		if f.Protected == "" {
			f.Protected = s.tooLarge(f, cur)
		}
		if f.Protected == "" && f.OldPath != "" {
			f.Protected = s.protectedBy(f.OldPath)
		}
	}
	if s.Mode == Worktree {
		files = append(files, s.metaFiles...)
		for _, n := range s.nested {
			files = append(files, File{Path: n, Kind: Added, Protected: "a git repository inside the tree: none of its files is part of the change"})
		}
	}
	sort.SliceStable(files, func(i, j int) bool {
		if files[i].Path != files[j].Path {
			return files[i].Path < files[j].Path
		}
		return files[i].Kind == Deleted // a type change: the deletion first
	})
	r := &Result{Files: files}
	if r.Diff, err = s.diff(ctx, r.Files, cur, ids); err != nil {
		return nil, err
	}
	if s.Mode == Worktree && len(r.Diff) > 0 {
		r.Diff = append([]byte(WorktreeDiffHeader+"\n"), r.Diff...)
	}
	return r, nil
}

// MaxFileBytes is the largest file a change may carry: 64 MiB, before or
// after. A diff holds a file's content (whole, for a binary one), and hub
// holds the diff in memory; a larger file (a sparse 8 GiB one costs no
// disk) is refused.
const MaxFileBytes = 64 << 20

// tooLarge says why f's content is too large to carry, or "".
func (s *Sandbox) tooLarge(f *File, cur map[string]current) string {
	size := int64(0)
	if c, ok := cur[f.Path]; ok && f.Kind != Deleted {
		size = c.fi.Size()
	}
	from := f.Path
	if f.OldPath != "" {
		from = f.OldPath
	}
	if e, ok := s.snap[from]; ok && f.Kind != Added && e.size > size {
		size = e.size
	}
	if size > MaxFileBytes {
		return fmt.Sprintf("%d bytes, over the %d MiB a change may carry in its diff", size, MaxFileBytes>>20)
	}
	return ""
}

// idOf returns the blob id of the sandbox's rel as it is now.
func (s *Sandbox) idOf(rel string, c current) (string, error) {
	p := filepath.Join(s.Dir, filepath.FromSlash(rel))
	if c.mode == modeLink {
		t, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("sandbox: %w", err)
		}
		return blobID([]byte(t)), nil
	}
	if c.fi.Size() > MaxFileBytes {
		return largeID(rel, c.fi), nil // refused unread (tooLarge)
	}
	id, err := fileID(p, c.fi.Size())
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	return id, nil
}

// largeID stands for the id of a file over MaxFileBytes, which hub does
// not read: unique to its path, size and times, so that it matches no
// other file's and changes with it.
func largeID(rel string, fi fs.FileInfo) string {
	st := stampOf(fi)
	return fmt.Sprintf("large:%d:%d:%d:%s", st.size, st.mtime, st.ctime, rel)
}

// escapes says why the sandbox's rel resolves outside the root, or "": a
// link whose target (followed through the sandbox's links) is outside it
// or absolute, or a file with a hard link outside it.
func (s *Sandbox) escapes(rel string, c current, inodes map[[2]uint64]uint64) string {
	if c.mode != modeLink {
		st := stampOf(c.fi)
		if n := nlinkOf(c.fi); n > inodes[[2]uint64{st.dev, st.ino}] {
			return "a hard link to a file outside the root"
		}
		return ""
	}
	target, err := os.Readlink(filepath.Join(s.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return "" // no longer a link: it stays inside
	}
	return linkOutside(rel, filepath.ToSlash(target), func(p string) (string, bool) {
		t, err := os.Readlink(filepath.Join(s.Dir, filepath.FromSlash(p)))
		return filepath.ToSlash(t), err == nil
	}, s.protectedBy)
}

// linkOutside says why a link at the slash path at, relative to a root,
// with target resolves outside the root, or "". The target is resolved
// as the kernel would, one name at a time from the link's directory,
// following each link on the way (link reports a path's target, and
// whether it is a link): a "..", once a link has been followed, goes up
// from where that link leads, which no lexical cleaning of the target
// sees ("self/.." with self a link to "." is the root's parent).
//
// A link that resolves to a protected path (guard says why, "" for none:
// a .git path, a --protect glob) is refused too: applied, it would be a
// door to that path for whatever writes through it later.
func linkOutside(at, target string, link func(rel string) (string, bool), guard func(rel string) string) string {
	if path.IsAbs(target) {
		return "a symbolic link to an absolute path (" + target + ")"
	}
	var dir []string // where the resolution is, below the root
	if d := path.Dir(at); d != "." {
		dir = strings.Split(d, "/")
	}
	todo := strings.Split(target, "/")
	via := "" // the last link followed
	for hops := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(dir) == 0 {
				if via == "" {
					return "a symbolic link that points outside the root (" + target + ")"
				}
				return "a symbolic link that resolves outside the root through the link " + via + " (" + target + ")"
			}
			dir = dir[:len(dir)-1]
			continue
		}
		p := path.Join(strings.Join(dir, "/"), name)
		t, ok := link(p)
		if !ok {
			dir = append(dir, name)
			continue
		}
		if hops++; hops > 40 {
			return "a chain of symbolic links too long to follow"
		}
		if path.IsAbs(t) {
			return "a symbolic link that resolves to an absolute path through the link " + p + " (" + t + ")"
		}
		via = p
		todo = append(strings.Split(t, "/"), todo...)
	}
	if to := strings.Join(dir, "/"); guard != nil {
		if to == "" {
			return "a symbolic link to the root itself, a way into .git and every protected path (" + target + ")"
		}
		if why := guard(to); why != "" {
			return "a symbolic link to " + to + ", which is protected (" + why + ")"
		}
	}
	return ""
}

// throughLink returns the first parent of rel (a clean slash path) that is
// a symbolic link in the sandbox, with the rest of rel below it, as the
// path of that link: it is resolved in turn by escapes.
func (s *Sandbox) throughLink(rel string) (string, bool) {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		fi, err := os.Lstat(filepath.Join(s.Dir, filepath.FromSlash(p)))
		if err != nil {
			return "", false
		}
		if fi.Mode().Type() == fs.ModeSymlink {
			return p, true
		}
	}
	return "", false
}

// list returns the paths of the sandbox after the run, as the snapshot
// would have taken them: copy mode walks it (leaving out what the
// repository ignored at the start, and new paths its ignore rules
// cover); worktree mode asks git for the index and every untracked,
// non-ignored file, and adds the snapshot's paths that are still there.
func (s *Sandbox) list(ctx context.Context) (map[string]current, error) {
	cur := map[string]current{}
	add := func(rel string) error {
		fi, err := os.Lstat(filepath.Join(s.Dir, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) { // (a parent made a file)
			return nil
		}
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if m, ok := modeOf(fi); ok {
			cur[rel] = current{fi: fi, mode: m}
		}
		return nil
	}
	var fresh []string
	if s.Mode == Worktree {
		out, err := s.repo.gitIn(ctx, s.Dir, nil, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--full-name")
		if err != nil {
			return nil, err
		}
		paths := zsplit(out)
		for rel := range s.snap {
			paths = append(paths, rel)
		}
		s.nested = nil
		for _, rel := range paths {
			if _, ok := cur[rel]; ok {
				continue
			}
			if strings.HasSuffix(rel, "/") {
				// git lists a repository the agent made inside the tree
				// as its directory, and none of its files.
				s.nested = append(s.nested, rel+".git")
				continue
			}
			// A path below a link the agent put in place of a directory
			// is not in the sandbox: the link is (and is judged as one).
			if link, below := s.throughLink(rel); below {
				rel = link
			}
			if err := add(rel); err != nil {
				return nil, err
			}
		}
		if err := add(".git"); err != nil {
			return nil, err
		}
		return cur, nil
	}
	n := 0
	err := filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("sandbox: reading the sandbox: %w", err)
		}
		if n++; n%256 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		rel, _ := filepath.Rel(s.Dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if s.skipped(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if _, ok := s.snap[rel]; !ok && !hasGitPart(rel) {
			fresh = append(fresh, rel)
		}
		return add(rel)
	})
	if err != nil {
		return nil, err
	}
	if s.repo != nil && len(fresh) > 0 {
		// New files the repository's ignore rules cover (build output)
		// are no part of the change, as git would not show them.
		rels := make([]string, len(fresh))
		for i, f := range fresh {
			rels[i] = path.Join(s.repo.prefix, f)
		}
		ign, err := s.repo.checkIgnore(ctx, s.repo.top, rels)
		if err != nil {
			return nil, err
		}
		for i, f := range fresh {
			if ign[rels[i]] {
				delete(cur, f)
			}
		}
	}
	return cur, nil
}

// metaEntry is one path of the git directory a worktree shares, as
// readGitMeta saw it: a ref's id (not restored), or a file's or link's
// content and mode (restored).
type metaEntry struct {
	sum     string // what is compared
	ref     bool
	link    bool
	content []byte // a file's content, a link's target
	mode    fs.FileMode
}

// maxMetaFile is the largest file of the git directory readGitMeta keeps
// to put back; a larger one is compared by its sum alone.
const maxMetaFile = 1 << 20

// readGitMeta reads what of the repository a worktree shares with the
// original and a change to which is a change to .git: every ref and HEAD;
// every file and link at the top of the git directory but git's own
// bookkeeping (config, description, what tools cache there); everything
// below hooks/, info/, objects/info/ (alternates) and the registered
// worktrees (but the sandbox's own) and submodules (but their objects).
// Names are as the paths below .git would be.
func (s *Sandbox) readGitMeta(ctx context.Context) (map[string]metaEntry, error) {
	m := map[string]metaEntry{}
	out, err := s.repo.git(ctx, "for-each-ref", "--format=%(refname) %(objectname)")
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, id, ok := strings.Cut(l, " "); ok {
			m[".git/"+name] = metaEntry{sum: id, ref: true}
		}
	}
	if head, err := s.repo.git(ctx, "symbolic-ref", "-q", "HEAD"); err == nil {
		m[".git/HEAD"] = metaEntry{sum: strings.TrimSpace(string(head)), ref: true}
	} else if id, err := s.repo.git(ctx, "rev-parse", "HEAD"); err == nil {
		m[".git/HEAD"] = metaEntry{sum: strings.TrimSpace(string(id)), ref: true}
	}
	if s.commonDir == "" {
		common, err := s.repo.git(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
		if err != nil {
			return nil, err
		}
		s.commonDir = strings.TrimSpace(string(common))
	}
	dir := s.commonDir
	keep := func(p string, fi fs.FileInfo) {
		rel, _ := filepath.Rel(dir, p)
		name := ".git/" + filepath.ToSlash(rel)
		switch {
		case fi.Mode().Type() == fs.ModeSymlink:
			t, _ := os.Readlink(p)
			m[name] = metaEntry{sum: "link " + t, link: true, content: []byte(t)}
		case fi.Mode().IsRegular():
			e := metaEntry{mode: fi.Mode().Perm()}
			if fi.Size() <= maxMetaFile {
				e.content, _ = os.ReadFile(p)
				e.sum = blobID(e.content) + " " + e.mode.String()
			} else {
				e.sum = fileSum(p)
			}
			m[name] = e
		}
	}
	// The staged content of the user's index (not its stat cache, which
	// any git status rewrites): reported, never put back (it may be the
	// user's own staging).
	if ls, err := s.repo.git(ctx, "ls-files", "-s", "-z"); err == nil {
		m[".git/index"] = metaEntry{sum: blobID(ls), ref: true}
	}
	subs := []string{"objects/info", "worktrees", "modules"}
	top, _ := os.ReadDir(dir)
	for _, e := range top {
		fi, err := e.Info()
		switch {
		case err != nil:
		case fi.IsDir():
			switch e.Name() {
			case "objects", "refs", "logs", "worktrees", "modules", "lfs":
				// objects: objects/info only (and objStamps); refs by
				// for-each-ref; logs are reflogs; worktrees and modules
				// below; lfs is a content store.
			default:
				subs = append(subs, e.Name()) // hooks, info, rebase-merge, remotes, …
			}
		case !gitOwn(e.Name()):
			keep(filepath.Join(dir, e.Name()), fi)
		}
	}
	own := filepath.Base(s.adminDir)
	for _, sub := range subs {
		_ = filepath.WalkDir(filepath.Join(dir, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				parts := strings.Split(filepath.ToSlash(rel), "/")
				switch {
				case sub == "worktrees" && len(parts) == 2 && s.adminDir != "" && parts[1] == own:
					return filepath.SkipDir // the sandbox's own
				case sub == "modules" && d.Name() == "objects",
					(sub == "worktrees" || sub == "modules") && len(parts) > 2 && (d.Name() == "logs" || d.Name() == "refs"):
					// Objects, reflogs and per-worktree refs: what git
					// writes as the user works in another worktree.
					return filepath.SkipDir
				}
				return nil
			}
			if sub == "worktrees" && gitOwn(d.Name()) || sub == "modules" && gitOwn(d.Name()) {
				return nil // their index, HEAD and locks are git's bookkeeping
			}
			if fi, err := d.Info(); err == nil {
				keep(p, fi)
			}
			return nil
		})
	}
	return m, nil
}

// restoreGitMeta puts the files and links of the shared git directory
// back as the snapshot had them (a new one removed), and returns the
// changes: a file put back is a protected change the message says was
// undone; a ref is left as it is (the user may have moved it in the
// original meanwhile) and the message says how to undo it.
func (s *Sandbox) restoreGitMeta(before, after map[string]metaEntry) []File {
	var files []File
	names := map[string]bool{}
	for k := range before {
		names[k] = true
	}
	for k := range after {
		names[k] = true
	}
	// What the agent added goes first, then what it changed or removed is
	// put back: a link it put in a directory's place (added) must be gone
	// before the directory's files are written again.
	order := make([]string, 0, len(names))
	for k := range names {
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool {
		_, ai := before[order[i]]
		_, aj := before[order[j]]
		if ai != aj {
			return !ai
		}
		return order[i] < order[j]
	})
	for _, k := range order {
		old, had := before[k]
		cur, has := after[k]
		if had && has && old.sum == cur.sum {
			continue
		}
		f := File{Path: k, Kind: Modified, Bytes: int64(len(cur.content))}
		switch {
		case !had:
			f.Kind = Added
		case !has:
			f.Kind, f.Bytes = Deleted, -1
		}
		ref := old.ref || cur.ref
		if ref {
			undo := "git update-ref -d " + strings.TrimPrefix(k, ".git/")
			if had {
				undo = "git update-ref " + strings.TrimPrefix(k, ".git/") + " " + old.sum
			}
			switch k {
			case ".git/HEAD":
				undo = "check out what you had (HEAD was " + old.sum + ")"
			case ".git/index":
				undo = "git diff --cached, then git restore --staged PATH for what you did not stage"
			}
			f.Bytes = -1
			if f.Kind != Deleted {
				f.Bytes = 0
			}
			f.Protected = sharedRefWhy + " — still in the repository: undo with `" + undo + "`"
			files = append(files, f)
			continue
		}
		p := filepath.Join(s.commonDir, filepath.FromSlash(strings.TrimPrefix(k, ".git/")))
		f.Protected = sharedWhy + " — hub put it back as it was"
		cache := slices.Contains(agentGitCaches, k)
		switch {
		case !had:
			realDirs(s.commonDir, filepath.Dir(p))
			if err := os.RemoveAll(p); err != nil {
				f.Protected = sharedWhy + " — hub could not remove it: " + err.Error()
			}
			removeEmptyDirsUpTo(filepath.Dir(p), s.commonDir)
		case old.content == nil && !old.link:
			f.Protected = sharedWhy + " — too large for hub to put back"
		default:
			realDirs(s.commonDir, filepath.Dir(p))
			_ = os.RemoveAll(p)
			var err error
			if old.link {
				err = os.Symlink(string(old.content), p)
			} else {
				err = os.WriteFile(p, old.content, old.mode)
				if err == nil {
					err = os.Chmod(p, old.mode)
				}
			}
			if err != nil {
				f.Protected = sharedWhy + " — hub could not put it back: " + err.Error()
			}
		}
		if !cache || !strings.HasSuffix(f.Protected, "put it back as it was") {
			files = append(files, f)
		}
	}
	return files
}

// agentGitCaches are files that agent CLIs write into the repository's git
// directory whatever they are asked to do; in worktree mode that is the
// original's, shared with the sandbox. hub puts them back as they were
// like any change there, but does not count them against the run: they
// are no doing of the model. OpenCode caches its project id (the root
// commit) in .git/opencode (packages/opencode/src/project:
// resolveDirectory), seen with 1.18.33.
var agentGitCaches = []string{".git/opencode"}

// objectStamps stamps every file of the object store in dir (loose
// objects and packs; not objects/info, which readGitMeta keeps).
func objectStamps(dir string) map[string]stamp {
	m := map[string]stamp{}
	root := filepath.Join(dir, "objects")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == "info" && filepath.Dir(p) == root {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				rel, _ := filepath.Rel(dir, p)
				m[".git/"+filepath.ToSlash(rel)] = stampOf(fi)
			}
		}
		return nil
	})
	return m
}

// rewrittenObjects are the files of the object store that were there
// before and were rewritten since: an object never changes (new ones
// are the agent's commits, and git gc may remove loose ones), so a
// rewritten one is the agent's doing, which hub cannot undo.
//
// git "freshens" an object it is asked to write again by touching it, so
// a moved stamp alone proves nothing: a loose object is rewritten when its
// content no longer hashes to its name, a pack when its inode or size
// changed.
func rewrittenObjects(dir string, before, after map[string]stamp) []File {
	var files []File
	for k, st := range before {
		now, ok := after[k]
		if !ok || now == st {
			continue
		}
		if loose := looseID(k); loose != "" {
			if looseHolds(filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(k, ".git/"))), loose) {
				continue
			}
		} else if now.ino == st.ino && now.size == st.size {
			continue
		}
		{
			files = append(files, File{Path: k, Kind: Modified, Bytes: now.size,
				Protected: "an object file of the repository was rewritten (objects never change) — check the original with `git fsck`"})
		}
	}
	return files
}

// looseID is the object id a loose object's path (".git/objects/ab/cd…")
// names, "" for another file.
func looseID(rel string) string {
	parts := strings.Split(rel, "/")
	if len(parts) != 4 || len(parts[2]) != 2 || len(parts[3]) != 38 {
		return ""
	}
	return parts[2] + parts[3]
}

// looseHolds reports whether the loose object file p inflates to content
// whose id is id (the object git named it after).
func looseHolds(p, id string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	z, err := zlib.NewReader(f)
	if err != nil {
		return false
	}
	h := sha1.New()
	if _, err := io.Copy(h, io.LimitReader(z, MaxFileBytes+1<<10)); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == id
}

// realDirs makes every directory from top down to dir a real one: a link
// the agent put in a directory's place is removed (and the directory made
// again), so that putting a file back never writes through it.
func realDirs(top, dir string) {
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return
	}
	d := top
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		fi, err := os.Lstat(d)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			_ = os.Remove(d) // a link or a file in a directory's place
		}
		_ = os.Mkdir(d, 0o755)
	}
}

// removeEmptyDirsUpTo removes dir and its parents while they are empty,
// stopping at top (not removed).
func removeEmptyDirsUpTo(dir, top string) {
	for d := dir; d != top && strings.HasPrefix(d, top+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			return
		}
	}
}

// gitOwn reports whether name, a file at the top of a git directory, is
// git's own bookkeeping that any git command (the agent's git status, or
// the user's in the original) rewrites: no change of the user's.
func gitOwn(name string) bool {
	switch name {
	case "index", "ORIG_HEAD", "FETCH_HEAD", "COMMIT_EDITMSG", "AUTO_MERGE", "packed-refs", "HEAD", "gc.log", "gc.pid":
		return true // the index is compared by its staged content, HEAD and packed refs as refs
	}
	return strings.HasSuffix(name, ".lock") || strings.HasPrefix(name, "sharedindex.")
}

// fileSum is the blob id of the file at p (of its first MiB and its size,
// for a larger one), or "" when it cannot be read.
func fileSum(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return ""
	}
	fi, _ := f.Stat()
	if fi != nil && fi.Size() > int64(len(b)) {
		return fmt.Sprintf("%s+%d", blobID(b), fi.Size())
	}
	return blobID(b)
}

// sharedWhy is why a change to the git directory a worktree shares is
// refused.
const sharedWhy = "in .git (always protected): the worktree shares the repository's git directory"

// sharedRefWhy is why a change to a ref of the repository a worktree
// shares is refused.
const sharedRefWhy = "a ref of the repository the worktree shares (always protected; if it was you, in the original, while the agent ran: run again)"
