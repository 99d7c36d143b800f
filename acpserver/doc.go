// Package acpserver is hub as an Agent Client Protocol (ACP) agent: it
// serves one ACP connection (JSON-RPC 2.0, one message a line, usually on
// stdio) for an editor or any ACP client, and runs each session/prompt as
// one hub run (hub.Run) of the agent a Request template names, with
// that template's limits, permission, sandbox and environment. The run's
// hub events go back to the client as session/update notifications as
// they happen, and the run's outcome becomes the prompt's stop reason or
// its JSON-RPC error (see [Serve] for the mapping).
//
// It owns: the ACP agent side of one connection (initialize, session/new,
// session/prompt, session/cancel, session/close), the sessions of that
// connection and their running runs, the mapping of hub events onto
// session/update ([Updates]) and of run.finished onto a stop reason or an
// error ([Outcome]). It does not own: running agents (package hub),
// the flags and config file that build the template (cmd/hub's `hub acp`),
// or the ACP client side (hub driving an ACP agent: adapters/acp).
//
// What it does not serve: session/load and session/resume (loadSession
// false: a session lives as long as its connection; within it, each prompt
// after the first resumes the agent's own session), images, audio and
// embedded resources in a prompt (promptCapabilities has none of them:
// such a prompt is refused with JSON-RPC invalid params; text and
// resource links, ACP's baseline, are taken), the client's MCP servers
// (session/new's mcpServers are ignored: the agent runs with its own
// configuration), authentication (none is needed: the agent CLIs use their
// own credentials), modes and config options, and the client's fs/* and
// terminal/* methods (the agent CLIs read and write files themselves,
// under hub's --permission).
//
// What the SDK would drop without a word, hub answers (see [Serve]): a
// line that is not JSON gets a JSON-RPC parse error (-32700) to id null; a
// batch or any JSON that is not a message object, an invalid request
// (-32600) to id null; a message over [MaxMessage] (10 MiB a line, the
// SDK's limit) is skipped, read in bounded chunks and never held whole,
// and answered to the id its first 4 KiB show (invalid params with
// invalid_input/prompt_too_large for a session/prompt, invalid request
// otherwise), the connection going on. An input that ends in the middle of
// a line, or fails to read, ends Serve with [ErrConnection] (`hub acp`
// says so on stderr and exits 10, protocol); a clean end after whole
// lines returns nil.
package acpserver
