// Package adapters runs agent CLIs. It owns the Adapter interface (one value
// per agent: find the binary, probe its version, build the command, make a
// decoder), the explicit registry of adapters, and Run, Events and Replay,
// which turn one request into one sequenced hub.event/v1 stream ending in
// exactly one run.finished.
//
// A run is built from four parts, each in its own file:
//
//   - the supervisor (internal/proc.Supervisor) owns each agent process
//     through a guard process that holds its whole tree (re-executed from
//     the running binary; see internal/proc): Stop (SIGTERM once each,
//     grace, SIGKILL), the reaping, the tree's end even if hub is killed,
//     and one Exit record; the version probe uses it too;
//   - the stream (stream.go) turns stdout lines, or events from another
//     transport, into the run's events: triage, decode, sanitize, meter,
//     notice caps, redaction, sequence numbers;
//   - the guards (guard.go) see each event and may stop the run: budgets,
//     tool steps, agent retries, fail-fast, the permission watch
//     (permission.go), and the caller's (WithGuard);
//   - the verdict (verdict.go, decide) is the one function that decides how
//     the run ended, from a record of what stopped it, the decoder's outcome
//     and the exit record (SPEC §4).
//
// The final-answer resume after --max-tool-steps (finalize.go) and the
// repair of an answer that does not match --schema (structured.go) are
// further attempts on the same stream, judged by the same verdict.
//
// A sandboxed run (Request.Sandbox, sandbox.go, package sandbox) is moved
// into a copy or git worktree of its directory once the agent is found,
// before its command is built, so every attempt works there; once the
// last attempt is over, the sandbox step reports the change (file.changed,
// run.finished.diff), refuses protected paths, applies the change when
// Request.Apply asks (after WithApprove) and removes the sandbox.
//
// Before anything starts, the run's grant is decided (SPEC §6.1):
// Request.Permission against the agent's Info.Grants (a level it cannot be
// held to is refused), Request.Auth (AuthLogin removes BilledKeys from its
// environment), and the caller's Confirm (WithConfirm). Each adapter maps
// the level onto its CLI in Command; the watch checks every tool call
// against it.
//
// Request is the task (agent, prompt, model, cwd, limits); Options are the
// runner's knobs (run id, clock, orphan reaping, force kill, raw log,
// guards, confirm and approve callbacks, the whole diff). The agents themselves live in subpackages (adapters/opencode, …),
// each registering itself; import adapters/all to get every one.
//
// It does not decode any agent's format (normalize/<agent> does) nor keep
// prices and limits (budget does).
package adapters
