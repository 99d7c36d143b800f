package hub

import (
	"encoding/json"
	"testing"

	"github.com/hubcli/hub/events"
)

// TestRetriesExceeded: within --agent-retries nothing happens; above it the
// error's reason and status come from the retry notice's http_status.
func TestRetriesExceeded(t *testing.T) {
	t.Parallel()
	two := 2
	notice := func(data string) events.Notice {
		return events.Notice{Kind: events.NoticeRetry, Message: "retrying", Data: json.RawMessage(data)}
	}
	if e := retriesExceeded(nil, 99, notice(`{"http_status":500}`)); e != nil {
		t.Errorf("no limit: %v, want nil", e)
	}
	if e := retriesExceeded(&two, 2, notice(`{"http_status":500}`)); e != nil {
		t.Errorf("retry 2 of --agent-retries 2: %v, want nil", e)
	}
	tests := []struct {
		data   string
		reason events.Reason
		status int
	}{
		{`{"http_status":429}`, events.ReasonRateLimit, 429},
		{`{"http_status":529}`, events.ReasonOverloaded, 529},
		{`{"http_status":503}`, events.ReasonOverloaded, 503},
		{`{"http_status":500}`, events.ReasonServer, 500},
		{`{"http_status":401}`, events.ReasonAuth, 401},
		{`{"http_status":402}`, events.ReasonQuota, 402},
		{`{"http_status":400}`, events.ReasonNetwork, 400}, // not a reason of bin unavailable
		{`{"http_status":null}`, events.ReasonNetwork, 0},
		{``, events.ReasonNetwork, 0},
	}
	for _, tt := range tests {
		e := retriesExceeded(&two, 3, notice(tt.data))
		if e == nil || e.Bin != events.BinUnavailable || e.Reason != tt.reason || e.Retryable != events.Retryable(e.Bin, e.Reason) || e.Hint == "" {
			t.Errorf("retry 3 of 2, data %s: %+v, want unavailable/%s", tt.data, e, tt.reason)
			continue
		}
		if got := 0; e.HTTPStatus != nil {
			got = *e.HTTPStatus
			if got != tt.status {
				t.Errorf("data %s: http_status %d, want %d", tt.data, got, tt.status)
			}
		} else if tt.status != 0 {
			t.Errorf("data %s: http_status nil, want %d", tt.data, tt.status)
		}
	}
}
