package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/views"
)

// rejectFormOf is what the reject form of a request page sends, confirmed
// (app.js's dialog), with reason: its hidden intent and version.
func rejectFormOf(t *testing.T, page *goquery.Document, reason string) url.Values {
	t.Helper()
	form := page.Find(`[data-testid="reject-form"]`)
	require.Equal(t, 1, form.Length(), "the page offers its rejection")
	return url.Values{"intent": {form.Find(`input[name="intent"]`).AttrOr("value", "")}, "version": {form.Find(`input[name="version"]`).AttrOr("value", "")},
		"reason": {reason}, views.ConfirmedField: {"1"}}
}

// TestRev42RejectFromAStalePageIsRefused: the reject form sends the
// request's intent and version its page was read at, as the approve form
// does, and a rejection is judged by them as an approval is. An approver
// reads the request; the requester then edits its payload: the rejection
// from the page read before is refused (409, the request page as it is
// now, saying it changed, its reject form at the version now), nothing is
// recorded and the request still waits for approval. So is one after an
// edit back to the intent read, whose edit reason the approver never read,
// and one that says no version. Without JavaScript the confirmation page
// carries what the page read, and is refused alike. The rejection from
// the page read again goes.
func TestRev42RejectFromAStalePageIsRefused(t *testing.T) {
	t.Parallel()
	b, approver, id, edit := editedWaitingPage(t, "rev42-web-reject")
	ctx := t.Context()
	path := fmt.Sprintf("/replay/requests/%d", id)
	stillWaits := func(why string) {
		t.Helper()
		got, err := b.Replays.Request(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, replay.StatusPendingApproval, got.Status, why)
		assert.Zero(t, b.AuditCount(t, "action = 'replay.reject' AND object_id = $1", strconv.FormatInt(id, 10)), "%s: no rejection recorded", why)
	}

	page := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	read := rejectFormOf(t, page, "the amount is wrong")
	req, err := b.Replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, req.IntentHex(), read.Get("intent"), "the form carries the intent the page read")
	assert.Equal(t, strconv.Itoa(req.Version), read.Get("version"), "the form carries the version the page read")

	edit(`{"doc":3}`, "the amount was wrong")
	resp := b.Do(t, approver, "POST", path+"/reject", read, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "%.300s", resp.Body)
	stale := resp.Doc(t)
	assert.Contains(t, textOf(stale, `[data-testid="flash"]`), "The request changed since you reviewed it; review it again.")
	assert.Equal(t, "the amount was wrong", textOf(stale, `[data-testid="payload-edit-reason"]`), "the page as it is now")
	stillWaits("an edit since the page was read")

	// Without JavaScript: the confirmation page posts what the page read.
	resp = b.Do(t, approver, "POST", path+"/reject", url.Values{"intent": read["intent"], "version": read["version"], "reason": read["reason"]}, nil)
	require.Equal(t, http.StatusOK, resp.Status, "%.300s", resp.Body)
	confirm := resp.Doc(t).Find(`[data-testid="confirm-form"]`)
	assert.Equal(t, read.Get("intent"), confirm.Find(`input[name="intent"]`).AttrOr("value", ""))
	assert.Equal(t, read.Get("version"), confirm.Find(`input[name="version"]`).AttrOr("value", ""))
	resp = b.Do(t, approver, "POST", path+"/reject", read, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "confirmed: %.300s", resp.Body)

	edit(`{"doc":2}`, "a different justification")
	now, err := b.Replays.Request(ctx, id)
	require.NoError(t, err)
	require.Equal(t, read.Get("intent"), now.IntentHex(), "there and back: the intent read is the request's again")
	resp = b.Do(t, approver, "POST", path+"/reject", read, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "there and back: %.300s", resp.Body)
	stale = resp.Doc(t)
	assert.Contains(t, textOf(stale, `[data-testid="flash"]`), "The request changed since you read it: read it again.")
	again := rejectFormOf(t, stale, "not this justification")
	assert.Equal(t, strconv.Itoa(now.Version), again.Get("version"), "its form at the version it has now")

	noVersion := rejectFormOf(t, stale, "no version")
	noVersion.Del("version")
	resp = b.Do(t, approver, "POST", path+"/reject", noVersion, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "a form without a version: %.300s", resp.Body)
	assert.Contains(t, resp.Body, "did not say which version of the request you read")
	stillWaits("a stale or versionless page")

	resp = b.Do(t, approver, "POST", path+"/reject", again, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, "%.300s", resp.Body)
	got, err := b.Replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusRejected, got.Status, "rejected as read")
	assert.Equal(t, "not this justification", got.StatusReason)
}
