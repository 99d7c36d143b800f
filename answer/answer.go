// Package answer holds hub's structured answers (SPEC §6.2): a --schema
// compiled as JSON Schema draft 2020-12, the one JSON value an agent's
// answer must be, and the check of that value against the schema, with
// problems named by JSON pointer.
//
// It owns: reading and compiling a schema file (with the maintained
// validator santhosh-tekuri/jsonschema, format assertions on, no $ref
// leaving the file), taking the JSON value out of an answer text (bare, or
// in one fenced json block; nothing else before or after it), validating a
// value, and the texts hub sends an agent that has no native schema
// support (Instructions) or whose answer did not match (RepairPrompt).
// It does not own: how a CLI is given the schema, nor when hub asks again.
package answer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Draft2020 is the $schema of JSON Schema draft 2020-12, the only draft a
// schema file may declare.
const Draft2020 = "https://json-schema.org/draft/2020-12/schema"

// MaxSchemaBytes bounds a schema file: 1 MiB. It goes to the CLIs inline
// (Claude Code's --json-schema is an argument) and into prompts.
const MaxSchemaBytes = 1 << 20

// MaxSchemaDepth bounds how deep a schema's JSON nests (objects and
// arrays): 64 levels.
const MaxSchemaDepth = 64

// maxMessage bounds one problem's message, in bytes: an enum or a const
// the validator quotes whole could make a repair prompt of megabytes.
const maxMessage = 300

// Schema is a compiled --schema. It is safe for concurrent use.
type Schema struct {
	text []byte // the schema as compact JSON
	doc  any    // the decoded document (numbers as json.Number): do not modify
	s    *jsonschema.Schema
}

// location is the URL the schema is compiled under; nothing else resolves.
const location = "file:///hub/schema.json"

// Load reads and compiles the schema in the file at path (see Compile).
// Errors say which file and what is wrong with it.
func Load(path string) (*Schema, error) {
	// A FIFO with no writer, a device or a directory would block the read
	// or never end it: only a regular file (links followed) is read.
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--schema: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("--schema %s: not a regular file (%s): write the schema to a file", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--schema: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSchemaBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--schema %s: %w", path, err)
	}
	s, err := Compile(b)
	if err != nil {
		return nil, fmt.Errorf("--schema %s: %w", path, err)
	}
	return s, nil
}

// Compile compiles data, one JSON object, as a JSON Schema of draft
// 2020-12. It is refused when it is over MaxSchemaBytes, not exactly one
// JSON value, not an object, declares another draft in $schema, is not a
// valid schema by the draft's metaschema, or has a $ref that does not
// resolve within itself (hub loads nothing else: the CLIs that get the
// schema inline could not either).
func Compile(data []byte) (*Schema, error) {
	if len(data) > MaxSchemaBytes {
		return nil, fmt.Errorf("the schema is over %d bytes", MaxSchemaBytes)
	}
	raw, err := one(data)
	if err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %w", err)
	}
	// The compiler's work grows faster than the nesting: 2,000 levels
	// took 12 s, 10,000 did not end in minutes.
	if d := depth(raw); d > MaxSchemaDepth {
		return nil, fmt.Errorf("the schema nests %d levels deep; hub takes at most %d", d, MaxSchemaDepth)
	}
	if p := duplicateKey(raw); p != nil {
		return nil, fmt.Errorf("not a JSON Schema: %s", p)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON Schema: a schema file holds a JSON object, not %s", kindOf(doc))
	}
	if d, ok := obj["$schema"]; ok && d != Draft2020 {
		return nil, fmt.Errorf("$schema is %v: hub validates with JSON Schema draft 2020-12; set $schema to %q or leave it out", d, Draft2020)
	}
	if ps := unknownFormats(doc); len(ps) > 0 {
		return nil, fmt.Errorf("a format hub's validator does not check (it checks %s): %s", strings.Join(slices.Sorted(maps.Keys(knownFormats)), ", "), Problems(ps))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(location, doc); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %w", err)
	}
	s, err := c.Compile(location)
	if err != nil {
		return nil, compileError(err)
	}
	// A $ref that leads back to itself with no value consumed ({"$ref":
	// "#"}) fails every answer that reaches it: the validator finds it
	// only then. (Validating a probe value would find it too, but takes
	// as long as the schema makes it: exponential for a chain of allOf.)
	if cycle := refCycle(doc); cycle != "" {
		return nil, fmt.Errorf("a $ref cycle: %s leads back to itself without reading anything of the answer", cycle)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %w", err)
	}
	return &Schema{text: compact.Bytes(), doc: doc, s: s}, nil
}

// noLoader refuses every URL: a $ref resolves within the schema file or
// not at all.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("hub resolves a $ref only within the schema file (use #/$defs/…)")
}

// compileError says why the compiler refused a schema, without the
// compiler's internal URL.
func compileError(err error) error {
	var sv *jsonschema.SchemaValidationError
	var lu *jsonschema.LoadURLError
	var np *jsonschema.JSONPointerNotFoundError
	var an *jsonschema.AnchorNotFoundError
	switch {
	case errors.As(err, &sv):
		var ve *jsonschema.ValidationError
		if errors.As(sv.Err, &ve) {
			return fmt.Errorf("not a valid JSON Schema (draft 2020-12): %s", Problems(leaves(ve)))
		}
		return fmt.Errorf("not a valid JSON Schema (draft 2020-12): %v", sv.Err)
	case errors.As(err, &lu):
		return fmt.Errorf("a $ref does not resolve: %s: %v", strings.TrimPrefix(lu.URL, "file:///hub/"), lu.Err)
	case errors.As(err, &np):
		return fmt.Errorf("a $ref does not resolve: nothing at %s in the schema", strings.TrimPrefix(np.URL, location))
	case errors.As(err, &an):
		return fmt.Errorf("a $ref does not resolve: no anchor %s in the schema", strings.TrimPrefix(an.Reference, location))
	}
	return fmt.Errorf("not a usable JSON Schema: %s", strings.ReplaceAll(err.Error(), location, "the schema"))
}

// JSON returns the schema as compact JSON, to pass to a CLI. The slice is
// shared: do not modify it.
func (s *Schema) JSON() []byte { return s.text }

// Doc returns the decoded schema (objects as map[string]any, numbers as
// json.Number), for checks of a CLI's own subset. It is shared: do not
// modify it.
func (s *Schema) Doc() any { return s.doc }

// Problem is one way an answer fails: Pointer is the JSON pointer of the
// value at fault ("" for the whole answer), Message what is wrong there.
type Problem struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	return ptr + ": " + p.Message
}

// maxListed bounds how many problems Problems lists.
const maxListed = 20

// Problems lists ps on one line, "; "-separated, the first 20 of them.
func Problems(ps []Problem) string {
	var b strings.Builder
	for i, p := range ps {
		if i == maxListed {
			fmt.Fprintf(&b, "; and %d more", len(ps)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Check takes the answer's JSON value out of text (see Extract) and
// validates it. It returns the value as compact JSON when it matches,
// else the problems (never both).
func (s *Schema) Check(text string) (json.RawMessage, []Problem) {
	v, err := Extract(text)
	if err != nil {
		return nil, []Problem{{Message: err.Error()}}
	}
	return s.Validate(v)
}

// Validate validates value, one JSON value (a CLI's own structured answer,
// or what Extract took out of a text): the same rules as Check, without the
// text around it. Duplicate keys in an object are a problem: which of them
// counts differs between JSON readers.
func (s *Schema) Validate(value json.RawMessage) (json.RawMessage, []Problem) {
	raw, err := one(value)
	if err != nil {
		return nil, []Problem{{Message: err.Error()}}
	}
	if p := duplicateKey(raw); p != nil {
		return nil, []Problem{*p}
	}
	if loneSurrogate(raw) {
		// Go reads it as U+FFFD, other JSON readers (jq) refuse the
		// whole document: the value would not be the same for everyone.
		return nil, []Problem{{Message: `a string holds a lone UTF-16 surrogate escape (such as \ud800), which is no character`}}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, []Problem{{Message: "not JSON: " + err.Error()}}
	}
	if err := s.s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, leaves(ve)
		}
		return nil, []Problem{{Message: err.Error()}}
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, raw) // raw is one valid JSON value
	return compact.Bytes(), nil
}

// leaves flattens a validation error into its innermost causes, sorted by
// pointer and message.
func leaves(e *jsonschema.ValidationError) []Problem {
	var ps []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msg := strings.ReplaceAll(e.ErrorKind.LocalizedString(printer), location, "")
			ps = append(ps, Problem{Pointer: pointer(e.InstanceLocation), Message: shorten(msg, maxMessage)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	slices.SortFunc(ps, func(a, b Problem) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(ps)
}

// pointer is the RFC 6901 JSON pointer of tokens.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(Token(t))
	}
	return b.String()
}

// tokenEscaper escapes a JSON pointer token (RFC 6901).
var tokenEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// Token is s as one token of a JSON pointer (RFC 6901): "~" as "~0", "/"
// as "~1".
func Token(s string) string { return tokenEscaper.Replace(s) }

// shorten cuts s to at most n bytes (whole UTF-8 characters), marking the
// cut with "…".
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// loneSurrogate reports whether a string of raw (valid JSON) has a \u
// escape of a UTF-16 surrogate that is not one half of a pair.
func loneSurrogate(raw []byte) bool {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range b[2:6] {
			switch {
			case '0' <= c && c <= '9':
				r = r<<4 | rune(c-'0')
			case 'a' <= c && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case 'A' <= c && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := hex4(raw[i:])
		if !ok {
			i++ // another escape: skip its letter
			continue
		}
		switch {
		case 0xD800 <= r && r <= 0xDBFF:
			lo, ok := hex4(raw[i+6:])
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		case 0xDC00 <= r && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}

// depth is how deep raw (valid JSON) nests objects and arrays.
func depth(raw []byte) int {
	d, top, inString, escaped := 0, 0, false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			top = max(top, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return top
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return "an object"
}

// JSONWithout returns the schema as compact JSON without the root's
// member key (its other members in their order), for a CLI whose own
// validator refuses it (Claude Code refuses a 2020-12 $schema).
func (s *Schema) JSONWithout(key string) []byte {
	obj, _ := s.doc.(map[string]any)
	if _, ok := obj[key]; !ok {
		return s.text
	}
	dec := json.NewDecoder(bytes.NewReader(s.text))
	out := []byte{'{'}
	if _, err := dec.Token(); err != nil { // '{'
		return s.text
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return s.text
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return s.text
		}
		if k == key {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		name, _ := json.Marshal(k)
		out = append(append(append(out, name...), ':'), v...)
	}
	return append(out, '}')
}
