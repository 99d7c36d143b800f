// Package leakcheck looks for a credential in hub's output in every form a
// reader could decode it into. It decodes on its own, sharing no code with
// the redaction it checks, and imports nothing of hub's, so that the tests of
// the packages it checks (redact, hub, cmd/hub) can use it.
package leakcheck

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
)

// Decodings returns s and what a reader of it could decode it into, to
// look for a credential in: its backslash (JSON \u, \x, any byte escaped)
// and percent escapes decoded, once and until nothing changes; s as the
// inside of a JSON string; s query-unescaped; and, in each of those, every
// run of base64 (standard and URL alphabets, at each of the four offsets
// of a group) and of hex (at each of the two offsets of a byte), decoded.
func Decodings(s string) []string {
	texts := []string{s}
	for d := s; ; {
		n := unescapeOnce(d)
		if n == d {
			break
		}
		texts, d = append(texts, n), n
	}
	if q, err := url.QueryUnescape(s); err == nil {
		texts = append(texts, q)
	}
	var js string
	if json.Unmarshal([]byte(`"`+s+`"`), &js) == nil {
		texts = append(texts, js)
	}
	out := append([]string(nil), texts...)
	for _, t := range texts {
		out = append(out, runsDecoded(t)...)
	}
	return out
}

// Leak reports the first decoding of out (see Decodings) that holds piece
// bytes of secret in a row (all of it when piece is 0 or longer).
func Leak(out, secret string, piece int) (decoded string, ok bool) {
	if piece <= 0 || piece > len(secret) {
		piece = len(secret)
	}
	for _, d := range Decodings(out) {
		for i := 0; i+piece <= len(secret); i++ {
			if strings.Contains(d, secret[i:i+piece]) {
				return d, true
			}
		}
	}
	return "", false
}

// unescapeOnce decodes one level of backslash and percent escapes: \uXXXX,
// \xXX, \n, \t, \r, \ before any other byte, %XX.
func unescapeOnce(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+5 < len(s) && s[i+1] == 'u' && isHex(s[i+2:i+6]):
			var r rune
			for _, h := range s[i+2 : i+6] {
				r = r<<4 | rune(hexVal(byte(h)))
			}
			b.WriteRune(r)
			i += 5
		case c == '\\' && i+3 < len(s) && s[i+1] == 'x' && isHex(s[i+2:i+4]):
			b.WriteByte(hexVal(s[i+2])<<4 | hexVal(s[i+3]))
			i += 3
		case c == '\\' && i+1 < len(s):
			switch e := s[i+1]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(e)
			}
			i++
		case c == '%' && i+2 < len(s) && isHex(s[i+1:i+3]):
			b.WriteByte(hexVal(s[i+1])<<4 | hexVal(s[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func hexVal(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func runsDecoded(t string) []string {
	var out []string
	isB64 := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("+/-_", c) >= 0
	}
	for i := 0; i < len(t); {
		if !isB64(t[i]) {
			i++
			continue
		}
		j := i
		for j < len(t) && isB64(t[j]) {
			j++
		}
		run := t[i:j]
		i = j
		if len(run) < 8 {
			continue
		}
		for off := range 4 {
			r := run[off:]
			r = r[:len(r)/4*4]
			for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(r); err == nil {
					out = append(out, string(b))
				}
			}
		}
		for off := range 2 {
			r := run[off:]
			if b, err := hex.DecodeString(r[:len(r)/2*2]); err == nil {
				out = append(out, string(b))
			}
		}
	}
	return out
}
