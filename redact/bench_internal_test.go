package redact

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkRedact measures redaction alone, per byte of text: str on a
// whole text (a tool's output, a message) and delta on the same text
// streamed in deltas of 8 bytes, with no credential in the environment
// (key shapes only) and with three; on Go source (events/event.go, escapes and
// punctuation) and on prose. Neither text holds anything to redact: this
// is the cost every event pays.
//
//	go test -run XXX -bench Redact ./redact
func BenchmarkRedact(b *testing.B) {
	src, err := os.ReadFile("../events/event.go")
	if err != nil {
		b.Fatal(err)
	}
	texts := map[string]string{
		"code":  string(src),
		"prose": strings.Repeat("The agent read the failing test, found the off-by-one in the loop and fixed it; all tests pass now. ", 200),
	}
	envs := map[string][]string{
		"none": nil,
		"keys": {"OPENAI_API_KEY=sk-live-0123456789abcdefXYZ", "GITHUB_PAT=hubpat-canary-5c1e9f03d7a2", "DATABASE_URL=postgres://u:canarypass-7e41b9d0@h/db"},
	}
	for _, env := range []string{"none", "keys"} {
		for _, name := range []string{"code", "prose"} {
			text := texts[name]
			b.Run("str/"+env+"/"+name, func(b *testing.B) {
				s := New(envs[env])
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					if s.String(text) != text {
						b.Fatal("redacted")
					}
				}
			})
			var deltas []string
			for t := text; t != ""; {
				n := min(8, len(t))
				deltas, t = append(deltas, t[:n]), t[n:]
			}
			b.Run("delta/"+env+"/"+name, func(b *testing.B) {
				s := New(envs[env])
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					for _, d := range deltas {
						s.Delta(d)
					}
					s.Flush()
				}
			})
		}
	}
}
