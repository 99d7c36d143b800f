package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// EnvVar names the variable that points hub at another config file.
const EnvVar = "HUB_CONFIG"

// DefaultName is the file's path relative to the user's config directory
// (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config on Linux).
const DefaultName = "hub/config.toml"

// Kind is the type of a setting's value in the file.
type Kind int

const (
	String   Kind = iota // a string
	KindPath             // a string naming a file: relative to the config file's directory; "~/" is the home directory
	Command              // a program: a name without a slash is left for a PATH lookup, anything else is as for KindPath
	Strings              // an array of strings (a repeatable flag)
	Duration             // a string with a unit ("90s", "10m", "1h30m"), or "0"
	Float                // a number; an integer is taken as one
	Int                  // an integer
	Bool                 // true or false
)

var kindNames = map[Kind]string{
	String: "a string", KindPath: "a string (a file's path)", Command: "a string (a program's name or path)",
	Strings: "an array of strings", Duration: `a string with a unit, e.g. "10m"`,
	Float: "a number", Int: "an integer", Bool: "true or false",
}

// Key describes one setting the file may set.
type Key struct {
	Name string // the flag's name: "timeout", "max-cost"
	Kind Kind
	// Agent says the key may be set in an [agents.NAME] table too.
	Agent bool
	// Check refuses a value that the flag would refuse; its error is
	// reported after the file, line and key. nil accepts any value of
	// Kind.
	Check func(Value) error
}

// Schema is what a file may hold.
type Schema struct {
	Keys []Key
	// Agents are the names an [agents.NAME] table may have. A table of
	// another name is an error, so that a name keeps room for agents
	// added later, unless it sets NamedBy.
	Agents []string
	// NamedBy, when not "", is the key with which a table names an agent
	// of the user's own under a NAME not in Agents (an ACP agent's
	// acp-command: [agents.gemini] acp-command = "gemini --acp").
	NamedBy string
	// Refused are names the file does not take though a flag has them,
	// with why ("a session belongs to one run"): the error says so
	// rather than "unknown key".
	Refused map[string]string
}

func (s Schema) key(name string) (Key, bool) {
	i := slices.IndexFunc(s.Keys, func(k Key) bool { return k.Name == name })
	if i < 0 {
		return Key{}, false
	}
	return s.Keys[i], true
}

// Value is one value read from the file.
type Value struct {
	Name string // the setting: "timeout", "model"
	Key  string // the key as it sits in the file: "timeout", "agents.codex.model"
	Line int    // the key's line, from 1; 0 when the parser gave none
	Kind Kind
	// Any is a string (String, KindPath, Command; a KindPath or a Command with a
	// slash made absolute), []string (Strings), time.Duration
	// (Duration), float64 (Float), int64 (Int) or bool (Bool).
	Any any
}

// Texts returns v as its flag takes it on the command line: one word,
// or one per element for Strings.
func (v Value) Texts() []string {
	switch x := v.Any.(type) {
	case []string:
		return slices.Clone(x)
	case time.Duration:
		return []string{x.String()}
	case float64:
		return []string{strconv.FormatFloat(x, 'g', -1, 64)}
	case int64:
		return []string{strconv.FormatInt(x, 10)}
	case bool:
		return []string{strconv.FormatBool(x)}
	default:
		return []string{fmt.Sprint(x)}
	}
}

// Error is a mistake in a config file. Error() reads
// "config FILE:LINE: KEY: MSG"; the line is left out when the parser gave
// none, the key for a syntax error before any key.
type Error struct {
	Path string
	Line int
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config ")
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// File is a parsed config file. The zero File, and a nil *File, have no
// values (no file).
type File struct {
	// Path is the file read, or the default path looked at when Found is
	// false.
	Path  string
	Found bool

	top    map[string]Value
	agents []*Agent // in the file's order
}

// Agent is an [agents.NAME] table.
type Agent struct {
	Name   string
	Line   int              // of the table's header (or first key)
	Values map[string]Value // by setting name
}

// Sorted returns a's values in the file's order.
func (a *Agent) Sorted() []Value { return sortedValues(a.Values) }

// Top returns the top-level value of setting name.
func (f *File) Top(name string) (Value, bool) {
	if f == nil {
		return Value{}, false
	}
	v, ok := f.top[name]
	return v, ok
}

// TopValues returns the top-level values in the file's order.
func (f *File) TopValues() []Value {
	if f == nil {
		return nil
	}
	return sortedValues(f.top)
}

// Agent returns the [agents.NAME] table of name, or nil.
func (f *File) Agent(name string) *Agent {
	if f == nil {
		return nil
	}
	for _, a := range f.agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Named reports whether name is an agent the file itself names: an
// [agents.NAME] table that sets the schema's NamedBy key.
func (f *File) Named(name, namedBy string) bool {
	a := f.Agent(name)
	if a == nil || namedBy == "" {
		return false
	}
	_, ok := a.Values[namedBy]
	return ok
}

// Agents returns the [agents.NAME] tables in the file's order.
func (f *File) Agents() []*Agent {
	if f == nil {
		return nil
	}
	return slices.Clone(f.agents)
}

func sortedValues(m map[string]Value) []Value {
	vs := make([]Value, 0, len(m))
	for _, v := range m {
		vs = append(vs, v)
	}
	slices.SortFunc(vs, func(a, b Value) int { return cmp.Or(cmp.Compare(a.Line, b.Line), strings.Compare(a.Key, b.Key)) })
	return vs
}

// Locate returns where the config file is: HUB_CONFIG's value when it is
// set and not empty (required: the file must exist), else DefaultName in
// the user's config directory (not required: no file there is no file).
// getenv is os.Getenv in hub; tests pass their own.
func Locate(getenv func(string) string) (path string, required bool, err error) {
	if p := getenv(EnvVar); p != "" {
		return p, true, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", false, fmt.Errorf("config: no user config directory (%v); set %s to name the file", err, EnvVar)
	}
	return filepath.Join(dir, DefaultName), false, nil
}

// Load reads and parses the file at path (see Parse). A missing file is
// an error when required, else a File with Found false and no values.
//
// At most MaxFileBytes are read: more (a huge file, /dev/zero) is an
// error, not a read that ends only when memory does.
func Load(path string, required bool, s Schema) (*File, error) {
	data, err := readFile(path)
	if errors.Is(err, os.ErrNotExist) && !required {
		return &File{Path: path}, nil
	}
	if err != nil {
		if required {
			return nil, &Error{Path: path, Msg: fmt.Sprintf("cannot read the file %s names: %v", EnvVar, unwrapPath(err))}
		}
		return nil, &Error{Path: path, Msg: fmt.Sprintf("cannot read it: %v", unwrapPath(err))}
	}
	return Parse(data, path, s)
}

// MaxFileBytes is the largest config file hub reads: far more than any
// settings file holds.
const MaxFileBytes = 1 << 20

// readFile reads path, at most MaxFileBytes of it. /dev/null is an
// empty file (the way to run without one).
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("longer than %d bytes: not a config file", MaxFileBytes)}
	}
	return data, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse parses data, the file at path, against s. The first mistake in
// the file's order is returned as an *Error: a TOML syntax error, a key s
// does not have (at the top level, in an [agents.NAME] table, or a table
// for an agent s does not name), a value of the wrong type, or one that
// the key's Check refuses. Relative paths are made absolute against
// path's directory.
func Parse(data []byte, path string, s Schema) (*File, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{Path: path, Line: errorLine(data, pe.Position), Key: pe.LastKey, Msg: pe.Message}
		}
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	p := parser{path: path, dir: filepath.Dir(path), schema: s, lines: keyLines(string(data))}
	f := &File{Path: path, Found: true, top: map[string]Value{}}
	for _, k := range p.keys(raw, nil) {
		name := k[0]
		if name == "agents" {
			agents, err := p.agents(raw[name])
			if err != nil {
				return nil, err
			}
			f.agents = agents
			continue
		}
		v, err := p.value(k, raw[name], false)
		if err != nil {
			return nil, err
		}
		f.top[name] = v
	}
	return f, nil
}

// errorLine is the line of a syntax error: the one that holds its first
// byte. (The parser's own line is one too far when that byte is the
// newline that ends the line: "[agents.codex" and a newline.)
func errorLine(data []byte, pos toml.Position) int {
	if pos.Start < 0 || pos.Start >= len(data) {
		return pos.Line
	}
	return 1 + bytes.Count(data[:pos.Start], []byte("\n"))
}

type parser struct {
	lines  map[string]int // each key's line (keyLines), by toml.Key.String
	path   string
	dir    string
	schema Schema
}

func (p parser) errorf(key toml.Key, format string, args ...any) *Error {
	return &Error{Path: p.path, Line: p.line(key), Key: key.String(), Msg: fmt.Sprintf(format, args...)}
}

// keys returns the keys of table (at prefix) in the file's order.
func (p parser) keys(table map[string]any, prefix toml.Key) []toml.Key {
	keys := make([]toml.Key, 0, len(table))
	for name := range table {
		keys = append(keys, append(slices.Clone(prefix), name))
	}
	lines := make(map[string]int, len(keys))
	for _, k := range keys {
		lines[k.String()] = p.line(k)
	}
	slices.SortFunc(keys, func(a, b toml.Key) int {
		return cmp.Or(cmp.Compare(lines[a.String()], lines[b.String()]), strings.Compare(a.String(), b.String()))
	})
	return keys
}

func (p parser) agents(raw any) ([]*Agent, error) {
	key := toml.Key{"agents"}
	tables, ok := raw.(map[string]any)
	if !ok {
		return nil, p.errorf(key, "want tables [agents.NAME] (NAME one of: %s), got %s", strings.Join(p.schema.Agents, ", "), tomlType(raw))
	}
	var out []*Agent
	for _, k := range p.keys(tables, key) {
		name := k[1]
		table, ok := tables[name].(map[string]any)
		if !ok {
			return nil, p.errorf(k, "want a table [agents.%s], got %s", name, tomlType(tables[name]))
		}
		if !slices.Contains(p.schema.Agents, name) {
			if _, named := table[p.schema.NamedBy]; p.schema.NamedBy == "" || !named {
				also := ""
				if p.schema.NamedBy != "" {
					also = fmt.Sprintf(", or a table that sets %s (an ACP agent of yours)", p.schema.NamedBy)
				}
				return nil, p.errorf(k, "no agent %q: [agents.NAME] names one of: %s%s", name, strings.Join(p.schema.Agents, ", "), also)
			}
		}
		a := &Agent{Name: name, Line: p.line(k), Values: map[string]Value{}}
		for _, vk := range p.keys(table, k) {
			v, err := p.value(vk, table[vk[2]], true)
			if err != nil {
				return nil, err
			}
			a.Values[vk[2]] = v
		}
		out = append(out, a)
	}
	return out, nil
}

// value checks the value at key (a top-level key, or a key of an
// [agents.NAME] table when inAgent) and converts it to its Kind.
func (p parser) value(key toml.Key, raw any, inAgent bool) (Value, error) {
	name := key[len(key)-1]
	k, ok := p.schema.key(name)
	if why, refused := p.schema.Refused[name]; refused && !ok {
		return Value{}, p.errorf(key, "not taken from the config file: %s", why)
	}
	if !ok || (inAgent && !k.Agent) {
		return Value{}, p.errorf(key, "unknown key (%s)", p.known(inAgent))
	}
	v := Value{Name: name, Key: key.String(), Line: p.line(key), Kind: k.Kind}
	wrong := func() (Value, error) {
		return Value{}, p.errorf(key, "want %s, got %s", kindNames[k.Kind], tomlType(raw))
	}
	switch k.Kind {
	case String, KindPath, Command:
		s, ok := raw.(string)
		if !ok {
			return wrong()
		}
		if k.Kind == KindPath || (k.Kind == Command && strings.Contains(s, "/")) {
			s = p.abs(s)
		}
		v.Any = s
	case Strings:
		list, ok := raw.([]any)
		if !ok {
			return wrong()
		}
		ss := make([]string, len(list))
		for i, e := range list {
			if ss[i], ok = e.(string); !ok {
				return Value{}, p.errorf(key, "want %s, got %s at index %d", kindNames[k.Kind], tomlType(e), i)
			}
		}
		v.Any = ss
	case Duration:
		s, ok := raw.(string)
		if !ok {
			return wrong()
		}
		d, err := ParseDuration(s)
		if err != nil {
			return Value{}, p.errorf(key, "%v", err)
		}
		v.Any = d
	case Float:
		switch x := raw.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return Value{}, p.errorf(key, "want a finite number, got %v", x)
			}
			v.Any = x
		case int64:
			v.Any = float64(x)
		default:
			return wrong()
		}
	case Int:
		x, ok := raw.(int64)
		if !ok {
			return wrong()
		}
		v.Any = x
	case Bool:
		x, ok := raw.(bool)
		if !ok {
			return wrong()
		}
		v.Any = x
	}
	if k.Check != nil {
		if err := k.Check(v); err != nil {
			// "permission: permission "x": want …" says permission once.
			return Value{}, p.errorf(key, "%s", strings.TrimPrefix(err.Error(), name+" "))
		}
	}
	return v, nil
}

func (p parser) known(inAgent bool) string {
	var names []string
	for _, k := range p.schema.Keys {
		if !inAgent || k.Agent {
			names = append(names, k.Name)
		}
	}
	if inAgent {
		return "an [agents.NAME] table takes " + strings.Join(names, ", ")
	}
	return "the top level takes " + strings.Join(names, ", ") + " and [agents.NAME] tables"
}

// abs makes a path from the file absolute: "~/" is the home directory, a
// relative path is relative to the file's directory.
func (p parser) abs(s string) string {
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	if s == "" || filepath.IsAbs(s) {
		return s
	}
	return filepath.Join(p.dir, s)
}

// ParseDuration parses a duration as the file and the flags take it: a
// number with a unit ("90s", "10m", "1h30m"), or "0". A number without a
// unit is refused with the units to use.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	if _, ferr := strconv.ParseFloat(strings.TrimSpace(s), 64); ferr == nil {
		return 0, fmt.Errorf("%q has no unit: use a unit, e.g. %ss or %sm", s, strings.TrimSpace(s), strings.TrimSpace(s))
	}
	return 0, fmt.Errorf("%q is not a duration: use a number with a unit, e.g. 10s or 10m", s)
}

func tomlType(v any) string {
	switch x := v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case []map[string]any:
		return "an array of tables"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a date or time"
	default:
		return fmt.Sprintf("%T", x)
	}
}

// line returns the line of key in the file, 0 if unknown.
func (p parser) line(key toml.Key) int { return p.lines[key.String()] }

// keyLines returns the line of every key (and table) of data, a file that
// parses, by toml.Key.String. BurntSushi's decoder keeps every key's
// position but gives it out only in the ParseError of a value that refuses
// to decode: keyLines decodes the file once, keeping each value undecoded
// (toml.Primitive), and decodes each of them into a probe that always
// refuses, which costs no second parse; a table's values are reached the
// same way.
func keyLines(data string) map[string]int {
	lines := map[string]int{}
	var top map[string]toml.Primitive
	md, err := toml.Decode(data, &top)
	if err != nil {
		return lines
	}
	var walk func(table map[string]toml.Primitive, prefix toml.Key)
	walk = func(table map[string]toml.Primitive, prefix toml.Key) {
		for name, prim := range table {
			key := append(slices.Clone(prefix), name)
			var pe toml.ParseError
			if err := md.PrimitiveDecode(prim, &probe{}); errors.As(err, &pe) && pe.Message == errProbe.Error() {
				lines[key.String()] = pe.Position.Line
			}
			// A table (even one only implied by [agents.codex], which
			// has no type of its own in the metadata) decodes into a map.
			var sub map[string]toml.Primitive
			if md.PrimitiveDecode(prim, &sub) == nil {
				walk(sub, key)
			}
		}
	}
	walk(top, nil)
	return lines
}

type probe struct{}

var errProbe = errors.New("config: line probe")

func (*probe) UnmarshalTOML(any) error { return errProbe }
