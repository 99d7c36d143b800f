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

	"github.com/bluekeyes/go-gitdiff/gitdiff"
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
// its target and renames them all into place; a failure on the way puts
// back what was moved. File modes are kept: a changed file keeps its
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
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer r.Close()
	s := &Sandbox{protect: o.Protect}
	var protected, conflicts []string
	var ops []*op
	touched := map[string]bool{}
	for _, f := range files {
		o := &op{f: f}
		names := []string{f.OldName, f.NewName}
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
		default:
			o.kind = Modified
		}
		ops = append(ops, o)
	}
	if len(protected) > 0 {
		sort.Strings(protected)
		return nil, &ProtectedError{Paths: protected}
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	for _, o := range ops {
		if msg := o.prepare(r, touched); msg != "" {
			conflicts = append(conflicts, msg)
		}
	}
	for _, o := range ops {
		if o.kind != Deleted && o.mode&fs.ModeSymlink != 0 {
			if why := linkEscapes(o.f.NewName, string(o.content)); why != "" {
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

// linkEscapes says why a link at n to target resolves outside the root.
func linkEscapes(n, target string) string {
	if path.IsAbs(target) {
		return "a symbolic link to an absolute path (" + target + ")"
	}
	if j := path.Join(path.Dir(n), target); j == ".." || strings.HasPrefix(j, "../") {
		return "a symbolic link that points outside the root (" + target + ")"
	}
	return ""
}

// prepare checks o's paths in r against the diff's preimage and computes
// its new content; it returns what is wrong, or "".
func (o *op) prepare(r *os.Root, touched map[string]bool) string {
	f := o.f
	for _, n := range []string{f.OldName, f.NewName} {
		if n != "" && touched[n] && !(o.kind == Added && touched[n] && f.OldName == "") {
			return n + ": changed twice by the diff"
		}
	}
	var old []byte
	if o.kind != Added {
		fi, err := r.Lstat(f.OldName)
		if err != nil {
			return f.OldName + ": not there (deleted since the snapshot)"
		}
		m, ok := modeOf(fi)
		if !ok {
			return f.OldName + ": not a file"
		}
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
		if _, err := r.Lstat(f.NewName); err == nil && !touched[f.NewName] {
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
	if id := f.NewOIDPrefix; len(id) == 40 && id != zeroID && blobID(o.content) != id {
		return f.NewName + ": the diff's result does not have the id its index line names"
	}
	newMode := gitMode(f.NewMode)
	if newMode == 0 {
		newMode = gitMode(f.OldMode)
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

// write carries out the checked ops: every content to a temporary first,
// then the old files moved aside and the temporaries renamed into place;
// on a failure what was moved is put back and the temporaries removed.
func write(r *os.Root, ops []*op) (applied []Applied, err error) {
	var made []string // directories made, deepest last
	defer func() {
		if err == nil {
			return
		}
		for i := len(ops) - 1; i >= 0; i-- {
			o := ops[i]
			if o.tmp != "" {
				_ = r.Remove(o.tmp)
			}
		}
		for i := len(made) - 1; i >= 0; i-- {
			_ = r.Remove(made[i])
		}
	}()
	for _, o := range ops {
		if o.kind == Deleted {
			continue
		}
		dir := path.Dir(o.f.NewName)
		if dir != "." {
			ds, err := mkdirs(r, dir)
			made = append(made, ds...)
			if err != nil {
				return nil, fmt.Errorf("sandbox: applying %s: %w", o.f.NewName, err)
			}
		}
		o.tmp = tempName(o.f.NewName)
		if o.mode&fs.ModeSymlink != 0 {
			err = r.Symlink(string(o.content), o.tmp)
		} else {
			err = writeFile(r, o.tmp, o.content, o.mode)
		}
		if err != nil {
			o.tmp = ""
			return nil, fmt.Errorf("sandbox: applying %s: %w", o.f.NewName, err)
		}
	}
	// The moves: each old file aside, then the new one in.
	var moved []*op
	undo := func() {
		for i := len(moved) - 1; i >= 0; i-- {
			o := moved[i]
			if o.kind != Deleted && o.tmp == "" { // in place: take it out
				_ = r.Remove(o.f.NewName)
			}
			if o.backup != "" {
				_ = r.Rename(o.backup, o.f.OldName)
			}
		}
	}
	for _, o := range ops {
		if o.kind != Added {
			o.backup = tempName(o.f.OldName)
			if err := r.Rename(o.f.OldName, o.backup); err != nil {
				o.backup = ""
				undo()
				return nil, fmt.Errorf("sandbox: applying %s: %w", o.f.OldName, err)
			}
		}
		moved = append(moved, o)
		if o.kind != Deleted {
			if err := r.Rename(o.tmp, o.f.NewName); err != nil {
				undo()
				return nil, fmt.Errorf("sandbox: applying %s: %w", o.f.NewName, err)
			}
			o.tmp = ""
		}
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

// tempName is a new name beside name for a temporary.
func tempName(name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return path.Join(path.Dir(name), ".hub-apply-"+hex.EncodeToString(b[:])+"-"+path.Base(name))
}
