package answer_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hubcli/hub/answer"
)

const review = `{
  "type": "object",
  "properties": {
    "verdict": {"enum": ["approve", "reject"]},
    "score": {"type": "integer", "minimum": 0, "maximum": 10},
    "when": {"type": "string", "format": "date"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
  },
  "required": ["verdict", "score"],
  "additionalProperties": false
}`

func mustCompile(t *testing.T, s string) *answer.Schema {
	t.Helper()
	sch, err := answer.Compile([]byte(s))
	if err != nil {
		t.Fatalf("Compile(%s) = %v", s, err)
	}
	return sch
}

// TestCheck covers every rule of what counts as an answer (SPEC §6.2) and
// the keywords the issue names: closed objects, enums, numeric bounds,
// required fields; plus types, formats and duplicate keys.
func TestCheck(t *testing.T) {
	t.Parallel()
	sch := mustCompile(t, review)
	tests := []struct {
		name, text string
		want       string // the compact value, or "" when invalid
		problem    string // a substring of the problems, when invalid
	}{
		{"bare", `{"verdict":"approve","score":7}`, `{"verdict":"approve","score":7}`, ""},
		{"bare with spaces", "\n  { \"verdict\": \"reject\", \"score\": 0 }\n\n", `{"verdict":"reject","score":0}`, ""},
		{"fenced json", "```json\n{\"verdict\":\"approve\",\"score\":10}\n```", `{"verdict":"approve","score":10}`, ""},
		{"fenced JSON upper", "```JSON\n{\"verdict\":\"approve\",\"score\":1}\n```\n", `{"verdict":"approve","score":1}`, ""},
		{"fenced bare", "```\n{\"verdict\":\"approve\",\"score\":1}\n```", `{"verdict":"approve","score":1}`, ""},
		{"fenced, indented", "   ```json\n{\"verdict\":\"approve\",\"score\":2}\n   ```", `{"verdict":"approve","score":2}`, ""},
		{"fenced, four backticks", "````json\n{\"verdict\":\"approve\",\"score\":2}\n`````", `{"verdict":"approve","score":2}`, ""},
		{"fenced, tildes", "~~~ json\n{\"verdict\":\"approve\",\"score\":2}\n~~~", `{"verdict":"approve","score":2}`, ""},
		{"fenced, CRLF", "```json\r\n{\"verdict\":\"approve\",\"score\":2}\r\n```\r\n", `{"verdict":"approve","score":2}`, ""},
		{"fence, trailing spaces", "```json  \n{\"verdict\":\"approve\",\"score\":2}\n```   ", `{"verdict":"approve","score":2}`, ""},
		{"format ok", `{"verdict":"approve","score":1,"when":"2026-12-01"}`, `{"verdict":"approve","score":1,"when":"2026-12-01"}`, ""},

		{"empty", "  \n", "", "empty"},
		{"leading prose", `Here it is: {"verdict":"approve","score":7}`, "", "begins with text"},
		{"trailing prose", `{"verdict":"approve","score":7} hope that helps`, "", "text after the JSON value"},
		{"trailing JSON", `{"verdict":"approve","score":7}{"verdict":"reject","score":1}`, "", "trailing JSON"},
		{"second value on a new line", "{\"verdict\":\"approve\",\"score\":7}\n{\"x\":1}", "", "trailing JSON"},
		{"trailing scalar", `{"verdict":"approve","score":7} 3`, "", "trailing JSON"},
		{"prose around fence", "Sure:\n```json\n{\"verdict\":\"approve\",\"score\":7}\n```", "", "begins with text"},
		{"text after fence", "```json\n{\"verdict\":\"approve\",\"score\":7}\n```\nDone.", "", "not closed"},
		{"two fences", "```json\n{\"verdict\":\"approve\",\"score\":7}\n```\n```json\n{\"verdict\":\"approve\",\"score\":7}\n```", "", "more than one fenced block"},
		{"unclosed fence", "```json\n{\"verdict\":\"approve\",\"score\":7}", "", "not closed"},
		{"other language", "```yaml\nverdict: approve\n```", "", `fenced "yaml" block`},
		{"empty fence", "```json\n```", "", "empty"},
		{"empty fence body", "```json\n\n```", "", "empty"},
		{"short closing fence", "````json\n{\"verdict\":\"approve\",\"score\":2}\n```", "", "not closed"},
		{"other closing char", "```json\n{\"verdict\":\"approve\",\"score\":2}\n~~~", "", "not closed"},
		{"two values in fence", "```json\n{\"verdict\":\"approve\",\"score\":7}\n[1]\n```", "", "trailing JSON"},
		{"truncated", `{"verdict":"approve","score":`, "", "ends before the value is complete"},
		{"bad JSON", `{"verdict":approve}`, "", "not valid JSON"},
		{"a word", `nothing to report`, "", "begins with text"},
		{"a literal", `null`, "", "(root): got null, want object"},

		{"extra property", `{"verdict":"approve","score":7,"note":"x"}`, "", "additional properties 'note' not allowed"},
		{"enum", `{"verdict":"maybe","score":7}`, "", "/verdict: value must be one of"},
		{"above maximum", `{"verdict":"approve","score":11}`, "", "/score: maximum: got 11, want 10"},
		{"below minimum", `{"verdict":"approve","score":-1}`, "", "/score: minimum: got -1, want 0"},
		{"not an integer", `{"verdict":"approve","score":7.5}`, "", "/score: got number, want integer"},
		{"string for integer", `{"verdict":"approve","score":"7"}`, "", "/score: got string, want integer"},
		{"required", `{"verdict":"approve"}`, "", "missing property 'score'"},
		{"array too long", `{"verdict":"approve","score":1,"tags":["a","b","c"]}`, "", "/tags: maxItems"},
		{"format", `{"verdict":"approve","score":1,"when":"yesterday"}`, "", "/when: 'yesterday' is not valid date"},
		{"duplicate key", `{"verdict":"approve","score":1,"score":2}`, "", `duplicate key "score"`},
		{"lone surrogate", `{"verdict":"approve","score":1,"tags":["\ud800"]}`, "", "lone UTF-16 surrogate"},
		{"lone low surrogate", `{"verdict":"approve","score":1,"tags":["a\udc00"]}`, "", "lone UTF-16 surrogate"},
		{"surrogate pair", `{"verdict":"approve","score":1,"tags":["\ud83d\ude00","\\ud800"]}`, `{"verdict":"approve","score":1,"tags":["\ud83d\ude00","\\ud800"]}`, ""},
		{"not an object", `[1,2]`, "", "(root): got array, want object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ps := sch.Check(tt.text)
			if (got == nil) == (ps == nil) {
				t.Fatalf("Check(%q) = %s, %v: want exactly one of a value and problems", tt.text, got, ps)
			}
			if tt.want != "" {
				if string(got) != tt.want || ps != nil {
					t.Errorf("Check(%q) = %s, %v, want %s", tt.text, got, ps, tt.want)
				}
				return
			}
			if msg := answer.Problems(ps); !strings.Contains(msg, tt.problem) {
				t.Errorf("Check(%q) problems = %q, want them to contain %q", tt.text, msg, tt.problem)
			}
		})
	}
}

// TestValidateAllProblems: every problem of an answer is reported, each at
// its JSON pointer, in a stable order.
func TestValidateAllProblems(t *testing.T) {
	t.Parallel()
	sch := mustCompile(t, review)
	_, ps := sch.Validate([]byte(`{"verdict":"x","score":99,"extra":true}`))
	got := answer.Problems(ps)
	want := "(root): additional properties 'extra' not allowed; /score: maximum: got 99, want 10; /verdict: value must be one of 'approve', 'reject'"
	if got != want {
		t.Errorf("Problems = %q\nwant %q", got, want)
	}
	again := answer.Problems(func() []answer.Problem {
		_, ps := sch.Validate([]byte(`{"extra":true,"score":99,"verdict":"x"}`))
		return ps
	}())
	if again != got {
		t.Errorf("Problems depend on key order: %q vs %q", again, got)
	}
}

// TestCompileRefuses: a bad schema file is refused with a reason.
func TestCompileRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, schema, want string }{
		{"not JSON", `{type: object}`, "not a JSON Schema"},
		{"empty", ``, "not a JSON Schema"},
		{"trailing data", `{"type":"object"} {}`, "trailing JSON"},
		{"not an object", `["object"]`, "not an array"},
		{"boolean", `true`, "not a boolean"},
		{"bad keyword value", `{"type":12}`, "not a valid JSON Schema"},
		{"bad nested", `{"properties":{"a":{"minimum":"x"}}}`, "not a valid JSON Schema"},
		{"other draft", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, "draft 2020-12"},
		{"missing local ref", `{"$ref":"#/$defs/nope"}`, "$ref"},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, "within the schema file"},
		{"file ref", `{"$ref":"other.json"}`, "within the schema file"},
		{"bad pattern", `{"pattern":"("}`, "pattern"},
		{"duplicate key", `{"type":"object","type":"array"}`, `duplicate key "type"`},
		{"unknown format", `{"properties":{"e":{"type":"string","format":"emial"}}}`, `/properties/e/format: format "emial"`},
		{"ref cycle", `{"$ref":"#"}`, "a $ref cycle: # leads back"},
		{"ref cycle below the root", `{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#/$defs/a"}}}`, "a $ref cycle: #/$defs/a"},
		{"ref cycle through allOf", `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, "a $ref cycle"},
		{"too deep", strings.Repeat(`{"items":`, 65) + `{}` + strings.Repeat(`}`, 65), "nests 66 levels deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := answer.Compile([]byte(tt.schema))
			if err == nil {
				t.Fatalf("Compile(%s) = %v, nil; want an error", tt.schema, s)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile(%s) = %v, want it to mention %q", tt.schema, err, tt.want)
			}
		})
	}
}

// TestCompileRecursive: a recursive schema that reads part of the value at
// each step is no cycle; one whose allOf chain doubles at every level
// compiles at once (no probe validation, which would be exponential).
func TestCompileRecursive(t *testing.T) {
	t.Parallel()
	mustCompile(t, `{"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`)
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := range 40 {
		fmt.Fprintf(&b, `"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	b.WriteString(`"d40":{"type":"string"}},"$ref":"#/$defs/d0"}`)
	mustCompile(t, b.String()) // 2^40 paths: a probe validation would not end
}

// TestCompileAccepts: local $refs, $defs and the 2020-12 $schema compile;
// JSON gives the schema back compact.
func TestCompileAccepts(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"$schema": "https://json-schema.org/draft/2020-12/schema",
	  "$defs": {"n": {"type": "integer"}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}}`)
	if want := `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"n":{"type":"integer"}},"type":"object","properties":{"a":{"$ref":"#/$defs/n"}}}`; string(s.JSON()) != want {
		t.Errorf("JSON() = %s, want %s", s.JSON(), want)
	}
	if _, ps := s.Validate([]byte(`{"a":"x"}`)); !strings.Contains(answer.Problems(ps), "/a: got string, want integer") {
		t.Errorf("a $ref'd type is not enforced: %v", ps)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, dir, "/dev/zero"} {
		if _, err := answer.Load(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Load(%s) = %v, want a refusal that does not block", p, err)
		}
	}
	if _, err := answer.Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("Load(missing) = %v, want an error naming the file", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"description":"`+strings.Repeat("x", answer.MaxSchemaBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := answer.Load(big); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("Load(big) = %v, want an error saying it is too large", err)
	}
}

func TestRepairPrompt(t *testing.T) {
	t.Parallel()
	got := answer.RepairPrompt([]answer.Problem{{Pointer: "/score", Message: "maximum: got 11, want 10"}})
	for _, want := range []string{"/score: maximum: got 11, want 10", "Reply with only the corrected JSON"} {
		if !strings.Contains(got, want) {
			t.Errorf("RepairPrompt = %q, want it to contain %q", got, want)
		}
	}
}

func TestJSONWithout(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type":"object","$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"z":{},"a":{"title":"x"}}}`)
	if got, want := string(s.JSONWithout("$schema")), `{"type":"object","properties":{"z":{},"a":{"title":"x"}}}`; got != want {
		t.Errorf("JSONWithout($schema) = %s, want %s", got, want)
	}
	if got := string(s.JSONWithout("title")); got != string(s.JSON()) {
		t.Errorf("JSONWithout(absent key) = %s, want the schema unchanged", got)
	}
}
