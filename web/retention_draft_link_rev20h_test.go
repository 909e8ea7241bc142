package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit20DraftEntryLinksANotFoundPage: the sibling on the audit log.
// The "replay.draft" entry of a colleague's draft links its object
// (objectURL: /replay/requests/N) for a tenant's auditor, who reads every
// request of the tenant; while it is a draft, the link answers not found
// and writes a denied entry under the auditor's name, the log's own link
// making the log say the auditor tried to reach what they may not.
func TestRevAudit20DraftEntryLinksANotFoundPage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, author := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "acme:auditor")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "rev20h-draft-audit",
		Error: "index shard 20h-draft-audit unavailable"})
	_, drafts := testfactory.Draft(t, b.Replays, author.Actor, id)
	require.Len(t, drafts, 1)

	d := b.Do(t, auditor, "GET", "/audit?action=replay.draft", nil, nil)
	require.Equal(t, http.StatusOK, d.Status, d.Body)
	rows := d.Doc(t).Find(`[data-testid="audit-row"]`)
	require.Positive(t, rows.Length(), "the draft's entry is listed")
	href, ok := rows.Find(`[data-testid="audit-object-link"]`).First().Attr("href")
	if !ok {
		// No link: nothing leads to a refusal (the fix); the object is
		// still named, as text.
		assert.Contains(t, rows.First().Text(), "replay_request", "the entry names its object")
		return
	}
	denied := b.AuditCount(t, `outcome = 'denied'`)
	followed := b.Do(t, auditor, "GET", href, nil, nil)
	assert.Equal(t, http.StatusOK, followed.Status,
		"the audit log links the draft's entry to %s; the auditor following it gets %d", href, followed.Status)
	assert.Equal(t, denied, b.AuditCount(t, `outcome = 'denied'`), "following the log's own link audits a denied attempt")
}
