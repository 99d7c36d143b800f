package redact

import (
	"strings"
	"testing"
)

// FuzzRedact: a credential of the environment, planted in any text in any
// of the forms an agent may write it in (encodings), and the text streamed
// as deltas cut at the fuzzer's points: no delta alone, and not the deltas
// put together, hold a piece of it (leakcheck), and the deltas put
// together read as the text redacted whole.
//
//	go test -fuzz FuzzRedact -fuzztime 5m ./redact
func FuzzRedact(f *testing.F) {
	f.Add("the key is ", " ok", "sk-live-0123456789abcdefXYZ", "plain", []byte{3, 7, 1})
	f.Add(`{"k":"`, `"}`, "canarypass-41f7-9c2e", "json-u", []byte{1})
	f.Add("x=", "\n", "hubpat-canary-5c1e9f03d7a2", "base64-1-2", []byte{12, 2, 2, 9})
	f.Add("", "", "0123456789abcdef", "hex", []byte{})
	f.Fuzz(func(t *testing.T, before, after, secret, form string, cuts []byte) {
		// A credential hub knows: 8 bytes or more (minSecret), of the
		// characters keys are made of, so that its forms are its own; not a
		// number, which hub takes for a setting (notSecret).
		secret = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
				return r
			}
			return -1
		}, secret)
		if len(secret) < 16 || notSecret(secret) || len(before)+len(after) > 4096 {
			t.Skip()
		}
		planted, ok := encodings(secret)[form]
		if !ok {
			planted = secret
		}
		text := before + planted + after
		env := []string{"SERVICE_API_KEY=" + secret}
		want := New(env).String(text)
		if d, ok := leak(want, secret); ok {
			t.Fatalf("String(%q) = %q, which decodes to %q", text, want, d)
		}
		s := New(env)
		var all strings.Builder
		rest := text
		for i := 0; rest != ""; i++ {
			n := len(rest)
			if i < len(cuts) {
				n = min(n, 1+int(cuts[i]))
			}
			out := s.Delta(rest[:n])
			if d, ok := leak(out, secret); ok {
				t.Fatalf("delta %d of %q sent %q, which decodes to %q", i, text, out, d)
			}
			all.WriteString(out)
			rest = rest[n:]
		}
		all.WriteString(s.Flush())
		if got := all.String(); got != want {
			t.Errorf("deltas of %q put together = %q, want %q (the text redacted whole)", text, got, want)
		}
	})
}
