package claude

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/events"
)

// Claude Code (2.1.328) takes --json-schema as the input schema of a tool
// of its own, StructuredOutput, which the model must call once with the
// answer; Claude Code checks the call with Ajv (draft-07, strict mode: an
// unknown keyword, or a $schema of draft 2019-09 or 2020-12, fails the
// run before any request) and reports the input as result.structured_output.
// The Anthropic API takes a tool's input schema only as an object schema.
// hub refuses what Claude Code would refuse, before anything starts, and
// leaves out the root's $schema (hub checks the answer as draft 2020-12
// itself).

// draft07 are the keywords of JSON Schema draft-07, and $defs, which
// Claude Code's validator resolves too.
var draft07 = map[string]bool{
	"$schema": true, "$id": true, "$ref": true, "$comment": true, "$defs": true, "definitions": true,
	"title": true, "description": true, "default": true, "readOnly": true, "writeOnly": true, "examples": true,
	"type": true, "enum": true, "const": true, "format": true, "contentMediaType": true, "contentEncoding": true,
	"multipleOf": true, "maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"maxLength": true, "minLength": true, "pattern": true,
	"items": true, "additionalItems": true, "maxItems": true, "minItems": true, "uniqueItems": true, "contains": true,
	"maxProperties": true, "minProperties": true, "required": true, "properties": true, "patternProperties": true,
	"additionalProperties": true, "dependencies": true, "propertyNames": true,
	"if": true, "then": true, "else": true, "allOf": true, "anyOf": true, "oneOf": true, "not": true,
}

// CheckRequest implements adapters.RequestChecker: a --schema Claude Code
// cannot carry is refused before anything starts.
func (*Adapter) CheckRequest(req adapters.Request) error {
	if req.Schema == nil {
		return nil
	}
	_, err := schemaArg(req.Schema)
	return err
}

// schemaArg is the value of --json-schema for sch, or
// invalid_input/bad_request when Claude Code cannot take it.
func schemaArg(sch *answer.Schema) (string, error) {
	var ps []answer.Problem
	root, _ := sch.Doc().(map[string]any)
	if root["type"] != "object" {
		ps = append(ps, answer.Problem{Message: `the root must be {"type": "object", …}: Claude Code gives the schema to the model as a tool's input, which the Anthropic API takes only as an object`})
	}
	// The API refuses these at a tool input schema's root, on every request
	// (https://github.com/anthropics/claude-code/issues/5319).
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if _, ok := root[k]; ok {
			ps = append(ps, answer.Problem{Message: fmt.Sprintf("%s at the root: the Anthropic API refuses it in a tool's input schema (put it on a property, or use if/then/else)", k)})
		}
	}
	sch.Walk(func(node map[string]any, ptr string) {
		for _, k := range slices.Sorted(maps.Keys(node)) {
			if !draft07[k] {
				ps = append(ps, answer.Problem{Pointer: ptr, Message: fmt.Sprintf("keyword %q is not one Claude Code's validator knows (draft-07)", k)})
			}
		}
	})
	if len(ps) > 0 {
		return "", events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"for claude, use an object schema with draft-07 keywords only (Claude Code's validator refuses the rest); or use another agent, whose answer hub checks against the whole schema",
			"--schema is outside what claude can carry: %s", answer.Problems(ps))
	}
	arg := sch.JSONWithout("$schema")
	if len(arg) > maxSchemaArg {
		return "", events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"shorten the schema (descriptions, $defs), or use another agent",
			"--schema is %d bytes as compact JSON; claude takes it as one argument, which Linux bounds to %d bytes", len(arg), maxSchemaArg)
	}
	return string(arg), nil
}

// maxSchemaArg is the longest --json-schema value: Linux's bound on one
// argument (MAX_ARG_STRLEN, 128 KiB) less the flag's name.
const maxSchemaArg = 128<<10 - len("--json-schema=") - 1
