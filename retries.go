package hub

import (
	"encoding/json"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// retriesExceeded returns the error that stops a run at a retry notice
// numbered above Request.AgentRetries (n is how many the run has seen), or
// nil while the agent is within it. The bin is unavailable, with the reason
// of the failure being retried, from the notice's http_status as
// normalize.StatusReason maps it (401/403 auth, 402 quota, 429 rate_limit,
// 503/529 overloaded, other 5xx server), else from the notice's bin and
// reason when the decoder classified the failure's text (OpenCode);
// network when there is neither or its reason is not of bin unavailable (a
// retried 400). It is retryable as
// those reasons are (SPEC §4), with the HTTP status.
func retriesExceeded(max *int, n int, retry events.Notice) *events.Error {
	if max == nil || n <= *max {
		return nil
	}
	var data struct {
		HTTPStatus *int          `json:"http_status"`
		Bin        events.Bin    `json:"bin"`
		Reason     events.Reason `json:"reason"`
	}
	_ = json.Unmarshal(retry.Data, &data) // no data: no status
	reason, status := events.ReasonNetwork, 0
	if data.HTTPStatus != nil {
		status = *data.HTTPStatus
		if bin, r := normalize.StatusReason(status); bin == events.BinUnavailable {
			reason = r
		}
	} else if data.Bin == events.BinUnavailable && data.Reason != "" {
		reason = data.Reason // the decoder classified the retried failure's text
	}
	e := events.NewError(events.BinUnavailable, reason,
		"the provider keeps failing: retry later, or raise --agent-retries",
		"the agent started retry %d of a failed model call, over --agent-retries %d; hub stopped it (%s)", n, *max, retry.Message)
	if status != 0 {
		e = e.WithHTTPStatus(status)
	}
	return e
}
