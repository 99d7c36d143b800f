package answer

import (
	"fmt"
	"strings"
)

// Instructions is what hub adds to the prompt of an agent that has no
// native schema support (OpenCode, pi): reply with one JSON value that
// matches the schema, and nothing else. It goes after the caller's prompt,
// separated by a blank line.
func (s *Schema) Instructions() string {
	return "Reply with exactly one JSON value that matches the JSON Schema below (draft 2020-12), and nothing else: " +
		"no text before or after it, and no more than one ```json fenced block around it.\n\nJSON Schema:\n" + string(s.text)
}

// WithInstructions is prompt followed by s.Instructions().
func (s *Schema) WithInstructions(prompt string) string {
	return strings.TrimRight(prompt, "\n") + "\n\n" + s.Instructions()
}

// RepairPrompt is the request hub sends when it resumes a session whose
// answer did not match the schema (--schema-retries): the problems, and
// "reply with only the corrected JSON".
func RepairPrompt(ps []Problem) string {
	var b strings.Builder
	b.WriteString("Your answer did not match the JSON Schema it must follow (hub --schema):\n")
	for i, p := range ps {
		if i == maxListed {
			fmt.Fprintf(&b, "- and %d more\n", len(ps)-i)
			break
		}
		fmt.Fprintf(&b, "- %s\n", p)
	}
	b.WriteString("Reply with only the corrected JSON value, nothing else.")
	return b.String()
}
