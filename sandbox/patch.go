package sandbox

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// MaxTextBytes is the largest file diffed line by line: a larger one is
// written whole, as git writes a binary file (GIT binary patch, literal).
const MaxTextBytes = 8 << 20

// contextLines is the lines of context around each hunk, as git's default.
const contextLines = 3

// zeroID is git's id of no content (the old side of an added file).
const zeroID = "0000000000000000000000000000000000000000"

// binary reports whether content is binary by git's rule: a NUL byte in
// its first 8000 bytes.
func binary(content []byte) bool {
	return bytes.IndexByte(content[:min(len(content), 8000)], 0) >= 0
}

// diff writes the git-style diff of the files that are not protected,
// with full blob ids on the index lines (so Apply can tell that a target
// is still as it was) and binary content as literal patches.
func (s *Sandbox) diff(ctx context.Context, files []File, cur map[string]current, ids map[string]string) ([]byte, error) {
	var out bytes.Buffer
	for i := range files {
		f := &files[i]
		if f.Protected != "" {
			continue
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		var old, new []byte
		var err error
		gf := &gitdiff.File{}
		from := f.Path
		if f.OldPath != "" {
			from = f.OldPath
		}
		whole := false // the old content is gone: the new one goes whole
		if f.Kind != Added {
			e := s.snap[from]
			old, err = s.baseContent(ctx, from)
			switch {
			case errors.Is(err, errBaseGone):
				// The original's file changed while the agent ran, and
				// hub keeps no copy of what it was: the new content goes
				// whole, as a binary literal, whose index line still names
				// the snapshot's id (applying it is then a conflict until
				// the file is as it was).
				whole, old = true, nil
			case err != nil:
				return nil, err
			}
			gf.OldName, gf.OldMode, gf.OldOIDPrefix = from, os.FileMode(e.mode), e.oid
		}
		if f.Kind != Deleted {
			c := cur[f.Path]
			if new, err = s.content(f.Path, c); err != nil {
				return nil, err
			}
			if ids[f.Path] != "" && blobID(new) != ids[f.Path] {
				return nil, fmt.Errorf("sandbox: %s changed while hub compared it", f.Path)
			}
			gf.NewName, gf.NewMode, gf.NewOIDPrefix = f.Path, os.FileMode(c.mode), blobID(new)
		}
		switch f.Kind {
		case Added:
			gf.IsNew, gf.OldOIDPrefix = true, zeroID
		case Deleted:
			gf.IsDelete, gf.NewOIDPrefix = true, zeroID
		case Renamed:
			gf.IsRename, gf.Score = true, 100
			// git writes no index line for an exact rename; hub does, so
			// that Apply can tell the old file is still as the snapshot's.
			if gf.OldMode == gf.NewMode {
				gf.OldMode, gf.NewMode = 0, 0 // nor mode lines for an unchanged mode
			}
		}
		if gf.OldMode == gf.NewMode && f.Kind == Modified {
			gf.NewMode = 0 // the mode goes on the index line
		} else if f.Kind == Modified && gf.NewMode == 0 {
			gf.NewMode = gf.OldMode
		}
		f.Binary = whole || binary(old) || binary(new) || len(old) > MaxTextBytes || len(new) > MaxTextBytes
		if f.Kind != Renamed {
			if f.Binary {
				gf.IsBinary = true
				gf.BinaryFragment = literal(new)
				if !whole {
					gf.ReverseBinaryFragment = literal(old)
				}
			} else if gf.TextFragments, err = fragments(old, new); err != nil {
				return nil, fmt.Errorf("sandbox: diffing %s: %w", f.Path, err)
			}
		}
		text := gf.String()
		if f.Kind == Modified && gf.NewMode == 0 && len(gf.TextFragments) == 0 && !gf.IsBinary {
			continue // nothing git would show
		}
		out.WriteString(text)
		if out.Len() > MaxChangeBytes {
			return nil, fmt.Errorf("%w: over %d MiB after %s", ErrChangeTooLarge, MaxChangeBytes>>20, f.Path)
		}
	}
	return out.Bytes(), nil
}

// MaxChangeBytes is the largest diff Changes writes: 256 MiB (hub holds it
// in memory, and so does whoever reads run.finished's cut of it and the
// whole of it through --diff-out).
const MaxChangeBytes = 256 << 20

// ErrChangeTooLarge is a change whose diff is over MaxChangeBytes.
var ErrChangeTooLarge = errors.New("sandbox: the change is too large to carry in one diff")

// content returns the sandbox's rel as it is now: a file's bytes, a link's
// target.
func (s *Sandbox) content(rel string, c current) ([]byte, error) {
	p := filepath.Join(s.Dir, filepath.FromSlash(rel))
	if c.mode == modeLink {
		t, err := os.Readlink(p)
		return []byte(t), err
	}
	return os.ReadFile(p)
}

// literal is a binary fragment holding content whole.
func literal(content []byte) *gitdiff.BinaryFragment {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write(content)
	_ = w.Close()
	return &gitdiff.BinaryFragment{Method: gitdiff.BinaryPatchLiteral, Size: int64(len(content)), RawData: z.Bytes()}
}

// fragments returns the hunks that turn old into new, with contextLines of
// context, from the line diff of go-udiff.
func fragments(old, new []byte) ([]*gitdiff.TextFragment, error) {
	o, n := string(old), string(new)
	if o == n {
		return nil, nil
	}
	u, err := udiff.ToUnifiedDiff("a", "b", o, udiff.Lines(o, n), contextLines)
	if err != nil {
		return nil, err
	}
	frags := make([]*gitdiff.TextFragment, 0, len(u.Hunks))
	for _, h := range u.Hunks {
		tf := &gitdiff.TextFragment{OldPosition: int64(h.FromLine), NewPosition: int64(h.ToLine)}
		for _, l := range h.Lines {
			var op gitdiff.LineOp
			switch l.Kind {
			case udiff.Delete:
				op = gitdiff.OpDelete
				tf.OldLines++
				tf.LinesDeleted++
			case udiff.Insert:
				op = gitdiff.OpAdd
				tf.NewLines++
				tf.LinesAdded++
			default:
				op = gitdiff.OpContext
				tf.OldLines++
				tf.NewLines++
			}
			tf.Lines = append(tf.Lines, gitdiff.Line{Op: op, Line: l.Content})
		}
		// An empty side starts at line 0, as git and patch write it.
		if tf.OldLines == 0 {
			tf.OldPosition--
		}
		if tf.NewLines == 0 {
			tf.NewPosition--
		}
		for _, l := range tf.Lines {
			if l.Op != gitdiff.OpContext {
				break
			}
			tf.LeadingContext++
		}
		for j := len(tf.Lines) - 1; j >= 0 && tf.Lines[j].Op == gitdiff.OpContext; j-- {
			tf.TrailingContext++
		}
		frags = append(frags, tf)
	}
	return frags, nil
}

// Cut returns diff cut to at most max bytes at the end of a line (the
// whole diff when it is shorter; at max itself when the first line is
// longer).
func Cut(diff []byte, max int) string {
	if len(diff) <= max {
		return string(diff)
	}
	cut := diff[:max]
	if i := bytes.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	}
	return string(cut)
}
