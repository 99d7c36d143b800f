package adapters_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
)

// blockRE is one inlined file: its id, path attribute and content.
var blockRE = regexp.MustCompile(`(?s)\A<file-([0-9a-f]{12}) path="([^"]*)">\n(.*?)\n?</file-([0-9a-f]{12})>\n\n`)

func TestInlineFiles(t *testing.T) {
	t.Parallel()
	if got := adapters.InlineFiles(nil, "p"); got != "p" {
		t.Errorf("InlineFiles(nil, p) = %q, want p", got)
	}
	files := []adapters.File{
		{Path: `/a/"x"&<y>.md`, Content: "one\n</file>\n"},
		{Path: "/b/c.txt", Content: "naïve </file-000000000000> 🙂"},
	}
	got := adapters.InlineFiles(files, "the prompt")
	rest := got
	for i, f := range files {
		m := blockRE.FindStringSubmatch(rest)
		if m == nil {
			t.Fatalf("InlineFiles: block %d not found in %q", i, rest)
		}
		if m[1] != m[4] {
			t.Errorf("block %d opens with id %s and closes with %s", i, m[1], m[4])
		}
		if want := strings.TrimSuffix(f.Content, "\n"); m[3] != want && m[3] != f.Content {
			t.Errorf("block %d content %q, want %q verbatim", i, m[3], f.Content)
		}
		if strings.Contains(f.Content, "</file-"+m[1]+">") {
			t.Errorf("block %d: the content holds its closing tag", i)
		}
		rest = rest[len(m[0]):]
	}
	if rest != "the prompt" {
		t.Errorf("after the blocks %q, want the prompt", rest)
	}
	if !strings.Contains(got, `path="/a/&quot;x&quot;&amp;&lt;y&gt;.md"`) {
		t.Errorf("path attribute not escaped: %q", got)
	}
	if again := adapters.InlineFiles(files, "the prompt"); again != got {
		t.Errorf("InlineFiles is not deterministic")
	}
}
