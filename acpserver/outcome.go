package acpserver

import (
	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub/events"
)

// RunFailedCode is the JSON-RPC error code of a session/prompt whose run
// failed with a bin that has no ACP stop reason: -32603, JSON-RPC's
// internal error, the code ACP clients show as a failed turn. The error's
// message and data say which failure it was (see Outcome).
const RunFailedCode = -32603

// Outcome is the answer to a session/prompt whose run ended with fin:
//
//   - an ok run → stop reason end_turn;
//   - cancelled (caller or agent_aborted) → cancelled;
//   - budget_exceeded/tokens → max_tokens;
//   - budget_exceeded/turns and budget_exceeded/tool_steps →
//     max_turn_requests;
//   - any other failure → a JSON-RPC error (RunFailedCode) whose message is
//     "<bin>/<reason>: <message> (<hint>)" and whose data is hub's whole
//     error object {bin, reason, message, retryable, retry_after_s,
//     http_status, hint} (SPEC §4).
//
// Exactly one of the stop reason and the error is set.
func Outcome(fin events.RunFinished) (acp.StopReason, *acp.RequestError) {
	e := fin.Error
	switch {
	case fin.OK:
		return acp.StopReasonEndTurn, nil
	case e == nil: // not a run.finished hub writes; say so rather than end_turn
		e = events.NewError(events.BinInternal, "", "report this as a hub bug", "the run failed without an error")
	case e.Bin == events.BinCancelled:
		return acp.StopReasonCancelled, nil
	case e.Bin == events.BinBudgetExceeded && e.Reason == events.ReasonTokens:
		return acp.StopReasonMaxTokens, nil
	case e.Bin == events.BinBudgetExceeded && (e.Reason == events.ReasonTurns || e.Reason == events.ReasonToolSteps):
		return acp.StopReasonMaxTurnRequests, nil
	}
	return "", &acp.RequestError{Code: RunFailedCode, Message: errorMessage(e), Data: e}
}

// errorMessage is "<bin>/<reason>: <message> (<hint>)", without the parts
// that are empty.
func errorMessage(e *events.Error) string {
	msg := e.Error() // bin/reason: message
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}
