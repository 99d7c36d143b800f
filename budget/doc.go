// Package budget holds a run's limits (SPEC §5), the price table, and the
// Meter that keeps its observed totals — tokens, cost, turns, tool calls —
// from normalized events and estimates the cost of agents that report only
// tokens (Codex) from the price table.
//
// It is pure: no processes, no clocks of its own. The run engine (package
// hub) enforces the limits; this package only describes and counts them.
package budget
