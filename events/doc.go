// Package events defines hub's normalized event stream, schema "hub.event/v1"
// (SPEC §3), the error object and its closed set of bins (SPEC §4), the JSON
// encoding hub writes, and the JSON Schema (draft 2020-12) of that encoding.
//
// It owns the shapes only. It does not decode any agent's output (package
// normalize does), spawn processes (package hub does, through internal/proc) or decide limits
// (package budget does). It imports nothing from the rest of the project.
package events
