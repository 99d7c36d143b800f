package adapters

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// File is a read-only context file of a run (hub.Request.Files, --file):
// its path as hub names it to the agent (absolute when hub read it) and
// its content as read, UTF-8 text.
type File struct {
	Path    string
	Content string
}

// InlineFiles is prompt with files inlined ahead of it, the one form every
// CLI carries whole (docs/cli.md, "Context files"): each file a block
//
//	<file-ID path="/abs/path">
//	content
//	</file-ID>
//
// then a blank line, then prompt. ID is 12 hex digits of the SHA-256 of
// the file's path and content, chosen so that "</file-ID>" occurs nowhere
// in the content: a file holding "</file>", or any other tag, cannot end
// its block early, and the content is passed verbatim, unescaped. A
// newline before the closing tag is hub's, added only when the content
// does not end in one. The path is quoted as an XML attribute (&, <, >, "
// and control characters escaped). With no files it is prompt.
func InlineFiles(files []File, prompt string) string {
	if len(files) == 0 {
		return prompt
	}
	var b strings.Builder
	for _, f := range files {
		id := blockID(f)
		fmt.Fprintf(&b, "<file-%s path=%s>\n%s", id, quoteAttr(f.Path), f.Content)
		if !strings.HasSuffix(f.Content, "\n") {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "</file-%s>\n\n", id)
	}
	b.WriteString(prompt)
	return b.String()
}

// blockID is the block id of f: the first 12 hex digits of the SHA-256 of
// its path and content (and a counter, in the unlikely case that its
// closing tag occurs in the content).
func blockID(f File) string {
	for n := 0; ; n++ {
		h := sha256.Sum256([]byte(f.Path + "\x00" + f.Content + "\x00" + strconv.Itoa(n)))
		id := hex.EncodeToString(h[:6])
		if !strings.Contains(f.Content, "</file-"+id+">") {
			return id
		}
	}
}

// quoteAttr is s as a double-quoted XML attribute value.
func quoteAttr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "&#%d;", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FileSizes names files and their sizes for an error message:
// "/a/spec.md (300000 bytes), /b/x.go (12 bytes)".
func FileSizes(files []File) string {
	s := make([]string, len(files))
	for i, f := range files {
		s[i] = fmt.Sprintf("%s (%d bytes)", f.Path, len(f.Content))
	}
	return strings.Join(s, ", ")
}
