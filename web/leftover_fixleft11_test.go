package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestFixLeft11RequestPageSaysWhoSettlesOnce: a request whose three items
// need reconciliation, seen by its requester (who may not settle them):
// the page says who settles them once, above the items, not on each row.
func TestFixLeft11RequestPageSaysWhoSettlesOnce(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, who := b.SignIn(t, "acme:oncall", "acme:approver")
	var ids []int64
	for i := range 3 {
		ids = append(ids, seed(t, b, "acme", "search.index_update", fmt.Sprintf("fl11-settle-%d", i), nil))
	}
	req := testfactory.Request(t, b.Replays, who.Actor, ids, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.Pool, req.ID)

	resp := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests/%d", req.ID), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	require.Equal(t, 3, d.Find(`[data-testid="replay-item"]`).Length())
	once := d.Find(`[data-testid="replay-items-settler"]`)
	require.Equal(t, 1, once.Length(), "said once, at the Items section")
	assert.Contains(t, once.Text(), "Each item that needs reconciliation waits for an approver of acme")
	assert.Contains(t, once.Text(), "You requested this replay")
	assert.Equal(t, 1, strings.Count(d.Text(), "to settle it (not the replay's requester)"), "not repeated on the rows")
}

// TestFixLeft11ApprovalsOtherAccountIsNotYou: the approvals page marks a
// request of the viewer's own account "(you)", and one whose requester is
// another account with the viewer's email (MayBeOne: they may not approve
// it) as that, not as "(you)".
func TestFixLeft11ApprovalsOtherAccountIsNotYou(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	const email = "fl11-dana@example.com"
	viewer, me := b.SignInAs(t, testidp.Person{ID: "fl11-dana-work", Email: email, EmailVerified: true}, "acme:oncall", "acme:approver")
	_, other := b.SignInAs(t, testidp.Person{ID: "fl11-dana-home", Email: email, EmailVerified: true}, "acme:oncall", "acme:approver")
	mine := testfactory.Request(t, b.Replays, me.Actor, []int64{seed(t, b, "acme", "ledger.delete", "fl11-own-1", nil)}, replay.SubmitInput{})
	theirs := testfactory.Request(t, b.Replays, other.Actor, []int64{seed(t, b, "acme", "ledger.delete", "fl11-own-2", nil)}, replay.SubmitInput{})

	resp := b.Do(t, viewer, "GET", "/approvals", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	marks := map[string]string{}
	d.Find(`[data-testid="approval-row"]`).Each(func(_ int, row *goquery.Selection) {
		href, _ := row.Find(`a.row-link`).Attr("href")
		marks[href] = strings.TrimSpace(row.Find(`[data-testid="approval-own"]`).Text())
	})
	assert.Equal(t, "(you)", marks[fmt.Sprintf("/replay/requests/%d", mine.ID)], "the viewer's own account")
	assert.Equal(t, "(another account with your email)", marks[fmt.Sprintf("/replay/requests/%d", theirs.ID)], "another account, the same person by email")
}

// TestFixLeft11SingleCloseConflictIs409: a confirmed discard of one dead
// letter on its own route that Close refuses as a conflict is answered as
// the bulk route answers one: 409 and the confirmation page, saying
// nothing changed and why, with the way back; not a redirect with a flash.
func TestFixLeft11SingleCloseConflictIs409(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, who := b.SignIn(t, "acme:oncall")
	ctx := context.Background()

	t.Run("HeldByARunningRequest", func(t *testing.T) {
		t.Parallel()
		id := seed(t, b, "acme", "search.index_update", "fl11-close-held", nil)
		req := testfactory.Request(t, b.Replays, who.Actor, []int64{id}, replay.SubmitInput{})
		_, err := b.Pool.Exec(ctx, `UPDATE replay_requests SET status = 'running' WHERE id = $1`, req.ID)
		require.NoError(t, err)
		resp := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/discard", id),
			url.Values{"reason": {"duplicate"}, "version": {"1"}, views.ConfirmedField: {"1"}}, nil)
		require.Equal(t, http.StatusConflict, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Contains(t, textOf(d, `[data-testid="confirm-error"]`), "Nothing changed:")
		left := textOf(d, `[data-testid="left-out-group"]`)
		assert.Contains(t, left, replaypolicy.HeldFreedBy(req.ID, "running", "acme"), "names the request and what frees it")
		assert.Contains(t, left, "Emergency stop", "a running request is stopped, as its page calls it")
		assert.Zero(t, d.Find(`[data-testid="confirm-submit"]`).Length(), "nothing to confirm")
		back, _ := d.Find(`[data-testid="confirm-back"]`).Attr("href")
		assert.Equal(t, fmt.Sprintf("/deadletters/%d", id), back, "the way back to it")
		dl, err := dlq.NewStore(b.Pool).Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, dlq.StatusReplayRequested, dl.Status, "nothing changed")
	})

	t.Run("ChangedMeanwhile", func(t *testing.T) {
		t.Parallel()
		id := seed(t, b, "acme", "search.index_update", "fl11-close-stale", nil)
		before, err := dlq.NewStore(b.Pool).Get(ctx, id)
		require.NoError(t, err)
		stale := strconv.Itoa(int(before.Version) + 5)
		resp := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/resolve", id),
			url.Values{"reason": {"fixed by hand"}, "version": {stale}, views.ConfirmedField: {"1"}}, nil)
		require.Equal(t, http.StatusConflict, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Contains(t, textOf(d, `[data-testid="confirm-error"]`), "Nothing changed:")
		require.Equal(t, 1, d.Find(`[data-testid="confirm-submit"]`).Length(), "still open: it may be confirmed again as it is now")
		assert.Equal(t, "fixed by hand", textOf(d, `[data-testid="confirm-reason"]`), "the reason typed is kept")
		version, _ := d.Find(`[data-testid="confirm-form"] input[name="version"]`).Attr("value")
		assert.Equal(t, strconv.Itoa(int(before.Version)), version, "at the version it has now")
		again := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/resolve", id),
			url.Values{"reason": {"fixed by hand"}, "version": {version}, views.ConfirmedField: {"1"}}, nil)
		require.Equal(t, http.StatusSeeOther, again.Status, again.Body)
		dl, err := dlq.NewStore(b.Pool).Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, dlq.StatusResolved, dl.Status)
	})
}

// TestFixLeft11ConfirmEditKeepsWhatWasTyped: on the confirm page of two
// manual requests (acme and globex), the on-call types a rate, the
// reconciliation note and both confirmations, then saves a payload edit of
// the acme item. The page that comes back keeps the reason, the note and
// both rates as typed, and globex's confirmation; acme's is asked again,
// since the edit made a new intent of that request (a phrase confirms one
// intent), and the page says so.
func TestFixLeft11ConfirmEditKeepsWhatWasTyped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	var ids []string
	for _, tenant := range []string{"acme", "globex"} {
		id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: tenant, ItemType: "orders.refund", MsgID: "fl11-typed-" + tenant,
			Class: "unknown_effect", Error: "refund timed out", Payload: []byte(`{"x":1}`)})
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": ids, "reason": {"from the list"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	d := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	groups := map[string]string{} // tenant → request id
	d.Find(`[data-testid="replay-group"]`).Each(func(_ int, g *goquery.Selection) {
		id, _ := g.Attr("id")
		tenant := strings.Fields(g.Find(`.card__title`).Text())[0]
		groups[tenant] = id[strings.LastIndex(id, "-")+1:]
	})
	require.Len(t, groups, 2, "one request per tenant")
	require.Equal(t, 1, d.Find(`textarea#reconciliation_note`).Length(), "the page asks for a note")
	for _, id := range groups {
		require.Equal(t, 1, d.Find(`input#f-rate-`+id).Length())
		require.Equal(t, 1, d.Find(`input#f-confirm-`+id).Length(), "a manual request asks for its phrase")
	}

	var form *goquery.Selection
	d.Find(`form[data-testid="payload-edit-form"]`).Each(func(_ int, f *goquery.Selection) {
		if strings.Contains(f.Text(), "fl11-typed-acme") {
			form = f
		}
	})
	require.NotNil(t, form, "the acme item's payload form")
	for _, name := range []string{"replay_reconciliation_note", "replay_rate-" + groups["acme"], "replay_confirm-" + groups["acme"],
		"replay_rate-" + groups["globex"], "replay_confirm-" + groups["globex"]} {
		require.Equal(t, 1, form.Find(`input[name="`+name+`"][data-value-of]`).Length(), "the edit form carries %s", name)
	}
	phrase := func(id string) string { return textOf(d, `[data-testid="phrase-confirm-`+id+`"]`) }
	// What app.js puts into the copies on submit: the page's fields as typed.
	typed := url.Values{"payload": {`{"x":2}`}, "reason": {"amount corrected"},
		"replay_reason": {"typed reason"}, "replay_reconciliation_note": {"checked the ledger: not refunded"},
		"replay_rate-" + groups["acme"]: {"0.5"}, "replay_confirm-" + groups["acme"]: {phrase(groups["acme"])},
		"replay_rate-" + groups["globex"]: {"0.25"}, "replay_confirm-" + groups["globex"]: {phrase(groups["globex"])}}
	resp = b.Do(t, oncall, "POST", form.AttrOr("action", ""), editFormFields(form, typed), nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	page := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	back := page.Doc(t)
	assert.Equal(t, "typed reason", textOf(back, `textarea#reason`))
	assert.Equal(t, "checked the ledger: not refunded", textOf(back, `textarea#reconciliation_note`), "the note typed")
	assert.Equal(t, "0.5", back.Find(`input#f-rate-`+groups["acme"]).AttrOr("value", ""), "acme's rate typed")
	assert.Equal(t, "0.25", back.Find(`input#f-rate-`+groups["globex"]).AttrOr("value", ""), "globex's rate typed")
	assert.Equal(t, phrase(groups["globex"]), back.Find(`input#f-confirm-`+groups["globex"]).AttrOr("value", ""), "globex's confirmation: its intent did not change")
	assert.Empty(t, back.Find(`input#f-confirm-`+groups["acme"]).AttrOr("value", ""), "acme's is asked again: the edit made a new intent")
	assert.Contains(t, back.Text(), "type it again", "and the page says why")
}
