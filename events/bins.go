package events

import (
	"fmt"
	"math"
	"strings"
)

// Bin is the closed set of failure classes of SPEC §4. Callers act on the bin;
// the reason refines it. The zero Bin is not valid.
type Bin string

// The bins of SPEC §4.
const (
	BinAgentFailed        Bin = "agent_failed"
	BinNotInstalled       Bin = "not_installed"
	BinUnsupportedVersion Bin = "unsupported_version"
	BinInvalidInput       Bin = "invalid_input"
	BinPermissionDenied   Bin = "permission_denied"
	BinUnavailable        Bin = "unavailable"
	BinTimeout            Bin = "timeout"
	BinBudgetExceeded     Bin = "budget_exceeded"
	BinProtocol           Bin = "protocol"
	BinInternal           Bin = "internal"
	BinCancelled          Bin = "cancelled"
)

// Reason refines a Bin. Reasons are fixed for schema version 1.
type Reason string

// The reasons of SPEC §4, grouped by bin.
const (
	// agent_failed
	ReasonExitStatus    Reason = "exit_status"
	ReasonCrashed       Reason = "crashed"
	ReasonErrorEvent    Reason = "error_event"
	ReasonInvalidOutput Reason = "invalid_output"
	// not_installed
	ReasonNotFound      Reason = "not_found"
	ReasonNotExecutable Reason = "not_executable"
	// unsupported_version
	ReasonTooOld      Reason = "too_old"
	ReasonUnparseable Reason = "unparseable"
	// invalid_input
	ReasonContextOverflow Reason = "context_overflow"
	ReasonBadModel        Reason = "bad_model"
	ReasonBadSession      Reason = "bad_session"
	ReasonBadRequest      Reason = "bad_request"
	ReasonPromptTooLarge  Reason = "prompt_too_large"
	ReasonConflict        Reason = "conflict"
	// permission_denied
	ReasonToolDenied           Reason = "tool_denied"
	ReasonEffectNotGranted     Reason = "effect_not_granted"
	ReasonConfirmationRequired Reason = "confirmation_required"
	ReasonProtectedPath        Reason = "protected_path"
	// unavailable
	ReasonAuth          Reason = "auth"
	ReasonNotConfigured Reason = "not_configured"
	ReasonRateLimit     Reason = "rate_limit"
	ReasonQuota         Reason = "quota"
	ReasonOverloaded    Reason = "overloaded"
	ReasonServer        Reason = "server"
	ReasonNetwork       Reason = "network"
	// timeout
	ReasonWall Reason = "wall"
	ReasonIdle Reason = "idle"
	// budget_exceeded
	ReasonCost      Reason = "cost"
	ReasonTokens    Reason = "tokens"
	ReasonTurns     Reason = "turns"
	ReasonToolSteps Reason = "tool_steps"
	// protocol
	ReasonNoResult       Reason = "no_result"
	ReasonMalformed      Reason = "malformed"
	ReasonUnexpectedExit Reason = "unexpected_exit"
	// cancelled
	ReasonCaller       Reason = "caller"
	ReasonAgentAborted Reason = "agent_aborted"
)

// binReasons lists the reasons each bin allows (SPEC §4). internal has none.
var binReasons = map[Bin][]Reason{
	BinAgentFailed:        {ReasonExitStatus, ReasonCrashed, ReasonErrorEvent, ReasonInvalidOutput},
	BinNotInstalled:       {ReasonNotFound, ReasonNotExecutable},
	BinUnsupportedVersion: {ReasonTooOld, ReasonUnparseable},
	BinInvalidInput:       {ReasonContextOverflow, ReasonBadModel, ReasonBadSession, ReasonBadRequest, ReasonPromptTooLarge, ReasonConflict},
	BinPermissionDenied:   {ReasonToolDenied, ReasonEffectNotGranted, ReasonConfirmationRequired, ReasonProtectedPath},
	BinUnavailable:        {ReasonAuth, ReasonNotConfigured, ReasonRateLimit, ReasonQuota, ReasonOverloaded, ReasonServer, ReasonNetwork},
	BinTimeout:            {ReasonWall, ReasonIdle},
	BinBudgetExceeded:     {ReasonCost, ReasonTokens, ReasonTurns, ReasonToolSteps},
	BinProtocol:           {ReasonNoResult, ReasonMalformed, ReasonUnexpectedExit},
	BinInternal:           {},
	BinCancelled:          {ReasonCaller, ReasonAgentAborted},
}

// Bins returns every bin in the order of SPEC §4's table.
func Bins() []Bin {
	return []Bin{BinAgentFailed, BinNotInstalled, BinUnsupportedVersion, BinInvalidInput,
		BinPermissionDenied, BinUnavailable, BinTimeout, BinBudgetExceeded, BinProtocol,
		BinInternal, BinCancelled}
}

// Reasons returns the reasons bin b allows, nil for an unknown bin.
func (b Bin) Reasons() []Reason { return append([]Reason(nil), binReasons[b]...) }

// Valid reports whether b is one of the bins of SPEC §4.
func (b Bin) Valid() bool { _, ok := binReasons[b]; return ok }

// ExitCode is hub's process exit status for a run that failed with bin b
// (SPEC §4). 0 is never returned: a successful run has no bin. Exit code 2
// (usage error of hub itself) belongs to no bin.
func (b Bin) ExitCode() int {
	switch b {
	case BinAgentFailed:
		return 1
	case BinNotInstalled:
		return 3
	case BinUnsupportedVersion:
		return 4
	case BinInvalidInput:
		return 5
	case BinPermissionDenied:
		return 6
	case BinUnavailable:
		return 7
	case BinTimeout:
		return 8
	case BinBudgetExceeded:
		return 9
	case BinProtocol:
		return 10
	case BinCancelled:
		return 130
	default: // BinInternal and anything unknown
		return 11
	}
}

// Error is the error object of SPEC §4, carried by run.finished. It also
// implements the error interface so library code can return it.
//
// RetryAfterS is in seconds, HTTPStatus is the provider's HTTP status when the
// agent reported one; both are nil when unknown.
type Error struct {
	Bin         Bin      `json:"bin"`
	Reason      Reason   `json:"reason"`
	Message     string   `json:"message"`
	Retryable   bool     `json:"retryable"`
	RetryAfterS *float64 `json:"retry_after_s"`
	HTTPStatus  *int     `json:"http_status"`
	Hint        string   `json:"hint"`
}

// NewError returns an Error with Retryable set by the SPEC §4 rule (see
// Retryable). Reason "" is allowed only for BinInternal.
func NewError(bin Bin, reason Reason, hint, format string, args ...any) *Error {
	return &Error{
		Bin:       bin,
		Reason:    reason,
		Message:   fmt.Sprintf(format, args...),
		Retryable: Retryable(bin, reason),
		Hint:      hint,
	}
}

// WithHTTPStatus sets HTTPStatus (when status > 0) and returns e.
func (e *Error) WithHTTPStatus(status int) *Error {
	if status > 0 {
		e.HTTPStatus = &status
	}
	return e
}

// WithRetryAfter sets RetryAfterS in seconds (when s > 0) and returns e.
func (e *Error) WithRetryAfter(s float64) *Error {
	if s > 0 && !math.IsInf(s, 1) {
		e.RetryAfterS = &s
	}
	return e
}

// Error formats e as "bin/reason: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Bin))
	if e.Reason != "" {
		b.WriteByte('/')
		b.WriteString(string(e.Reason))
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Retryable is SPEC §4's rule: unavailable/rate_limit, unavailable/overloaded,
// unavailable/server, unavailable/network and timeout/idle may succeed if the
// caller simply tries again; nothing else does.
func Retryable(bin Bin, reason Reason) bool {
	switch {
	case bin == BinUnavailable:
		switch reason {
		case ReasonRateLimit, ReasonOverloaded, ReasonServer, ReasonNetwork:
			return true
		}
	case bin == BinTimeout && reason == ReasonIdle:
		return true
	}
	return false
}
