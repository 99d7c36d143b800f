package claude

import (
	"testing"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Every row of textRules, as Claude Code's stderr before an exit 1
// without a result, ends in the row's bin and reason, with a hint.
func TestTextRules(t *testing.T) {
	t.Parallel()
	one := 1
	for _, p := range normalize.CheckRules(textRules, func(text string) (events.Bin, events.Reason) {
		e := New("", true).noResult(normalize.End{ExitCode: &one, Stderr: text + "\n"})
		if e.Hint == "" {
			t.Errorf("%q: no hint", text)
		}
		return e.Bin, e.Reason
	}) {
		t.Error(p)
	}
}
