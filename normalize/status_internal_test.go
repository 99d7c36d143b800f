package normalize

import (
	"strings"
	"testing"

	"github.com/hubcli/hub/events"
)

// TestStatusReason has one row per row of statusReasons, then the other
// 5xx and statuses the table does not know; a row of the table without a
// row here fails.
func TestStatusReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		bin    events.Bin
		reason events.Reason
	}{
		{400, events.BinInvalidInput, events.ReasonBadRequest},
		{401, events.BinUnavailable, events.ReasonAuth},
		{402, events.BinUnavailable, events.ReasonQuota},
		{403, events.BinUnavailable, events.ReasonAuth},
		{404, events.BinInvalidInput, events.ReasonBadRequest},
		{413, events.BinInvalidInput, events.ReasonBadRequest},
		{422, events.BinInvalidInput, events.ReasonBadRequest},
		{429, events.BinUnavailable, events.ReasonRateLimit},
		{503, events.BinUnavailable, events.ReasonOverloaded},
		{529, events.BinUnavailable, events.ReasonOverloaded},
		// any other 5xx
		{500, events.BinUnavailable, events.ReasonServer},
		{502, events.BinUnavailable, events.ReasonServer},
		{504, events.BinUnavailable, events.ReasonServer},
		{599, events.BinUnavailable, events.ReasonServer},
		// not a failure the table knows
		{0, "", ""},
		{200, "", ""},
		{405, "", ""},
		{408, "", ""},
		{600, "", ""},
	}
	tested := map[int]bool{}
	for _, tt := range tests {
		tested[tt.status] = true
		bin, reason := StatusReason(tt.status)
		if bin != tt.bin || reason != tt.reason {
			t.Errorf("StatusReason(%d) = %q/%q, want %q/%q", tt.status, bin, reason, tt.bin, tt.reason)
		}
		// SPEC §4: of these, rate_limit, overloaded and server are retryable.
		retry := reason == events.ReasonRateLimit || reason == events.ReasonOverloaded || reason == events.ReasonServer
		if reason != "" && events.Retryable(bin, reason) != retry {
			t.Errorf("StatusReason(%d) = %s/%s: retryable %v, want %v", tt.status, bin, reason, events.Retryable(bin, reason), retry)
		}
		if got, want := IsAuthStatus(tt.status), tt.reason == events.ReasonAuth; got != want {
			t.Errorf("IsAuthStatus(%d) = %v, want %v", tt.status, got, want)
		}
	}
	for _, r := range statusReasons {
		if !tested[r.status] {
			t.Errorf("statusReasons row %d has no test row", r.status)
		}
	}
}

// TestIsNetworkError has one message per phrase of networkPhrases, in the
// wording an agent or its SDK prints, and messages that are not network
// failures; a phrase without a message here fails.
func TestIsNetworkError(t *testing.T) {
	t.Parallel()
	network := []string{
		"Cannot connect to host api.example:443",                                             // cannot connect
		"Unable to connect. Is the computer able to access the url?",                         // unable to connect
		"API Error: Connection error.",                                                       // connection error
		"Connection failed: error sending request for url (http://127.0.0.1:9/v1/responses)", // connection failed
		"dial tcp 127.0.0.1:9: connect: connection refused",                                  // connection refused
		"read tcp: Connection reset by peer",                                                 // connection reset
		"Connection lost while streaming",                                                    // connection lost
		"connect ECONNREFUSED 127.0.0.1:9",                                                   // econnrefused
		"read ECONNRESET",                                                                    // econnreset
		"connect ETIMEDOUT 10.0.0.1:443",                                                     // etimedout
		"getaddrinfo ENOTFOUND api.example",                                                  // enotfound
		"TypeError: fetch failed",                                                            // fetch failed
		"Error: socket hang up",                                                              // socket hang up
		"The socket connection was closed unexpectedly. For more information, pass `verbose: true`", // socket connection was closed
		"SocketError: closed",               // socketerror
		"UND_ERR_SOCKET: other side closed", // other side closed
		"terminated",                        // terminated
		"Network error",                     // network error
		"error sending request for url (https://api.example/v1/responses)", // error sending request
		"failed to lookup address information: Name or service not known",  // failed to lookup address
		"dns error: failed to lookup address",                              // dns error
		"Request timed out.",                                               // timed out
		"TimeoutError: The operation was aborted due to timeout",           // timeout
	}
	for _, msg := range network {
		if !IsNetworkError(msg) {
			t.Errorf("IsNetworkError(%q) = false, want true", msg)
		}
	}
	for _, p := range networkPhrases {
		found := false
		for _, msg := range network {
			found = found || strings.Contains(strings.ToLower(msg), p)
		}
		if !found {
			t.Errorf("network phrase %q has no test message", p)
		}
	}
	for _, msg := range []string{
		"",
		"prompt is too long: 210000 tokens > 200000 maximum",
		"Invalid 'input': empty",
		"Rate limit reached for gpt-5.5",
		"The model `gpt-9` does not exist or you do not have access to it.",
		"Request was aborted.",
		`{"messaging_socket_path":"/tmp/cc-socks/6748.sock"}`,
	} {
		if IsNetworkError(msg) {
			t.Errorf("IsNetworkError(%q) = true, want false", msg)
		}
	}
}
