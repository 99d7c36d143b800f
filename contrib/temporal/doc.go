// Package hubtemporal runs hub inside Temporal (SPEC §6.6): an activity that
// runs one agent request through hub's library (hub.Run), and a sample
// workflow that fans a task out over several agents.
//
// It owns the mapping between Temporal and hub, nothing else: the Request
// that a workflow passes (JSON, durations as Go durations) and its mapping
// onto hub.Request; the heartbeats that carry a run's progress; the
// mapping of a failed run's error bin (SPEC §4) onto a Temporal application
// error — type "<bin>/<reason>", non-retryable unless hub says the failure
// is retryable, retry_after_s as the next retry delay, run.finished as the
// details. Running the agent, its limits and the kill of its process tree
// stay in hub's run engine
// (package hub).
//
// Cancellation: Temporal delivers an activity's cancellation only to an
// activity that heartbeats, and only when a heartbeat reaches the server.
// The activity heartbeats on every usage and tool event and at least every
// Activities.HeartbeatEvery, so a workflow that runs it must set a
// HeartbeatTimeout (the sample sets 30s); once the cancellation arrives, the
// activity's context is cancelled, hub.Run stops the agent's process
// group (SIGTERM, then SIGKILL after Limits.Grace) and the activity returns
// a canceled error carrying the run.finished.
//
// This package is its own Go module so that hub's module gains no
// dependency on the Temporal SDK.
package hubtemporal
