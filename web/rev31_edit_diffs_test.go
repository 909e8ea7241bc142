package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevApprove31EveryEditIsShownWhereItIsApproved: an edit changes one
// line of a 100 KiB payload. The request's page compared payloads up to
// 64 KiB and said "too large to compare here, download both" beside the
// approve button: an approver could approve a change nobody was shown.
// It compares every edit the browser's form can make (up to
// replay.MaxEditablePayload), and offers no approval of one it cannot
// compare (a larger payload edited through the service). The approvals
// list, which lists many requests, compares less (its own bounds) and
// links the request's page for the rest.
func TestRevApprove31EveryEditIsShownWhereItIsApproved(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	request := func(msgID string, payload, edited []byte) string {
		t.Helper()
		id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: msgID, Payload: payload})
		batch, drafts := testfactory.Draft(t, b.Replays, oncall.Actor, id)
		require.Len(t, drafts, 1)
		require.NoError(t, b.Replays.EditPayload(t.Context(), drafts[0].ID, id, oncall.Actor, replay.PayloadEdit{Payload: edited, Reason: "one line fixed"}, quarantine.RequestMeta{}))
		reqs, err := b.Replays.Submit(t.Context(), batch, oncall.Actor, replay.SubmitInput{Reason: "edited"}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.Equal(t, replay.StatusPendingApproval, reqs[0].Status)
		return fmt.Sprintf("/replay/requests/%d", reqs[0].ID)
	}
	lines := func(n int) string {
		var sb strings.Builder
		for i := 0; sb.Len() < n; i++ {
			fmt.Fprintf(&sb, "document %d indexed\n", i)
		}
		return sb.String()
	}
	original := lines(100 << 10)
	edited := strings.Replace(original, "document 3000 indexed\n", "document 3000 reindexed\n", 1)
	shown := request("rev31-diff-100k", []byte(original), []byte(edited))

	list := b.Do(t, approver, "GET", "/approvals", nil, nil).Doc(t)
	assert.Equal(t, shown, list.Find(`[data-testid="payload-diff-elsewhere-link"]`).AttrOr("href", ""), "the list links the request's page for a diff it does not compare")
	assert.Zero(t, list.Find(`[data-testid="payload-diff-too-large"]`).Length())

	page := b.Do(t, approver, "GET", shown, nil, nil).Doc(t)
	assert.Zero(t, page.Find(`[data-testid="payload-diff-too-large"]`).Length(), "the request's page compares it")
	diff := page.Find(`[data-testid="payload-diff-lines"]`).Text()
	assert.Contains(t, diff, "- document 3000 indexed")
	assert.Contains(t, diff, "+ document 3000 reindexed")
	require.Equal(t, 1, page.Find(`[data-testid="approve-form"]`).Length(), "and offers its approval")
	intent := page.Find(`[data-testid="approve-form"] input[name="intent"]`).AttrOr("value", "")
	version := page.Find(`[data-testid="approve-form"] input[name="version"]`).AttrOr("value", "")
	resp := b.Do(t, approver, "POST", shown+"/approve", url.Values{"intent": {intent}, "version": {version}}, nil)
	assert.Equal(t, http.StatusSeeOther, resp.Status, "%.300s", resp.Body)

	// A payload larger than the browser edits, edited through the service:
	// not compared, so not approved from the page.
	big := lines(replay.MaxEditablePayload + 10<<10)
	hidden := request("rev31-diff-big", []byte(big), []byte(strings.Replace(big, "document 3000 indexed\n", "document 3000 gone\n", 1)))
	page = b.Do(t, approver, "GET", hidden, nil, nil).Doc(t)
	assert.Equal(t, 1, page.Find(`[data-testid="payload-diff-too-large"]`).Length())
	assert.Zero(t, page.Find(`[data-testid="approve-form"]`).Length(), "no approval of a change the page could not show")
	list = b.Do(t, approver, "GET", "/approvals", nil, nil).Doc(t)
	assert.Equal(t, 1, list.Find(`[data-testid="payload-diff-too-large"]`).Length(), "the list says it as the request's page does")
	assert.Contains(t, list.Find(`[data-testid="payload-diff-too-large"]`).Text(), "cannot be approved")
	resp = b.Do(t, approver, "POST", hidden+"/approve", url.Values{"intent": {strings.Repeat("0", 64)}}, nil)
	assert.Equal(t, http.StatusConflict, resp.Status)
	assert.Contains(t, resp.Body, "larger than this page compares")
}
