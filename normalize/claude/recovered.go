package claude

import (
	"fmt"
	"strings"

	"github.com/hubcli/hub/events"
)

// recovered appends a recovered_error notice when the result just read is a
// success that followed API retries (system/api_retry): Claude Code got
// past the failure it was retrying. Its exit status may still be non-zero.
func (d *Decoder) recovered(dst []events.Body) []events.Body {
	r := d.result
	if !d.lastRetry.Exists() || r.Get("is_error").Bool() || strings.HasPrefix(r.Get("subtype").String(), "error") {
		return dst
	}
	last := d.lastRetry
	return append(dst, events.Notice{Kind: events.NoticeRecoveredError, Message: fmt.Sprintf(
		"claude recovered after retrying the API call (last retry: attempt %d, HTTP %d, %s)",
		last.Get("attempt").Int(), last.Get("error_status").Int(), last.Get("error").String())})
}
