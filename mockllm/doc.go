// Package mockllm is a small model server that speaks the wire APIs of the
// providers the agent CLIs call, so tests can run the real CLIs offline:
// hub's own tests, and the tests of programs that wrap hub (point the CLI's
// provider at [Server.URL], put a [Scenario] marker word in the prompt, and
// check what hub made of the answer; package hubtest does the
// pointing for the four agents hub knows). Command mockllm (cmd/mockllm)
// serves it on its own, for trying a CLI by hand or from a script.
//
// It owns: binding a loopback port, choosing a [Scenario] from a marker word
// in the prompt (MOCK_TEXT, MOCK_TOOL, MOCK_CALL, MOCK_401, …), answering it
// in the request's wire API, and recording what it received
// ([Server.Requests]).
// It does not own: starting the CLIs, their configuration files, or judging
// their output.
//
// Two markers let a test drive a CLI's tools: "MOCK_CALL <tool> <arguments>"
// makes the model call the tool named (in any case) with those arguments,
// to the end of the line (a JSON object; a custom tool's raw text, with \n
// for a newline), then report the tool's result as text: a permission test
// asks for a write and checks the disk and the answer. MOCK_LISTTOOLS
// answers the names of the tools the request offers. See [Call] and
// [ListTools].
//
// "MOCK_ANSWER <text>" answers that text, one answer per turn separated by
// " MOCK_THEN " (the next for each assistant message the conversation
// already holds), and calls StructuredOutput with it where Claude Code
// offers that tool: structured-answer tests give an answer that is valid,
// invalid then corrected on resume, fenced, or followed by trailing JSON.
// See [Answer].
//
// One request is handled in three steps, so that a new wire API is one new
// file and no new scenario code:
//
//  1. a wire API parses its request body into a call (model, stream, tools,
//     the tool result if any, the scenario: scenario.go);
//  2. call.plan turns the call into a wire-neutral reply (text, a tool call,
//     a failure, a hang or a stall, and the usage to report);
//  3. the same wire API writes the reply in its own framing and error bodies.
//
// Implemented: OpenAI Chat Completions (chat.go), used by opencode and pi;
// Anthropic Messages (messages.go: /v1/messages and
// /v1/messages/count_tokens), used by claude; OpenAI Responses
// (responses.go: /v1/responses), used by codex. A new wire API is a parse
// function, a writer and an error table (a wireAPI value) in its own file,
// and a line in Server.route; the scenarios, usage numbers and tool choice
// stay shared.
package mockllm
