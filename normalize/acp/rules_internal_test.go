package acp

import (
	"testing"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// TestTextRules: each row's example is classified by that row, as the row
// says, through the decoder's classification of an error answer.
func TestTextRules(t *testing.T) {
	for _, p := range normalize.CheckRules(textRules, func(text string) (events.Bin, events.Reason) {
		c, _ := normalize.ClassifyText(text, 0, textRules)
		return c.Bin, c.Reason
	}) {
		t.Error(p)
	}
}
