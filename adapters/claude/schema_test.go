package claude_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/claude"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
)

// TestCommandSchema: a schema Claude Code can take goes to it as
// --json-schema, compact and without the root's $schema (its validator
// refuses a 2020-12 one); one it would refuse, or that its tool's input
// schema cannot be, is invalid_input/bad_request before anything starts.
func TestCommandSchema(t *testing.T) {
	inst := adapters.Install{Path: "/bin/claude", Version: "2.1.328"}
	a := &claude.Adapter{}
	cmd, err := a.Command(adapters.Request{Prompt: "hi", Schema: hubtest.Schema(t,
		`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		  "properties": {"b": {"$ref": "#/$defs/n"}, "a": {"type": "string", "minLength": 1}}, "$defs": {"n": {"type": "integer"}}}`)}, inst)
	if err != nil {
		t.Fatalf("Command = %v", err)
	}
	want := `--json-schema={"type":"object","properties":{"b":{"$ref":"#/$defs/n"},"a":{"type":"string","minLength":1}},"$defs":{"n":{"type":"integer"}}}`
	if !slices.Contains(cmd.Args, want) {
		t.Errorf("args = %q, want %s", cmd.Args, want)
	}
	plain, err := a.Command(adapters.Request{Prompt: "hi"}, inst)
	if err != nil || slices.ContainsFunc(plain.Args, func(s string) bool { return strings.HasPrefix(s, "--json-schema") }) {
		t.Errorf("args without a schema = %q (%v), want no --json-schema", plain.Args, err)
	}
	for _, tc := range []struct{ name, schema, want string }{
		{"array root", `{"type":"array","items":{"type":"integer"}}`, `the root must be {"type": "object"`},
		{"no type", `{"properties":{"a":{}}}`, `the root must be {"type": "object"`},
		{"2020-12 keyword", `{"type":"object","properties":{"a":{"type":"array","prefixItems":[{"type":"string"}]}}}`, `/properties/a: keyword "prefixItems"`},
		{"unevaluated", `{"type":"object","unevaluatedProperties":false}`, `keyword "unevaluatedProperties"`},
		{"unknown keyword", `{"type":"object","x-order":1}`, `keyword "x-order"`},
		{"nested in anyOf", `{"type":"object","properties":{"a":{"anyOf":[{"dependentRequired":{}}]}}}`, `/properties/a/anyOf/0: keyword "dependentRequired"`},
		{"anyOf at the root", `{"type":"object","properties":{"a":{},"b":{}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`, "anyOf at the root"},
		{"oneOf at the root", `{"type":"object","oneOf":[{"required":["a"]}]}`, "oneOf at the root"},
		{"too long", `{"type":"object","description":"` + strings.Repeat("x", 130<<10) + `"}`, "one argument"},
	} {
		_, err := a.Command(adapters.Request{Prompt: "hi", Schema: hubtest.Schema(t, tc.schema)}, inst)
		var e *events.Error
		if !errors.As(err, &e) || e.Bin != events.BinInvalidInput || e.Reason != events.ReasonBadRequest || !strings.Contains(e.Message, tc.want) || e.Hint == "" {
			t.Errorf("%s: Command = %v, want invalid_input/bad_request mentioning %q", tc.name, err, tc.want)
		}
	}
}
