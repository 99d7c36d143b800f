package normalize

import "github.com/hubcli/hub/events"

// statusReasons is hub's one table of HTTP statuses of a failed model call
// (SPEC §4). Every decoder, and the runner's --agent-retries stop, reads a
// status through StatusReason; each decides in its own order how a status
// weighs against the agent's error codes and text.
var statusReasons = []struct {
	status int
	bin    events.Bin
	reason events.Reason
}{
	{400, events.BinInvalidInput, events.ReasonBadRequest},
	{401, events.BinUnavailable, events.ReasonAuth},
	{402, events.BinUnavailable, events.ReasonQuota}, // Payment Required: credits or billing
	{403, events.BinUnavailable, events.ReasonAuth},
	{404, events.BinInvalidInput, events.ReasonBadRequest}, // a 404 naming a model is bad_model: the decoders check the text
	{413, events.BinInvalidInput, events.ReasonBadRequest},
	{422, events.BinInvalidInput, events.ReasonBadRequest},
	{429, events.BinUnavailable, events.ReasonRateLimit}, // a 429 about quota or billing is quota: the decoders check the text
	{503, events.BinUnavailable, events.ReasonOverloaded},
	{529, events.BinUnavailable, events.ReasonOverloaded}, // Anthropic's "overloaded"
}

// StatusReason returns the bin and reason of a model call that failed with
// HTTP status: 401 and 403 unavailable/auth, 402 unavailable/quota, 429
// unavailable/rate_limit, 503 and 529 unavailable/overloaded, any other 5xx
// unavailable/server, 400, 404, 413 and 422 invalid_input/bad_request. For
// any other status (0 for none) it returns "", "".
func StatusReason(status int) (events.Bin, events.Reason) {
	for _, r := range statusReasons {
		if r.status == status {
			return r.bin, r.reason
		}
	}
	if status >= 500 && status <= 599 {
		return events.BinUnavailable, events.ReasonServer
	}
	return "", ""
}

// IsAuthStatus reports whether StatusReason gives status unavailable/auth
// (401, 403): a failure that retrying cannot fix, at whose first retry the
// decoders stop the agent unless fail-fast is off (SPEC §4).
func IsAuthStatus(status int) bool {
	_, reason := StatusReason(status)
	return reason == events.ReasonAuth
}

// networkPhrases are the texts, matched case-insensitively anywhere in an
// error message or stderr, that say a model call failed on its way to the
// provider: the wordings of Node's and Bun's fetch and sockets (Claude
// Code, OpenCode, pi), of the Anthropic and OpenAI SDKs, and of Codex's
// Rust client. A new wording goes here, with a test row.
var networkPhrases = []string{
	"cannot connect",               // Bun: "Cannot connect to host"
	"unable to connect",            // Bun, OpenCode: "Unable to connect. Is the computer able to access the url?"
	"connection error",             // Anthropic and OpenAI SDKs: "Connection error."
	"connection failed",            // Codex: "Connection failed: error sending request for url (…)"
	"connection refused",           // Codex, curl-style messages
	"connection reset",             // "Connection reset by peer"
	"connection lost",              // pi-ai
	"econnrefused",                 // Node: "connect ECONNREFUSED 127.0.0.1:9"
	"econnreset",                   // Node: "read ECONNRESET"
	"etimedout",                    // Node: "connect ETIMEDOUT"
	"enotfound",                    // Node: "getaddrinfo ENOTFOUND api.example"
	"fetch failed",                 // Node's fetch (undici): "TypeError: fetch failed"
	"socket hang up",               // Node: "socket hang up"
	"socket connection was closed", // Bun: "The socket connection was closed unexpectedly"
	"socketerror",                  // undici: "SocketError: …"
	"other side closed",            // undici: "SocketError: other side closed"
	"terminated",                   // undici: "TypeError: terminated" when the response body is cut
	"network error",                // "Network error", "NetworkError when attempting to fetch resource"
	"error sending request",        // Codex (reqwest): "error sending request for url (…)"
	"failed to lookup address",     // Codex (reqwest): "failed to lookup address information"
	"dns error",                    // Codex (reqwest): "dns error: …"
	"timed out",                    // "Request timed out.", "The operation timed out.", "operation timed out"
	"timeout",                      // "TimeoutError: The operation was aborted due to timeout"
}

// IsNetworkError reports whether text says a model call failed on its way
// to the provider (networkPhrases): unavailable/network in SPEC §4. Each
// decoder asks it after the checks that come first for its agent (an HTTP
// status, a context overflow, …).
func IsNetworkError(text string) bool {
	return ContainsFold(text, networkPhrases...)
}
