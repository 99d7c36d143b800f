// Package adapters is what hub knows of each agent CLI: the Adapter
// interface (one value per agent: describe the CLI (Info), find the binary
// and probe its version (Detect, with a cache keyed by the binary), build
// the command for a request (Command), make a decoder of its output
// (NewDecoder)), Base for the common parts, the explicit registry
// (Register, Lookup, Names), and Conversation, for an agent hub talks with
// over its stdin (ACP).
//
// The agents live in subpackages (adapters/opencode, adapters/claude,
// adapters/codex, adapters/pi, adapters/acp), each registering itself;
// import adapters/all to get every one. An adapter runs nothing but its
// version probe: the run engine is package hub (github.com/hubcli/hub),
// which imports this package, never the other way round. An adapter maps
// the run's grant (package grant) onto its CLI in Command, and says how in
// Info.Grants.
//
// It does not decode any agent's format (normalize/<agent> does) nor keep
// prices and limits (budget does).
package adapters
