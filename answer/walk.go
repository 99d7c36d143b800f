package answer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The keywords of draft 2020-12 whose value is a schema, an object of
// schemas, or an array of schemas.
var (
	subschema      = []string{"items", "additionalProperties", "contains", "propertyNames", "if", "then", "else", "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems"}
	subschemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
	subschemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// Walk calls fn with every schema object of s (the root included: the
// subschemas of draft 2020-12's keywords, and of draft-07's dependencies)
// and its JSON pointer into the schema, in a stable order: for checks of a
// CLI's own subset. The nodes are shared: do not modify them.
func (s *Schema) Walk(fn func(node map[string]any, ptr string)) { walk(s.doc, "", fn) }

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

// inPlace are the keywords that apply a subschema to the same value (no
// property, item or other part of it): a $ref cycle through only these
// never ends.
var (
	inPlace      = []string{"not", "if", "then", "else"}
	inPlaceLists = []string{"allOf", "anyOf", "oneOf"}
)

// refCycle returns the JSON pointer of a schema in doc from which $ref and
// the in-place keywords lead back to it, "" when there is none. Only
// pointers within the document ("#", "#/$defs/a") are followed: hub
// resolves nothing else.
func refCycle(doc any) string {
	nodes := map[string]map[string]any{}
	walk(doc, "", func(node map[string]any, ptr string) { nodes[ptr] = node })
	next := func(ptr string) []string {
		node := nodes[ptr]
		var out []string
		if ref, ok := node["$ref"].(string); ok && strings.HasPrefix(ref, "#") && !strings.Contains(ref, "%") {
			out = append(out, strings.TrimPrefix(ref, "#"))
		}
		for _, k := range inPlace {
			if _, ok := node[k].(map[string]any); ok {
				out = append(out, ptr+"/"+k)
			}
		}
		for _, k := range inPlaceLists {
			if a, ok := node[k].([]any); ok {
				for i := range a {
					out = append(out, fmt.Sprintf("%s/%s/%d", ptr, k, i))
				}
			}
		}
		return out
	}
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var at string
	var visit func(ptr string) bool
	visit = func(ptr string) bool {
		if _, ok := nodes[ptr]; !ok {
			return false
		}
		switch state[ptr] {
		case open:
			at = ptr
			return true
		case done:
			return false
		}
		state[ptr] = open
		for _, n := range next(ptr) {
			if visit(n) {
				return true
			}
		}
		state[ptr] = done
		return false
	}
	for _, ptr := range slices.Sorted(maps.Keys(nodes)) {
		if visit(ptr) {
			return "#" + at
		}
	}
	return ""
}
