package pi

import (
	"testing"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Every setup error's example, as pi's stderr before an exit 1 without
// any answer, ends in the row's bin and reason.
func TestSetupErrors(t *testing.T) {
	t.Parallel()
	one := 1
	for _, p := range normalize.CheckRules(setupErrors, func(text string) (events.Bin, events.Reason) {
		e := noResult(normalize.End{ExitCode: &one, Stderr: "\n" + text + "\n"})
		return e.Bin, e.Reason
	}) {
		t.Error(p)
	}
}
