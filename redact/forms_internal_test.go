package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/hubcli/hub/hubtest/leakcheck"
)

// leak reports a piece of secret (gram bytes of it, or all of a shorter
// one) in any decoding of out (leakcheck, which shares no code with the
// redaction).
func leak(out, secret string) (string, bool) {
	return leakcheck.Leak(out, secret, min(gram, len(secret)))
}

// encodings returns texts that carry secret in the forms an agent may
// write it in, each in a sentence.
func encodings(secret string) map[string]string {
	forms := map[string]string{
		"plain":      secret,
		"query":      url.QueryEscape(secret),
		"path":       url.PathEscape(secret),
		"hex":        hex.EncodeToString([]byte(secret)),
		"HEX":        strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"json-u":     "",
		"backslash":  "",
		"json-u-2":   "",
		"percent":    "",
		"PERCENT":    "",
		"percent-2x": "",
	}
	var u, bs, u2, p, P, p2 strings.Builder
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		fmt.Fprintf(&u, `\u%04x`, c)
		fmt.Fprintf(&u2, `\\u%04X`, c)
		if c < 'a' || c > 'z' {
			bs.WriteByte('\\')
		}
		bs.WriteByte(c)
		fmt.Fprintf(&p, "%%%02x", c)
		fmt.Fprintf(&P, "%%%02X", c)
		fmt.Fprintf(&p2, "%%25%02X", c)
	}
	forms["json-u"], forms["backslash"], forms["json-u-2"] = u.String(), bs.String(), u2.String()
	forms["percent"], forms["PERCENT"], forms["percent-2x"] = p.String(), P.String(), p2.String()
	for pre := range 5 {
		for post := range 3 {
			b := []byte(strings.Repeat("\x8f", pre) + secret + strings.Repeat("\x01", post))
			forms[fmt.Sprintf("base64-%d-%d", pre, post)] = base64.StdEncoding.EncodeToString(b)
			forms[fmt.Sprintf("base64url-%d-%d", pre, post)] = base64.RawURLEncoding.EncodeToString(b)
		}
	}
	out := map[string]string{}
	for k, f := range forms {
		out[k] = "the value is " + f + " here."
	}
	return out
}

// TestSecretsEncodings: a credential value of the environment is redacted
// in every form: escaped (JSON \u, a backslash before each byte, twice
// escaped), URL-encoded (query, path, every byte in lower- and upper-case
// hex, twice), hex, base64 in both alphabets at every alignment; in plain
// strings, in raw JSON (which stays valid) and in deltas. No decoding of
// the result holds 12 bytes of it.
func TestSecretsEncodings(t *testing.T) {
	t.Parallel()
	values := []string{"sk-live-0123456789abcdefXYZ", "p@ss w0rd/with+odd&chars=1", "short-pw1"}
	s := New([]string{"OPENAI_API_KEY=" + values[0], "DB_PASSWORD=" + values[1], "X_TOKEN=" + values[2]})
	for _, v := range values {
		for name, text := range encodings(v) {
			got := s.String(text)
			if d, ok := leak(got, v); ok {
				t.Errorf("%s of %q: str(%q) = %q, which decodes to %q", name, v, text, got, d)
			}
			if !strings.HasPrefix(got, "the value is ") || !strings.HasSuffix(got, " here.") {
				t.Errorf("%s of %q: str(%q) = %q, want the words around it kept", name, v, text, got)
			}
			raw, _ := json.Marshal(map[string]string{"command": text})
			rgot := s.Raw(raw)
			var back map[string]string
			if err := json.Unmarshal(rgot, &back); err != nil {
				t.Errorf("%s of %q: raw(%s) = %s, not JSON: %v", name, v, raw, rgot, err)
			} else if d, ok := leak(back["command"], v); ok {
				t.Errorf("%s of %q: raw(%s) = %s, which decodes to %q", name, v, raw, rgot, d)
			}
		}
	}
	// JSON escapes inside a tool's input, as the agent wrote them.
	for _, in := range []string{
		`{"command":"echo \u0073k-live-0123456789abcdefXYZ"}`,
		`{"command":"echo sk\u002dlive\u002d0123456789abcdefXYZ"}`,
		`{"command":"echo \"sk-live-0123456789abcdefXYZ\" \\ done"}`,
	} {
		got := s.Raw(json.RawMessage(in))
		var back map[string]string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("raw(%s) = %s, not JSON: %v", in, got, err)
		} else if d, ok := leak(back["command"], values[0]); ok || !strings.Contains(back["command"], "[REDACTED]") {
			t.Errorf("raw(%s) = %s, which decodes to %q", in, got, d)
		}
	}
}

// TestSecretsNames: which variables' values are credentials.
func TestSecretsNames(t *testing.T) {
	t.Parallel()
	const v = "Value-0123456789-xyz"
	dir := t.TempDir()
	for _, tt := range []struct {
		name, value string
		want        bool
	}{
		{"OPENAI_API_KEY", v, true},
		{"GITHUB_PAT", v, true},
		{"GH_TOKEN", v, true},
		{"NPM_TOKEN_X", v, true},
		{"AWS_SECRET_ACCESS_KEY", v, true},
		{"CLIENT_SECRET_ID", v, true},
		{"DB_PASSWORD", v, true},
		{"DB_PASS", v, true},
		{"GPG_PASSPHRASE", v, true},
		{"STRIPE_KEY", v, true},
		{"KEY", v, true},
		{"SIGNING_KEY_FILE_DATA", v, true},
		{"PATH", v, false},
		{"MONKEY", v, false},
		{"PASSIVE_MODE", v, false},
		{"HOME", v, false},
		{"GOOGLE_APPLICATION_CREDENTIALS", dir, false}, // a file's name, not a credential
		{"SESSION_TOKEN", "12345678901", false},        // a number
		{"SHORT_TOKEN", "abc1234", false},              // too short
	} {
		s := New([]string{tt.name + "=" + tt.value})
		if got := s.String("x "+tt.value+" y") != "x "+tt.value+" y"; got != tt.want {
			t.Errorf("%s=%s redacted = %v, want %v", tt.name, tt.value, got, tt.want)
		}
	}
	// A URL's password, whatever the variable's name; not the rest of it.
	s := New([]string{"DATABASE_URL=postgres://u:canarypass-41f7@db.internal:5432/app", "HTTPS_PROXY=http://proxy:8080"})
	for in, want := range map[string]string{
		"pw canarypass-41f7 ok":                    "pw [REDACTED] ok",
		"host db.internal:5432 and postgres://u:x": "host db.internal:5432 and postgres://u:x",
	} {
		if got := s.String(in); got != want {
			t.Errorf("str(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSecretsShapes: strings shaped like provider keys are redacted with
// nothing in the environment; prose and code that only look a little like
// them are not.
func TestSecretsShapes(t *testing.T) {
	t.Parallel()
	anthropic := "sk-ant-api03-" + strings.Repeat("Ab3dE_f6hI-j9kL", 6) + "AA"
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yS3f+Xk=\n-----END RSA PRIVATE KEY-----"
	redacted := []struct{ in, want string }{
		{"key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z end", "key [REDACTED] end"},
		{"ANTHROPIC_API_KEY=" + anthropic, "ANTHROPIC_API_KEY=[REDACTED]"},
		{`"sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9kLm"`, `"[REDACTED]"`},
		{"token ghp_" + strings.Repeat("a1B2c3", 6) + ".", "token [REDACTED]."},
		{"ghs_" + strings.Repeat("Z9y8X7", 6), "[REDACTED]"},
		{"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU x", "[REDACTED] x"},
		{"aws AKIAIOSFODNN7EXAMPLE,", "aws [REDACTED],"},
		{"slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack [REDACTED]"},
		{"google AIzaSyA-1234567890abcdefghijklmnopqrstu", "google [REDACTED]"},
		{"here:\n" + pem + "\nthat's it", "here:\n[REDACTED]\nthat's it"},
		{pem[:60], "[REDACTED]"}, // cut short
		{"db postgres://user:hunter2@db.example.com/app", "db postgres://user:[REDACTED]@db.example.com/app"},
		{"https://x-access-token:abc@github.com/o/r.git", "https://x-access-token:[REDACTED]@github.com/o/r.git"},
		{`gh\u0070_` + strings.Repeat("a1B2c3", 6), "[REDACTED]"}, // escaped
		{"sk%2DAb3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "[REDACTED]"},
	}
	var s Redactor // nothing in the environment
	for _, tt := range redacted {
		if got := s.String(tt.in); got != tt.want {
			t.Errorf("str(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	src, err := os.ReadFile("../events/event.go")
	if err != nil {
		t.Fatal(err)
	}
	kept := []string{
		"the task-force met; sk-learn and scikit-learn (import sklearn as sk-learn) are fine",
		"sk-this-is-not-a-key-at-all and sk-abcdefghijklmnopqrstuvwxyz and mask-Ab3dEf6hIj9kLm2nOp5qRs8t",
		"commit 3f9d2c71b5e8a6043f9d2c71b5e8a6043f9d2c71, uuid 5bd312bc-a300-4370-bc46-b6e244c776af",
		"ghp_short gho_ AKIA1234 AKIAIOSFODNN7EXAMPLEXX xoxb-none AIzaShort",
		"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
		"https://example.com:8080/path?q=1 ssh://git@github.com/x.git mailto:a@b.c user@host:path",
		`fmt.Printf("100%% done\n"); path := "C:\\Users\\x"; re := regexp.MustCompile(` + "`\\bsk-\\w+`" + `)`,
		"base64 aGVsbG8gd29ybGQ= and hex deadbeefcafebabe00ff11ee22dd33cc",
		string(src),
	}
	withEnv := New([]string{"OPENAI_API_KEY=sk-live-0123456789abcdefXYZ", "DB_PASSWORD=p@ss w0rd/with+odd&chars=1", "GITHUB_PAT=" + strings.Repeat("q7W", 12)})
	for _, in := range kept {
		for _, s := range []Redactor{s, withEnv} {
			if got := s.String(in); got != in {
				t.Errorf("str(%.200q) = %.200q, want it unchanged", in, got)
			}
		}
	}
}

// TestSecretsDeltasAnySplit: a text with credentials in several forms and
// key shapes, streamed as deltas cut anywhere into any number of pieces
// (one byte each, and random cuts), with notices between some of them: no
// delta alone and not all of them put together holds a piece of a
// credential or a key, and put together they read as the text redacted
// whole; what is held back never grows past the longest credential or key
// shape.
func TestSecretsDeltasAnySplit(t *testing.T) {
	t.Parallel()
	key, pw := "sk-live-0123456789abcdefXYZ", "canarypass-41f7-9c2e"
	ghp := "ghp_" + strings.Repeat("a1B2c3", 6)
	env := []string{"OPENAI_API_KEY=" + key, "DATABASE_URL=postgres://u:" + pw + "@h/db"}
	enc := encodings(key)
	texts := []string{
		"plain " + key + " and " + pw + " then " + ghp + " done",
		enc["json-u"] + " / " + enc["base64-1-2"] + " / " + enc["hex"] + " / " + enc["percent-2x"],
		"middle only: " + key[5:] + " and " + pw[3:] + "!",
		"pem -----BEGIN PRIVATE KEY-----\n" + strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n", 8) + "-----END PRIVATE KEY-----\nafter",
		"url postgres://admin:" + pw + "@db/x and more",
		"nothing to see here, sk-learn and task-force, only prose 100% ok \\ fine",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for ti, text := range texts {
		want := New(env).String(text)
		for trial := range 60 {
			var pieces []string
			switch trial {
			case 0:
				for i := 0; i < len(text); i++ {
					pieces = append(pieces, text[i:i+1])
				}
			default:
				rest := text
				for rest != "" {
					n := min(len(rest), 1+rng.IntN(9))
					pieces, rest = append(pieces, rest[:n]), rest[n:]
				}
			}
			s := New(env)
			var all strings.Builder
			maxHeld := 0
			for i, p := range pieces {
				out := s.Delta(p)
				maxHeld = max(maxHeld, len(s.st.buf)-s.st.ctxLen)
				for _, secret := range []string{key, pw, ghp} {
					if d, ok := leak(out, secret); ok {
						t.Fatalf("text %d trial %d: delta %d %q sent %q, which decodes to %q", ti, trial, i, p, out, d)
					}
				}
				all.WriteString(out)
			}
			all.WriteString(s.Flush())
			got := all.String()
			for _, secret := range []string{key, pw, ghp, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"} {
				if d, ok := leak(got, secret); ok {
					t.Fatalf("text %d trial %d: deltas %q put together = %q, which decodes to %q", ti, trial, pieces, got, d)
				}
			}
			if got != want {
				t.Errorf("text %d trial %d: deltas %q put together = %q, want %q (the text redacted whole)", ti, trial, pieces, got, want)
			}
			if maxHeld > maxRun+len("github_pat_")+16 {
				t.Errorf("text %d trial %d: held back %d bytes", ti, trial, maxHeld)
			}
		}
	}
}
