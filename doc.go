// Package hub runs coding-agent CLIs (Claude Code, Codex, OpenCode, pi, any
// ACP agent) as subprocesses and turns each run into one sequenced
// hub.event/v1 stream ending in exactly one run.finished. It is the
// library's API, the one package most programs import.
//
//	import (
//		"github.com/hubcli/hub"
//		_ "github.com/hubcli/hub/adapters/all" // every built-in agent
//	)
//
//	for ev, err := range hub.Events(ctx, hub.Request{Agent: "opencode", Prompt: "fix the test"}) { … }
//
// Run (events to a Sink), Events (an iterator) and Replay (a recorded
// transcript, no process) take a Request, the task (agent, prompt, model,
// cwd, limits, grant, schema, sandbox), and Options, how the run is
// carried out (run id, clock, orphan reaping, a force-kill channel, a raw
// log, guards, confirm and approve callbacks).
//
// The engine's files are the steps of a run, in the order a run takes
// them:
//
//   - request.go, options.go: what the caller asks and how;
//   - run.go: the grant (package grant) decided before anything starts,
//     the version probe (adapters.Adapter.Detect), the sandbox opened
//     (sandbox.go), the command built, and each attempt: the agent's
//     process under a guard that holds its whole tree (internal/proc);
//   - stream.go: stdout lines, or events from another transport, turned
//     into the run's events: triage, decode (normalize/<agent>), sanitize
//     (sanitize.go), meter (meter.go), notice caps (flood.go, stderr.go),
//     redaction (package redact), sequence numbers;
//   - guard.go: the guards that see each event and may stop the run:
//     budgets, tool steps, agent retries (retries.go), fail-fast, the
//     permission watch (grant.Watch), the caller's (WithGuard);
//   - finalize.go, structured.go: the final-answer resume after
//     --max-tool-steps and the repair of an answer that does not match
//     --schema, further attempts on the same stream;
//   - sandbox.go: the change reported (file.changed, run.finished.diff),
//     protected paths refused, the change applied on approval;
//   - verdict.go: the one function that decides how the run ended, from
//     what stopped it, the decoder's outcome and the exit record (SPEC §4);
//     damage.go: a run cut short by a broken agent;
//   - events.go, replay.go: the iterator and the replay over the same run;
//   - session.go, live.go, session_resume.go: a session of many turns
//     (NewSession), in one agent process where the CLI can hold one
//     (adapters.Sessioner), else a process a turn resuming the last.
//
// The agents themselves live in package adapters and its subpackages,
// which import nothing of this package; hubtest has test support for
// programs that run agents through hub.
package hub
