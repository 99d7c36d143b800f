package codex_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/codex"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
)

// TestCommandSchema: a schema inside OpenAI's strict subset goes to Codex
// as --output-schema, a file that holds it (after `resume` for a resume);
// one outside it is refused as invalid_input/bad_request naming each
// place, before anything starts.
func TestCommandSchema(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	inst := adapters.Install{Path: "/bin/codex", Version: "0.169.0"}
	a := &codex.Adapter{}
	strict := `{"type":"object","properties":{"score":{"type":"integer","minimum":0,"maximum":10},` +
		`"tags":{"type":"array","items":{"type":"string","format":"email"},"maxItems":3},` +
		`"note":{"type":["string","null"]},"kind":{"anyOf":[{"$ref":"#/$defs/k"},{"type":"null"}]}},` +
		`"required":["score","tags","note","kind"],"additionalProperties":false,"$defs":{"k":{"enum":["a","b"]}}}`
	for _, resume := range []string{"", "01a22aff-1a95-7700-bf1c-36219f65fb8a"} {
		cmd, err := a.Command(adapters.Request{Prompt: "hi", Resume: resume, Schema: hubtest.Schema(t, strict)}, inst)
		if err != nil {
			t.Fatalf("Command(strict schema) = %v", err)
		}
		i := slices.IndexFunc(cmd.Args, func(a string) bool { return strings.HasPrefix(a, "--output-schema=") })
		if i < 0 {
			t.Fatalf("args = %q, want --output-schema", cmd.Args)
		}
		if resume != "" && (i == 0 || !slices.Contains(cmd.Args[:i], "resume")) {
			t.Errorf("args = %q, want --output-schema after resume (an option of `codex exec resume`)", cmd.Args)
		}
		b, err := os.ReadFile(strings.TrimPrefix(cmd.Args[i], "--output-schema="))
		if err != nil || string(b) != strict {
			t.Errorf("the schema file holds %q (%v), want %s", b, err, strict)
		}
	}
	for _, tc := range []struct{ name, schema, want string }{
		{"open object", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `(root): an object must have "additionalProperties": false`},
		{"optional property", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, `property "b" must be in required`},
		{"nested open object", `{"type":"object","properties":{"a":{"type":"object","properties":{}}},"required":["a"],"additionalProperties":false}`, `/properties/a: an object must have`},
		{"root not an object", `{"type":"array","items":{"type":"string"}}`, `the root must be {"type": "object"`},
		{"root anyOf", `{"anyOf":[{"type":"object","properties":{},"additionalProperties":false}]}`, "not anyOf"},
		{"unsupported keyword", `{"type":"object","properties":{"a":{"type":"string","minLength":1}},"required":["a"],"additionalProperties":false}`, `/properties/a: keyword "minLength" is not in strict mode`},
		{"allOf", `{"type":"object","properties":{},"additionalProperties":false,"allOf":[{}]}`, `keyword "allOf"`},
		{"format", `{"type":"object","properties":{"u":{"type":"string","format":"uri"}},"required":["u"],"additionalProperties":false}`, `/properties/u/format: format "uri"`},
		{"boolean schema", `{"type":"object","properties":{"a":true},"required":["a"],"additionalProperties":false}`, `/properties/a: a schema here must be an object`},
		{"nullable root", `{"type":["object","null"],"properties":{},"additionalProperties":false}`, "not nullable"},
		{"required not a property", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","zz"],"additionalProperties":false}`, `required lists "zz"`},
		{"defs checked", `{"type":"object","properties":{},"additionalProperties":false,"$defs":{"x":{"type":"object"}}}`, `/$defs/x: an object must have`},
	} {
		_, err := a.Command(adapters.Request{Prompt: "hi", Schema: hubtest.Schema(t, tc.schema)}, inst)
		var e *events.Error
		if !errors.As(err, &e) || e.Bin != events.BinInvalidInput || e.Reason != events.ReasonBadRequest || !strings.Contains(e.Message, tc.want) || e.Hint == "" {
			t.Errorf("%s: Command = %v, want invalid_input/bad_request mentioning %q", tc.name, err, tc.want)
		}
	}
}

// TestCommandSchemaDepth: strict mode's 10 levels of nesting.
func TestCommandSchemaDepth(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	nest := func(n int) string {
		s := `{"type":"string"}`
		for range n {
			s = `{"type":"object","properties":{"a":` + s + `},"required":["a"],"additionalProperties":false}`
		}
		return s
	}
	a := &codex.Adapter{}
	inst := adapters.Install{Path: "/bin/codex"}
	if _, err := a.Command(adapters.Request{Prompt: "hi", Schema: hubtest.Schema(t, nest(10))}, inst); err != nil {
		t.Errorf("10 levels: %v, want it accepted", err)
	}
	if _, err := a.Command(adapters.Request{Prompt: "hi", Schema: hubtest.Schema(t, nest(12))}, inst); err == nil || !strings.Contains(err.Error(), "nested more than 10") {
		t.Errorf("12 levels: %v, want it refused", err)
	}
}
