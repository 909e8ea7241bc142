package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb25AuditReasonShownWithItsHiddenCharacters: the reason of a
// discard is text a person typed, and the audit log is where an auditor
// reads why something was done: the audit page writes it as
// views.UntrustedLines does, each hidden or direction-changing character
// as its marker, so that "refund<U+202E>..." cannot pass for another
// reason than the one stored.
func TestRevWeb25AuditReasonShownWithItsHiddenCharacters(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "acme:auditor")
	id := seed(t, b, "acme", "orders.refund", "rev25-reason", nil)

	reason := "duplicate of refund\u202e8-dro" + "\u200b"
	resp := b.Do(t, oncall, http.MethodPost, fmt.Sprintf("/deadletters/%d/discard", id),
		url.Values{"reason": {reason}, "version": {"1"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	require.Equal(t, 1, b.AuditCount(t, `action = 'deadletter.discard' AND outcome = 'ok' AND reason = $1`, reason), "stored as typed")

	page := b.Do(t, auditor, http.MethodGet, "/audit?action=deadletter.discard", nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	var shown []string
	byID(page.Doc(t), "audit-row").Each(func(_ int, s *goquery.Selection) {
		if text(s.Find(`td[data-label="Action"]`)) == "deadletter.discard" {
			shown = append(shown, text(s.Find(`td[data-label="Reason"]`)))
		}
	})
	require.Len(t, shown, 1, "the discard's row")
	assert.True(t, strings.Contains(shown[0], "duplicate of refund<U+202E>8-dro<U+200B>"),
		"the reason with its hidden characters as markers: %q", shown[0])
}
