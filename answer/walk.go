package answer

import (
	"fmt"
	"maps"
	"slices"
)

// The keywords of draft 2020-12 whose value is a schema, an object of
// schemas, or an array of schemas.
var (
	subschema      = []string{"items", "additionalProperties", "contains", "propertyNames", "if", "then", "else", "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems"}
	subschemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	subschemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// walk calls fn with every schema object in doc (the root included) and
// its JSON pointer, in a stable order.
func walk(doc any, ptr string, fn func(node map[string]any, ptr string)) {
	s, ok := doc.(map[string]any)
	if !ok {
		return
	}
	fn(s, ptr)
	for _, k := range subschema {
		walk(s[k], ptr+"/"+Token(k), fn)
	}
	for _, k := range subschemaMaps {
		if m, ok := s[k].(map[string]any); ok {
			for _, name := range slices.Sorted(maps.Keys(m)) {
				walk(m[name], ptr+"/"+Token(k)+"/"+Token(name), fn)
			}
		}
	}
	for _, k := range subschemaLists {
		if a, ok := s[k].([]any); ok {
			for i, sub := range a {
				walk(sub, fmt.Sprintf("%s/%s/%d", ptr, k, i), fn)
			}
		}
	}
}

// knownFormats are the formats the validator checks (santhosh-tekuri/
// jsonschema v6.0.3's, and regex); any other is an annotation it ignores.
var knownFormats = map[string]bool{
	"date-time": true, "date": true, "time": true, "duration": true, "period": true, "email": true, "hostname": true,
	"ipv4": true, "ipv6": true, "uri": true, "uri-reference": true, "iri": true, "iri-reference": true, "uri-template": true,
	"uuid": true, "json-pointer": true, "relative-json-pointer": true, "regex": true, "semver": true,
}

// unknownFormats are the places in doc whose format the validator would
// not check: with formats asserted, a format it does not know would let
// every string through (a typo, "emial", as much as "idn-email").
func unknownFormats(doc any) []Problem {
	var ps []Problem
	walk(doc, "", func(node map[string]any, ptr string) {
		if f, ok := node["format"].(string); ok && !knownFormats[f] {
			ps = append(ps, Problem{Pointer: ptr + "/format", Message: fmt.Sprintf("format %q", f)})
		}
	})
	return ps
}
