package codex

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/events"
)

// Codex passes --output-schema to the model in the Responses API's
// text.format, as a json_schema with strict: true (codex-rs
// create_text_param_for_request, 0.169.0). The API's strict mode accepts
// only a subset of JSON Schema and refuses the rest with HTTP 400; a
// provider that ignores the schema would let the run "succeed" with
// anything. hub checks the subset before anything starts, from OpenAI's
// list (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas):
// the root is an object, not anyOf; every object has additionalProperties
// false and lists all its properties in required; the keywords are those
// below; formats are the nine named; at most 10 levels of nesting, 5000
// properties and 1000 enum values in all.

// strictKeywords are the keywords strict mode accepts.
var strictKeywords = map[string]bool{
	"type": true, "description": true, "title": true, "enum": true, "const": true, "anyOf": true, "$ref": true,
	"$defs": true, "definitions": true, "$schema": true, "$comment": true,
	"properties": true, "required": true, "additionalProperties": true, // objects
	"items": true, "minItems": true, "maxItems": true, // arrays
	"pattern": true, "format": true, // strings
	"multipleOf": true, "maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true, // numbers
}

// strictFormats are the string formats strict mode accepts.
var strictFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}

// The limits of strict mode.
const (
	maxNesting    = 10
	maxProperties = 5000
	maxEnumValues = 1000
)

// CheckRequest implements adapters.RequestChecker: a --schema outside
// OpenAI's strict subset, and a prompt whose context files (req.Files)
// make it longer than Codex takes (MaxPromptChars), are refused before
// anything starts.
func (*Adapter) CheckRequest(req adapters.Request) error {
	if len(req.Files) > 0 && req.Prompt != "" {
		if err := checkPrompt(req.Prompt); err != nil {
			return err
		}
	}
	if req.Schema == nil {
		return nil
	}
	return checkStrict(req.Schema)
}

// checkStrict refuses a schema Codex cannot carry: invalid_input/bad_request
// naming each place (a JSON pointer into the schema) and what is wrong
// there, the first 20 of them.
func checkStrict(sch *answer.Schema) error {
	c := strictChecker{}
	root, _ := sch.Doc().(map[string]any)
	if _, ok := root["anyOf"]; ok {
		c.add("", "the root must be an object schema, not anyOf")
	} else if root["type"] != "object" {
		c.add("", `the root must be {"type": "object", …} (not nullable, not a list of types)`)
	}
	c.node(root, "", 0)
	if c.props > maxProperties {
		c.add("", fmt.Sprintf("%d properties in all; strict mode takes at most %d", c.props, maxProperties))
	}
	if c.enums > maxEnumValues {
		c.add("", fmt.Sprintf("%d enum values in all; strict mode takes at most %d", c.enums, maxEnumValues))
	}
	if len(c.problems) == 0 {
		return nil
	}
	return events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
		`for codex, close every object ("additionalProperties": false) and list all its properties in "required" `+
			`(one that may be missing: "type": ["string", "null"]), using only the keywords of OpenAI's strict structured outputs `+
			`(https://platform.openai.com/docs/guides/structured-outputs#supported-schemas); or use another agent, whose answer hub checks against the whole schema`,
		"--schema is outside what codex can carry (it sends the schema to the model in strict mode, which refuses the rest): %s", answer.Problems(c.problems))
}

type strictChecker struct {
	problems     []answer.Problem
	props, enums int
}

func (c *strictChecker) add(ptr, msg string) {
	c.problems = append(c.problems, answer.Problem{Pointer: ptr, Message: msg})
}

// node checks the schema s at pointer ptr, depth levels of objects and
// arrays deep.
func (c *strictChecker) node(v any, ptr string, depth int) {
	s, ok := v.(map[string]any)
	if !ok {
		c.add(ptr, "a schema here must be an object (true and false are not in strict mode)")
		return
	}
	if depth > maxNesting {
		c.add(ptr, fmt.Sprintf("nested more than %d levels deep", maxNesting))
		return
	}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if !strictKeywords[k] {
			c.add(ptr, fmt.Sprintf("keyword %q is not in strict mode", k))
		}
	}
	if e, ok := s["enum"].([]any); ok {
		c.enums += len(e)
	}
	if f, ok := s["format"].(string); ok && !slices.Contains(strictFormats, f) {
		c.add(ptr+"/format", fmt.Sprintf("format %q is not in strict mode (%s)", f, strings.Join(strictFormats, ", ")))
	}
	if hasType(s, "object") || s["properties"] != nil {
		c.object(s, ptr, depth)
	}
	if it, ok := s["items"]; ok {
		c.node(it, ptr+"/items", depth+1)
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := s[k].(map[string]any); ok {
			for _, name := range slices.Sorted(maps.Keys(defs)) {
				c.node(defs[name], ptr+"/"+k+"/"+answer.Token(name), depth)
			}
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for i, a := range alts {
			c.node(a, fmt.Sprintf("%s/anyOf/%d", ptr, i), depth)
		}
	}
}

// object checks what strict mode asks of an object schema.
func (c *strictChecker) object(s map[string]any, ptr string, depth int) {
	if ap, ok := s["additionalProperties"]; !ok || ap != false {
		c.add(ptr, `an object must have "additionalProperties": false`)
	}
	props, _ := s["properties"].(map[string]any)
	c.props += len(props)
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, name := range r {
			if n, ok := name.(string); ok {
				required[n] = true
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(required)) {
		if _, ok := props[name]; !ok {
			c.add(ptr, fmt.Sprintf("required lists %q, which is not one of its properties", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if !required[name] {
			c.add(ptr, fmt.Sprintf("property %q must be in required (strict mode has no optional property: make its type nullable)", name))
		}
		c.node(props[name], ptr+"/properties/"+answer.Token(name), depth+1)
	}
}

// hasType reports whether schema s says it is of type t.
func hasType(s map[string]any, t string) bool {
	switch v := s["type"].(type) {
	case string:
		return v == t
	case []any:
		return slices.Contains(v, any(t))
	}
	return false
}

// schemaArgs are the flags that give Codex the run's schema: the schema in
// a file of hub's cache (adapters.CacheFile), after the strict-mode check.
func schemaArgs(sch *answer.Schema) ([]string, error) {
	if sch == nil {
		return nil, nil
	}
	if err := checkStrict(sch); err != nil {
		return nil, err
	}
	path, err := adapters.CacheFile("codex-schema-", ".json", sch.JSON(), "the --schema file for codex --output-schema")
	if err != nil {
		return nil, err
	}
	return []string{"--output-schema=" + path}, nil
}
