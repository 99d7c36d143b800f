// Package redact finds credentials in what hub emits and replaces them with
// "[REDACTED]" (SPEC §6.1: hub never logs a credential, in any encoding).
//
// A Redactor (New, from the agent's environment) redacts the strings of
// event bodies (Body), raw JSON values (Raw), one-off texts (String) and
// streamed text deltas (Delta, Flush), which it redacts as one text across
// any split: the values of variables named like credentials and URL
// passwords, as written, URL-escaped, in hex and in base64, and key shapes
// (sk-…, ghp_…, AKIA…, PEM private keys, …) whatever the environment
// holds, after decoding JSON, backslash and percent escapes. Argv redacts
// a command line.
//
// It has one job and no knowledge of runs: the run engine (package hub)
// gives each attempt a Redactor and passes every event through it.
package redact
