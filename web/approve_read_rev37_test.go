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

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// approveFormOf is what the approve form of a request page sends: its
// hidden intent and version.
func approveFormOf(t *testing.T, page *goquery.Document) url.Values {
	t.Helper()
	form := page.Find(`[data-testid="approve-form"]`)
	require.Equal(t, 1, form.Length(), "the page offers its approval")
	return url.Values{"intent": {form.Find(`input[name="intent"]`).AttrOr("value", "")}, "version": {form.Find(`input[name="version"]`).AttrOr("value", "")}}
}

// TestRev37ApproveFormCarriesTheVersionReadAndAStaleOneIsRefused: the
// approve form sends the request's version its page was read at with the
// intent. After the requester edits the payload away and back (the intent
// the page read is the request's again, the edit reason is not), the form
// of the page read before is refused: the request page again (409), saying
// the request changed since it was read, with the edit reason it gives now
// and a form at its version now, whose approval goes. A form that sends no
// version is refused too: read as none, the intent alone would approve it.
func TestRev37ApproveFormCarriesTheVersionReadAndAStaleOneIsRefused(t *testing.T) {
	t.Parallel()
	b, approver, id, edit := editedWaitingPage(t, "rev37-web-aba")
	ctx := t.Context()
	path := fmt.Sprintf("/replay/requests/%d", id)

	page := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	assert.Equal(t, "fix", textOf(page, `[data-testid="payload-edit-reason"]`))
	read := approveFormOf(t, page)
	req, err := b.Replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(req.Version), read.Get("version"), "the form carries the version the page read")

	edit(`{"doc":3}`, "x")
	edit(`{"doc":2}`, "a different justification")
	now, err := b.Replays.Request(ctx, id)
	require.NoError(t, err)
	require.Equal(t, read.Get("intent"), now.IntentHex(), "there and back: the intent read is the request's again")

	resp := b.Do(t, approver, "POST", path+"/approve", read, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "%.300s", resp.Body)
	stale := resp.Doc(t)
	assert.Contains(t, textOf(stale, `[data-testid="flash"]`), "The request changed since you read it: read it again.")
	assert.Equal(t, "a different justification", textOf(stale, `[data-testid="payload-edit-reason"]`), "the page as it is now")
	again := approveFormOf(t, stale)
	assert.Equal(t, strconv.Itoa(now.Version), again.Get("version"), "its form at the version it has now")

	resp = b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {now.IntentHex()}}, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "a form without a version: %.300s", resp.Body)
	assert.Contains(t, resp.Body, "did not say which version of the request you read")

	resp = b.Do(t, approver, "POST", path+"/approve", again, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, "%.300s", resp.Body)
	got, err := b.Replays.Request(ctx, id)
	require.NoError(t, err)
	assert.NotNil(t, got.ApprovedAt, "approved as read")
}

// TestRev37PollReloadSaysTheRequestChanged: the request page polls, and
// when the request changes while it waits (an edit there and back: the
// same intent, another reason) its poll asks for a reload, which the page
// makes with the version its approve form held (read). The page it brings
// holds the request as it is now, and its form approves that: so it says,
// in the flash, that the request changed while it was read. A reload at
// the version read, or a page opened by a person, says nothing.
func TestRev37PollReloadSaysTheRequestChanged(t *testing.T) {
	t.Parallel()
	b, approver, id, edit := editedWaitingPage(t, "rev37-web-poll")
	path := fmt.Sprintf("/replay/requests/%d", id)

	page := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	read := page.Find(`[data-testid="approve-form"] input[data-read-version]`).AttrOr("value", "")
	require.NotEmpty(t, read, "the approve form's version is the one a reload carries")
	unchanged := b.Do(t, approver, "GET", path+"?poll=1&read="+read, nil, nil).Doc(t)
	assert.Empty(t, textOf(unchanged, `[data-testid="flash"]`), "nothing changed since the version read")

	edit(`{"doc":3}`, "x")
	edit(`{"doc":2}`, "a different justification")
	reloaded := b.Do(t, approver, "GET", path+"?poll=1&read="+read, nil, nil).Doc(t)
	assert.Contains(t, textOf(reloaded, `[data-testid="flash"]`), "The request changed while you were reading it")
	assert.Equal(t, "a different justification", textOf(reloaded, `[data-testid="payload-edit-reason"]`))
	opened := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	assert.Empty(t, textOf(opened, `[data-testid="flash"]`), "a page a person opens says nothing")
}

// editedWaitingPage starts a console with a request of acme's on-call
// waiting for an approver: one rebuildable dead letter (msgID) whose
// payload they edited to {"doc":2} for the reason "fix". It returns the
// console, the approver's session, the request's id and what edits the
// request's payload again as the on-call.
func editedWaitingPage(t *testing.T, msgID string) (*testfactory.Console, *http.Client, int64, func(payload, reason string)) {
	t.Helper()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	ctx := t.Context()
	dl := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: msgID, Payload: []byte(`{"doc":1}`)})
	batch, drafts := testfactory.Draft(t, b.Replays, oncall.Actor, dl)
	require.Len(t, drafts, 1)
	id := drafts[0].ID
	edit := func(payload, reason string) {
		t.Helper()
		require.NoError(t, b.Replays.EditPayload(ctx, id, dl, oncall.Actor, replay.PayloadEdit{Payload: []byte(payload), Reason: reason}, quarantine.RequestMeta{}))
	}
	edit(`{"doc":2}`, "fix")
	reqs, err := b.Replays.Submit(ctx, batch, oncall.Actor, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Equal(t, replay.StatusPendingApproval, reqs[0].Status)
	return b, approver, id, edit
}
