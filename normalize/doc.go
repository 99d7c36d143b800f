// Package normalize turns one agent's raw JSON lines into hub.event/v1 events
// and decides how a run ended. Each agent's decoder lives in its own
// subpackage (normalize/opencode, …) and satisfies Decoder; this package holds
// what they share: the Decoder contract, line cleaning (ANSI escape sequences,
// a BOM), tool-output cutting, text helpers for classification, and hub's one
// table of HTTP statuses (StatusReason) and one list of network-error phrases
// (IsNetworkError) that every decoder classifies failures with.
//
// It does not frame lines, spawn processes or enforce limits; the run
// engine (package hub) feeds it complete lines and applies hub's own causes
// (timeouts, caller cancellation) before asking a decoder for its outcome.
package normalize
