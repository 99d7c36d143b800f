package adapters

import (
	"regexp"
	"strings"
)

// secretName matches names of flags and variables whose value is a credential.
var secretName = regexp.MustCompile(`(?i)(api[-_]?key|token|secret|password|passwd|credential)`)

// secretValue matches credential-looking values: common provider key prefixes.
var secretValue = regexp.MustCompile(`\b(sk-[A-Za-z0-9_-]{8,}|ghp_[A-Za-z0-9]{8,}|xox[abp]-[A-Za-z0-9-]{8,})`)

// Redact returns a copy of argv with credential values replaced by
// "[REDACTED]": the value after a flag named like a key, token, secret or
// password ("--api-key X"), the value of NAME=VALUE and --name=VALUE with
// such a name, and anything that looks like a provider key.
func Redact(argv []string) []string {
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
		out[i] = secretValue.ReplaceAllString(a, "[REDACTED]")
	}
	return out
}
