// Package hubtest is test support for code that runs agents through hub
// (package hub's Run, Events and Replay): hub's own adapter tests, and the
// tests of programs that wrap hub in Go (as net/http/httptest is for
// net/http). It imports hub and adapters and registers no adapter: a test
// imports the adapter it runs.
//
// It owns, one file per role:
//
//   - schema.go: [ValidateLine], [ValidateStream], [ValidateBodies] check
//     encoded events against events.Schema and the stream rules of SPEC §3;
//   - golden.go: [Transcripts] replays recorded transcripts through
//     hub.Replay and compares the events with golden files;
//   - realcli.go: running a real agent CLI against package mockllm — finding
//     the binary ([Bin]), a private home per run ([Home], [Env]), one checked
//     run ([Env.Run], [RunChecked]: a valid stream and no process left,
//     [Leftovers]) and the checks several tests share ([WantErr],
//     [CheckUsage], [CheckFinalAnswer]);
//   - conformance.go: [Conformance], the scenarios every agent must pass
//     against the mock server, driven by a per-agent [Agent];
//   - permission.go: [Permissions], the --permission tests checked on the
//     disk: each level × [Effect] (a write or shell write inside the
//     working directory, outside it, through a link) must come to its
//     [Outcome], driven by a per-agent [PermissionAgent];
//   - bench.go and decoder.go: [BenchReplay], [BenchDecoder] and
//     [CheckLineNotKept] on recorded and generated transcripts;
//   - script.go: [WriteScript] writes a program a test runs (a fake agent, a
//     wrapper) without racing the test binary's other forks (ETXTBSY).
//
// It does not own the mock server (package mockllm), the transcript
// generator (hubtest/benchgen) or the scripted fake agent
// (hubtest/fakeagent); nor any flag: a test that rewrites golden files
// passes its own -update flag in [Transcripts.Update], so importing this
// package never clashes with a flag of the importer's.
//
// Helpers that take a testing.TB report failures through it (Errorf for a
// wrong value, Fatal when nothing further can be checked) and mark
// themselves as helpers; the Validate functions return an error instead.
// Parallel tests may use everything at once, each with its own Env.
package hubtest
