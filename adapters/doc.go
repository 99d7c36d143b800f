// Package adapters runs agent CLIs. It owns the Adapter interface (one value
// per agent: find the binary, probe its version, build the command, make a
// decoder), the explicit registry of adapters, and Run, which spawns an agent
// in its own process group, frames and decodes its stdout, enforces the
// wall-clock and idle timeouts, stops the whole group (SIGTERM, grace,
// SIGKILL) and writes exactly one run.finished per run.
//
// The agents themselves live in subpackages (adapters/opencode, …), each
// registering itself; import adapters/all to get every one.
package adapters
