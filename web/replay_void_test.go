package web_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVoidRequestPageSaysWhatBlockedIt: the page of a request the rules
// left every item of out says each is blocked, in the blocking rule's
// words, and what its class asks of approvers (none were asked); the
// replays page says none were asked. Its Submitted line does not call it
// a draft.
func TestVoidRequestPageSaysWhatBlockedIt(t *testing.T) {
	t.Parallel()
	page, b, oncall := voidManualRequest(t)
	d := page.Doc(t)
	banner := textOf(d, `[data-testid="replay-status-reason"]`)
	assert.Contains(t, banner, "all 2 items are blocked")
	assert.Contains(t, banner, "manual items cannot be replayed in bulk", "the blocking rule's words")
	approvals := textOf(d, `[data-testid="replay-approvals-not-needed"]`)
	assert.Contains(t, approvals, "None asked")
	assert.Contains(t, approvals, "manual replays need 2 distinct approvers")
	assert.NotContains(t, textOf(d, `[data-testid="replay-submitted"]`), "a draft", "a void request is no draft")

	list := b.Do(t, oncall, "GET", "/replay/requests", nil, nil).Doc(t)
	assert.Equal(t, "none asked", strings.TrimSpace(list.Find(`[data-testid="replay-row-approvals"]`).First().Text()))
	assert.Equal(t, "never accepted", strings.TrimSpace(list.Find(`[data-testid="replay-row-submitted"]`).First().Text()))
}
