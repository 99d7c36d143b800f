package redact

import (
	"regexp"
	"strings"
)

// secretName matches names of flags and variables whose value is a
// credential: anything with api key, token, secret, password, passwd,
// passphrase or credential in it, and the words key, pat (personal access
// token) and pass between separators or at an end (GITHUB_PAT, STRIPE_KEY,
// DB_PASS, --key; not PATH, MONKEY or PASSIVE).
var secretName = regexp.MustCompile(`(?i)(api[-_]?key|token|secret|password|passwd|passphrase|credential|(^|[-_])(key|pat|pass)([-_]|$))`)

// secretValue matches credential-looking values in an argv: common provider
// key prefixes (looser than the key shapes of every event's text: an argv
// is hub's own command line for the agent).
var secretValue = regexp.MustCompile(`\b(sk-[A-Za-z0-9_-]{8,}|ghp_[A-Za-z0-9]{8,}|xox[abp]-[A-Za-z0-9-]{8,})`)

// Argv returns a copy of argv with credential values replaced by
// "[REDACTED]": the value after a flag named like a key, token, secret or
// password ("--api-key X"), the value of NAME=VALUE and --name=VALUE with
// such a name, and anything that looks like a provider key (secretValue,
// and the key shapes that every event's strings are redacted of).
func Argv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case i > 0 && strings.HasPrefix(argv[i-1], "-") && !strings.Contains(argv[i-1], "=") &&
			secretName.MatchString(argv[i-1]) && !strings.HasPrefix(a, "-"):
			a = "[REDACTED]"
		case strings.Contains(a, "="):
			if k, _, _ := strings.Cut(a, "="); secretName.MatchString(k) && !strings.ContainsAny(k, " \t\n") {
				a = k + "=[REDACTED]"
			}
		}
		out[i] = Redactor{}.String(secretValue.ReplaceAllString(a, "[REDACTED]"))
	}
	return out
}
