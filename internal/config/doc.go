// Package config reads hub's config file, config.toml, and decides where
// each setting of a run comes from.
//
// The file holds defaults for hub run's flags: a top-level key per flag,
// named as the flag (timeout = "10m", permission = "read-only",
// env = ["K=V"]), and an [agents.NAME] table per agent for the keys that
// differ by agent (bin, model, env, permission, prices). Every value keeps
// the line it was read from, so that a bad file is an *Error naming file,
// line and key, and `hub config` can say where a value came from.
//
// Precedence (Resolve), highest first: the command line, a HUB_*
// variable, the run's agent's [agents.NAME] table, the top-level key, the
// built-in default. env is the exception: its variables merge by name
// (Env), the same order deciding each one.
//
// What it owns: finding the file (Locate: HUB_CONFIG, else
// os.UserConfigDir()/hub/config.toml), parsing it with
// github.com/BurntSushi/toml, checking every key and value against a
// Schema, and the precedence rule. What it does not: it knows none of hub's
// flags (the caller describes them in a Schema, with checks that refuse
// what the flag would refuse), reads no HUB_* variable but HUB_CONFIG, and
// sets no flag; cmd/hub applies the values it returns.
//
// A File is immutable once returned and safe for concurrent use.
package config
