package config

import (
	"fmt"
	"slices"
	"strings"
)

// Source is where a setting's value comes from. The constants are in
// precedence order: a source beats every source after it.
type Source int

const (
	FromFlag       Source = iota // the command line
	FromEnv                      // a HUB_* variable
	FromAgentTable               // the run's agent's [agents.NAME] table
	FromTopLevel                 // the file's top-level key
	FromDefault                  // built in
)

// String names s: flag, env, agent table, top level or default.
func (s Source) String() string {
	switch s {
	case FromFlag:
		return "flag"
	case FromEnv:
		return "env"
	case FromAgentTable:
		return "agent table"
	case FromTopLevel:
		return "top level"
	}
	return "default"
}

// Origin is where one setting's value came from.
type Origin struct {
	Source Source
	Var    string // FromEnv: the variable
	Path   string // FromAgentTable, FromTopLevel: the file
	Value  *Value // FromAgentTable, FromTopLevel: the file's value (its key and line)
}

// String is the origin as `hub config` shows it: "flag", "env HUB_TIMEOUT",
// "file /path/config.toml:3" (the line left out if unknown) or "default".
func (o Origin) String() string {
	switch o.Source {
	case FromFlag:
		return "flag"
	case FromEnv:
		return "env " + o.Var
	case FromAgentTable, FromTopLevel:
		if o.Value != nil && o.Value.Line > 0 {
			return fmt.Sprintf("file %s:%d", o.Path, o.Value.Line)
		}
		return "file " + o.Path
	}
	return "default"
}

// Given is what the command line and the environment set of one setting.
type Given struct {
	Flag bool   // the command line set it
	Env  string // the HUB_* variable that set it, "" for none
}

// Resolve returns where setting name's value comes from in a run of agent
// ("" when no agent is known yet): the first of the command line, a HUB_*
// variable (g), agent's [agents.NAME] table, the file's top level and the
// built-in default that has it. Resolve is pure; a nil f has no values.
func (f *File) Resolve(name, agent string, g Given) Origin {
	switch {
	case g.Flag:
		return Origin{Source: FromFlag}
	case g.Env != "":
		return Origin{Source: FromEnv, Var: g.Env}
	}
	if a := f.Agent(agent); a != nil {
		if v, ok := a.Values[name]; ok {
			return Origin{Source: FromAgentTable, Path: f.Path, Value: &v}
		}
	}
	if v, ok := f.Top(name); ok {
		return Origin{Source: FromTopLevel, Path: f.Path, Value: &v}
	}
	return Origin{Source: FromDefault}
}

// EnvEntry is one variable the file adds to an agent's environment.
type EnvEntry struct {
	Name, Value string
	Origin      Origin
}

// KV is e as K=V.
func (e EnvEntry) KV() string { return e.Name + "=" + e.Value }

// Env returns the variables the file's key name (an array of K=V, hub
// run's env) adds to a run of agent: the top level's, then the agent
// table's, a later K=V replacing an earlier one's value in its place
// (within one array too, as on the command line). The command line's
// --env goes on top of them. Entries without "=" are skipped (the
// Schema's Check refuses them).
func (f *File) Env(name, agent string) []EnvEntry {
	var out []EnvEntry
	add := func(v Value, ok bool, src Source) {
		if !ok {
			return
		}
		for _, kv := range v.Any.([]string) {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			e := EnvEntry{Name: k, Value: val, Origin: Origin{Source: src, Path: f.Path, Value: &v}}
			if i := slices.IndexFunc(out, func(o EnvEntry) bool { return o.Name == k }); i >= 0 {
				out[i] = e
				continue
			}
			out = append(out, e)
		}
	}
	top, ok := f.Top(name)
	add(top, ok, FromTopLevel)
	if a := f.Agent(agent); a != nil {
		v, ok := a.Values[name]
		add(v, ok, FromAgentTable)
	}
	return out
}
