package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"golang.org/x/sys/unix"
)

// ConflictError is a diff that Apply refused because a path it touches is
// not as the diff expects (changed since the snapshot, or already there).
type ConflictError struct {
	Paths []string // each "path: what is wrong", sorted
}

func (e *ConflictError) Error() string {
	return "sandbox: the original changed since the snapshot: " + strings.Join(e.Paths, "; ")
}

// ProtectedError is a diff that Apply refused because it changes a
// protected path or one that resolves outside the root.
type ProtectedError struct {
	Paths []string // each "path: why", sorted
}

func (e *ProtectedError) Error() string {
	return "sandbox: the change touches protected paths: " + strings.Join(e.Paths, "; ")
}

// WorktreeDiffHeader is the first line of a worktree sandbox's diff: its
// paths are relative to the repository's top level, not to --cwd (git
// apply, like any patch reader, skips text before the first "diff --git").
// InRepositoryTop reports it.
const WorktreeDiffHeader = "hub sandbox diff (--sandbox worktree): paths are relative to the repository's top level"

// InRepositoryTop reports whether diff begins with WorktreeDiffHeader: its
// paths are relative to the top level of a repository.
func InRepositoryTop(diff []byte) bool {
	return bytes.HasPrefix(diff, []byte(WorktreeDiffHeader+"\n"))
}

// ErrBadDiff is a diff Apply cannot read.
var ErrBadDiff = errors.New("sandbox: not a diff hub can apply")

// MaxDiffBytes is the largest diff Apply reads: 1 GiB.
const MaxDiffBytes = 1 << 30

// ApplyOptions are Apply's checks beyond the ones it always makes.
type ApplyOptions struct {
	// Protect are more globs of paths the diff may not touch (see
	// Options.Protect); a .git path is always refused.
	Protect []string
}

// Applied is one path Apply changed.
type Applied struct {
	Path    string
	OldPath string // a rename's
	Kind    Kind
}

// op is one file of a diff, checked and ready to write.
type op struct {
	f       *gitdiff.File
	kind    Kind
	content []byte // the new content (a link's target); nil when deleted
	mode    os.FileMode
	tmp     string // the temporary the content is written to
	backup  string // where the old file was moved
}

// Apply applies diff (a git-style diff, as Changes writes it, or git's
// own) to the tree at root, all or nothing. Before it writes anything it
// checks every path: a .git path, one matching o.Protect, one below a
// symbolic link, or a new link that points outside the root is refused
// (*ProtectedError); a path to change or delete must be as the diff's
// preimage (its blob id, when the index line has a full one, else its
// hunks must apply exactly) and a path to add must not exist
// (*ConflictError). Then it writes each new content to a temporary beside
// its target (or in the deepest of its directories that is there), moves
// the old files aside and renames the temporaries into place; a failure
// on the way puts back what was moved. File modes are kept: a changed file keeps its
// permission bits, with the executable bit as the diff says. Cancelling
// ctx before the writes start stops it; once they start they finish.
func Apply(ctx context.Context, root string, diff []byte, o ApplyOptions) ([]Applied, error) {
	if err := CheckProtect(o.Protect); err != nil {
		return nil, err
	}
	if len(diff) > MaxDiffBytes {
		return nil, fmt.Errorf("%w: it is %d bytes, over %d", ErrBadDiff, len(diff), MaxDiffBytes)
	}
	files, _, err := gitdiff.Parse(bytes.NewReader(diff))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDiff, err)
	}
	if len(files) == 0 && len(bytes.TrimSpace(diff)) > 0 {
		// Text that is no diff at all is a mistake, not an empty change.
		return nil, fmt.Errorf("%w: it holds no file's change", ErrBadDiff)
	}
	for _, f := range files {
		if f.IsBinary && f.BinaryFragment == nil {
			// "Binary files a/x and b/x differ": git diff without --binary.
			return nil, fmt.Errorf("%w: the binary change of %s has no content (git diff --binary writes it)", ErrBadDiff, f.NewName)
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer r.Close()
	// One Apply at a time on a tree: the check and the writes are one
	// step, so of two applies of changes to one path exactly one lands and
	// the other is a conflict.
	// The lock is the repository's when root is in one: an apply at its
	// top and one in a subdirectory touch the same files.
	lockAt := root
	if rp, _ := findRepo(ctx, root); rp != nil {
		lockAt = rp.top
	}
	unlock, err := lockTree(ctx, lockAt)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s := &Sandbox{protect: o.Protect}
	var protected, conflicts []string
	var ops []*op
	touched := map[string]bool{}
	for _, f := range files {
		o := &op{f: f}
		names := []string{f.OldName, f.NewName}
		if f.OldName == f.NewName {
			names = names[:1]
		}
		for _, n := range names {
			if n == "" {
				continue
			}
			if why := badName(n); why != "" {
				protected = append(protected, n+": "+why)
			} else if why := s.protectedBy(n); why != "" {
				protected = append(protected, n+": "+why)
			} else if why := belowLink(r, n); why != "" {
				protected = append(protected, n+": "+why)
			}
		}
		if f.IsCopy {
			conflicts = append(conflicts, f.NewName+": a copy, which hub does not apply")
			continue
		}
		switch {
		case f.IsNew:
			o.kind = Added
		case f.IsDelete:
			o.kind = Deleted
		case f.IsRename:
			o.kind = Renamed
		case f.OldName != f.NewName:
			// Two names and no rename: git apply would take it as a
			// rename that checks neither side. Refused.
			return nil, fmt.Errorf("%w: %s and %s differ with no rename header", ErrBadDiff, f.OldName, f.NewName)
		default:
			o.kind = Modified
		}
		ops = append(ops, o)
	}
	written := map[string]int{} // each path the diff leaves content at, at most once
	for _, o := range ops {
		if o.kind != Deleted {
			if written[o.f.NewName]++; written[o.f.NewName] == 2 {
				conflicts = append(conflicts, o.f.NewName+": changed twice by the diff")
			}
		}
	}
	if len(protected) > 0 {
		sort.Strings(protected)
		return nil, &ProtectedError{Paths: protected}
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	leaving := map[string]bool{} // the paths the diff deletes or renames
	for _, o := range ops {
		if o.kind == Deleted || o.kind == Renamed {
			leaving[o.f.OldName] = true
		}
	}
	for _, o := range ops {
		if msg := o.prepare(r, touched, leaving); msg != "" {
			conflicts = append(conflicts, msg)
		}
	}
	after := afterDiff(r, ops)
	for _, o := range ops {
		if o.kind != Deleted && o.mode&fs.ModeSymlink != 0 {
			if why := linkOutside(o.f.NewName, string(o.content), after, s.protectedBy); why != "" {
				protected = append(protected, o.f.NewName+": "+why)
			}
		}
	}
	if len(protected) > 0 {
		sort.Strings(protected)
		return nil, &ProtectedError{Paths: protected}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return nil, &ConflictError{Paths: conflicts}
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return write(r, ops)
}

// badName says why a diff's path name is no path below the root, or "".
func badName(n string) string {
	switch {
	case n == "" || strings.HasPrefix(n, "/"):
		return "an absolute path"
	case strings.ContainsRune(n, 0):
		return "a NUL in the name"
	case path.Clean(n) != n:
		return "not a clean path"
	case n == ".." || strings.HasPrefix(n, "../"):
		return "outside the root"
	}
	return ""
}

// belowLink says why the path n of the tree in r cannot be written without
// following a symbolic link, or "".
func belowLink(r *os.Root, n string) string {
	parts := strings.Split(n, "/")
	for i := 1; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		fi, err := r.Lstat(p)
		if err != nil {
			return "" // not there: Apply makes it a directory
		}
		if fi.Mode().Type() == fs.ModeSymlink {
			return "below the symbolic link " + p
		}
	}
	return ""
}

// afterDiff reports, as linkOutside asks, the links of the tree in r as
// the ops will leave it: the diff's new links and the tree's own links
// the diff leaves in place, so that links the diff adds together, or with
// the tree's, are followed as the kernel will follow them.
func afterDiff(r *os.Root, ops []*op) func(string) (string, bool) {
	gone := map[string]bool{}
	next := map[string]*op{}
	for _, o := range ops {
		if o.kind == Deleted || o.kind == Renamed {
			gone[o.f.OldName] = true
		}
	}
	for _, o := range ops {
		if o.kind != Deleted {
			next[o.f.NewName] = o
		}
	}
	return func(p string) (string, bool) {
		if o, ok := next[p]; ok {
			return string(o.content), o.mode&fs.ModeSymlink != 0
		}
		if gone[p] {
			return "", false
		}
		t, err := r.Readlink(p)
		return t, err == nil
	}
}

// prepare checks o's paths in r against the diff's preimage and computes
// its new content; it returns what is wrong, or "".
func (o *op) prepare(r *os.Root, touched, leaving map[string]bool) string {
	f := o.f
	for _, n := range []string{f.OldName, f.NewName} {
		if n != "" && touched[n] && !(o.kind == Added && touched[n] && f.OldName == "") {
			return n + ": changed twice by the diff"
		}
	}
	var old []byte
	var oldMode gitMode
	if o.kind != Added {
		fi, err := r.Lstat(f.OldName)
		if err != nil {
			return f.OldName + ": not there (deleted since the snapshot)"
		}
		m, ok := modeOf(fi)
		if !ok {
			return f.OldName + ": not a file"
		}
		oldMode = m
		if f.OldMode != 0 && os.FileMode(m) != f.OldMode {
			return fmt.Sprintf("%s: its mode is %o, the diff expects %o", f.OldName, m, f.OldMode)
		}
		if m == modeLink {
			t, err := r.Readlink(f.OldName)
			if err != nil {
				return f.OldName + ": " + err.Error()
			}
			old = []byte(t)
		} else if old, err = r.ReadFile(f.OldName); err != nil {
			return f.OldName + ": " + err.Error()
		}
		if id := f.OldOIDPrefix; len(id) == 40 && blobID(old) != id {
			return f.OldName + ": changed since the snapshot"
		} else if id != "" && !strings.HasPrefix(blobID(old), id) {
			return f.OldName + ": changed since the snapshot"
		}
		o.mode = fi.Mode().Perm()
		if m == modeLink {
			o.mode = fs.ModeSymlink
		}
		touched[f.OldName] = true
	}
	if o.kind == Deleted {
		return ""
	}
	if o.kind == Added || o.kind == Renamed {
		// A directory the diff empties may give way to the new file.
		if fi, err := r.Lstat(f.NewName); err == nil && !touched[f.NewName] && !(fi.IsDir() && leavesBelow(leaving, f.NewName)) {
			return f.NewName + ": already there"
		}
		touched[f.NewName] = true
	}
	var out bytes.Buffer
	if o.kind == Renamed && len(f.TextFragments) == 0 && f.BinaryFragment == nil {
		out.Write(old)
	} else if err := gitdiff.Apply(&out, bytes.NewReader(old), f); err != nil {
		var c *gitdiff.Conflict
		if errors.As(err, &c) {
			return f.NewName + ": changed since the snapshot (" + err.Error() + ")"
		}
		return f.NewName + ": " + err.Error()
	}
	o.content = out.Bytes()
	if id := f.NewOIDPrefix; strings.Trim(id, "0") != "" && !strings.HasPrefix(blobID(o.content), id) {
		return f.NewName + ": the diff's result does not have the id its index line names"
	}
	newMode := gitMode(f.NewMode)
	if newMode == 0 {
		newMode = gitMode(f.OldMode)
	}
	if newMode == 0 && oldMode == modeLink {
		newMode = modeLink // a diff silent on modes (an exact rename) keeps a link a link
	}
	switch {
	case newMode == modeLink:
		o.mode = fs.ModeSymlink
	case o.kind == Added || o.mode&fs.ModeSymlink != 0:
		o.mode = 0o644
		if newMode == modeExec {
			o.mode = 0o755
		}
	case newMode == modeExec:
		o.mode |= 0o100 | (o.mode&0o044)>>2 // x where r is, as git checks out
	case newMode == modeFile:
		o.mode &^= 0o111
	}
	return ""
}

// leavesBelow reports whether a path of leaving is below dir.
func leavesBelow(leaving map[string]bool, dir string) bool {
	for p := range leaving {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// write carries out the checked ops: every content to a temporary first
// (in the deepest directory of its target that is there), then every old
// file moved aside, then each new file renamed into place, making its
// directories (or removing the emptied directory it replaces) first; on a
// failure all of it is undone, in reverse, and the temporaries removed.
func write(r *os.Root, ops []*op) (applied []Applied, err error) {
	replaced := map[string]bool{} // the new paths: a directory there gives way
	for _, o := range ops {
		if o.kind != Deleted {
			replaced[o.f.NewName] = true
		}
	}
	var (
		moved   []*op     // old files moved aside
		emptied []dirPerm // emptied directories removed, deepest first
		made    []string  // directories made, deepest last
		placed  []string  // new files in place
	)
	defer func() {
		if err == nil {
			return
		}
		for i := len(placed) - 1; i >= 0; i-- {
			_ = r.Remove(placed[i])
		}
		for i := len(made) - 1; i >= 0; i-- {
			_ = r.Remove(made[i])
		}
		for i := len(emptied) - 1; i >= 0; i-- {
			_ = r.Mkdir(emptied[i].name, 0o700)
			_ = r.Chmod(emptied[i].name, emptied[i].perm)
		}
		for i := len(moved) - 1; i >= 0; i-- {
			_ = r.Rename(moved[i].backup, moved[i].f.OldName)
		}
		for _, o := range ops {
			if o.tmp != "" {
				_ = r.Remove(o.tmp)
			}
		}
	}()
	for _, o := range ops {
		if o.kind == Deleted {
			continue
		}
		tmp := tempIn(existingDir(r, o.f.NewName), o.f.NewName)
		if o.mode&fs.ModeSymlink != 0 {
			err = r.Symlink(string(o.content), tmp)
		} else {
			err = writeFile(r, tmp, o.content, o.mode)
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: applying %s: %w", o.f.NewName, err)
		}
		o.tmp = tmp
	}
	for _, o := range ops {
		if o.kind == Added {
			continue
		}
		// Beside the old file, or beside the topmost of its directories
		// that a new file replaces (that directory must empty).
		dir := path.Dir(o.f.OldName)
		for d := dir; d != "."; d = path.Dir(d) {
			if replaced[d] {
				dir = path.Dir(d)
			}
		}
		backup := tempIn(dir, o.f.OldName)
		if err := r.Rename(o.f.OldName, backup); err != nil {
			return nil, fmt.Errorf("sandbox: applying %s: %w", o.f.OldName, err)
		}
		o.backup = backup
		moved = append(moved, o)
	}
	for _, o := range ops {
		if o.kind == Deleted {
			continue
		}
		if fi, lerr := r.Lstat(o.f.NewName); lerr == nil && fi.IsDir() {
			ds, err := removeEmptyTree(r, o.f.NewName)
			emptied = append(emptied, ds...)
			if err != nil {
				return nil, fmt.Errorf("sandbox: applying %s: %w", o.f.NewName, err)
			}
		}
		if dir := path.Dir(o.f.NewName); dir != "." {
			ds, err := mkdirs(r, dir)
			made = append(made, ds...)
			if err != nil {
				return nil, fmt.Errorf("sandbox: applying %s: %w", o.f.NewName, err)
			}
		}
		if err := r.Rename(o.tmp, o.f.NewName); err != nil {
			return nil, fmt.Errorf("sandbox: applying %s: %w", o.f.NewName, err)
		}
		o.tmp = ""
		placed = append(placed, o.f.NewName)
	}
	for _, o := range ops {
		if o.backup != "" {
			_ = r.Remove(o.backup)
		}
		name := o.f.NewName
		if o.kind == Deleted {
			name = o.f.OldName
			removeEmptyParents(r, name)
		}
		if o.kind == Renamed {
			removeEmptyParents(r, o.f.OldName)
		}
		a := Applied{Path: name, Kind: o.kind}
		if o.kind == Renamed {
			a.OldPath = o.f.OldName
		}
		applied = append(applied, a)
	}
	return applied, nil
}

// dirPerm is a directory and its permissions.
type dirPerm struct {
	name string
	perm fs.FileMode
}

// existingDir returns the deepest parent of name that is a directory of
// the tree in r ("." at least).
func existingDir(r *os.Root, name string) string {
	dir := "."
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		if fi, err := r.Lstat(p); err != nil || !fi.IsDir() {
			break
		}
		dir = p
	}
	return dir
}

// removeEmptyTree removes the directory name, which must hold nothing but
// empty directories, and returns the directories it removed, deepest
// first.
func removeEmptyTree(r *os.Root, name string) ([]dirPerm, error) {
	fi, err := r.Lstat(name)
	if err != nil {
		return nil, err
	}
	d, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	var removed []dirPerm
	for _, e := range ents {
		if !e.IsDir() {
			return removed, fmt.Errorf("%s is a directory that holds %s", name, e.Name())
		}
		ds, err := removeEmptyTree(r, path.Join(name, e.Name()))
		removed = append(removed, ds...)
		if err != nil {
			return removed, err
		}
	}
	if err := r.Remove(name); err != nil {
		return removed, err
	}
	return append(removed, dirPerm{name, fi.Mode().Perm()}), nil
}

// mkdirs makes the missing directories of dir in r and returns them.
func mkdirs(r *os.Root, dir string) ([]string, error) {
	var made []string
	parts := strings.Split(dir, "/")
	for i := 1; i <= len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		fi, err := r.Lstat(p)
		if err == nil {
			if !fi.IsDir() {
				return made, fmt.Errorf("%s is not a directory", p)
			}
			continue
		}
		if err := r.Mkdir(p, 0o755); err != nil {
			return made, err
		}
		made = append(made, p)
	}
	return made, nil
}

// removeEmptyParents removes the directories of name that a deletion left
// empty, as git apply does.
func removeEmptyParents(r *os.Root, name string) {
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		if fi, err := r.Lstat(d); err != nil || !fi.IsDir() {
			return // a file the diff put in the directory's place
		}
		if err := r.Remove(d); err != nil { // fails unless empty
			return
		}
	}
}

func writeFile(r *os.Root, name string, content []byte, perm os.FileMode) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, bytes.NewReader(content)); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tempIn is a new name in the directory dir for a temporary of name.
func tempIn(dir, name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return path.Join(dir, ".hub-apply-"+hex.EncodeToString(b[:])+"-"+path.Base(name))
}

// lockTree takes an exclusive flock(2) on the directory root (advisory:
// it holds other Applies off, not other writers), waiting for it as long
// as ctx allows; the returned func releases it.
func lockTree(ctx context.Context, root string) (func(), error) {
	d, err := os.Open(root)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	for {
		err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = unix.Flock(int(d.Fd()), unix.LOCK_UN); d.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			d.Close()
			return nil, fmt.Errorf("sandbox: locking %s: %w", root, err)
		}
		select {
		case <-ctx.Done():
			d.Close()
			return nil, context.Cause(ctx)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
