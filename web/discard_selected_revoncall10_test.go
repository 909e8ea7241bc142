package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall10DiscardConfirmationOffersOnlyWhatItWillDo: the on-call
// ticks three emails of a group on the list (two of them "replay
// requested": in a request waiting for approval) and presses Discard…
// with a reason. The confirmation page reads "Discard 3 dead letters?",
// lists the two with their status "replay requested", and offers
// "Discard 3 dead letters". Confirmed as offered, it is refused whole
// (dlq.Close is all or nothing) and the list comes back with "Nothing
// changed: 2 of the 3 selected are not open any more (or not yours);
// nothing was changed." — "not open any more" is untrue (the page the
// on-call just confirmed showed them replay requested), the open one was
// not discarded either, and the reason typed is gone. The confirmation
// offered an action it knew it would refuse. Seen on the screens server
// with mail-msg-0..2.
//
// Severity: medium. Expected: the confirmation offers what it will do:
// it leaves out (and names, with the request holding them) what a replay
// request holds, as "Discard all matching" already leaves it out, so that
// confirming it as offered discards the open one.
func TestRevOncall10DiscardConfirmationOffersOnlyWhatItWillDo(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, who := b.SignIn(t, "acme:oncall")
	var letters []testfactory.Letter
	for i := range 3 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: fmt.Sprintf("rvo10-sel-%d", i),
			OperationID: fmt.Sprintf("rvo10-selop-%d", i), Error: "smtp 451 try again later", Class: "transient"})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	held := testfactory.Request(t, b.Replays, who.Actor, ids[:2], replay.SubmitInput{Reason: "smtp relay fixed"})
	require.Equal(t, replay.StatusPendingApproval, held.Status)

	form := url.Values{"reason": {"these must never be sent"}, "return_to": {"/deadletters"}}
	for _, id := range ids {
		form.Add("id", fmt.Sprint(id))
	}
	resp := b.Do(t, oncall, "POST", "/deadletters/discard", form, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	confirm := d.Find(`form[data-testid="confirm-form"]`)
	require.Equal(t, 1, confirm.Length(), "a confirmation page")

	// Confirm exactly as the page offers it.
	offered := url.Values{}
	confirm.Find(`input[type="hidden"]`).Each(func(_ int, s *goquery.Selection) {
		offered.Add(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	offered.Set("reason", confirm.Find(`[name="reason"]`).Text()+confirm.Find(`input[name="reason"]`).AttrOr("value", ""))
	require.NotEmpty(t, offered.Get("reason"), "the reason typed is on the confirmation")
	done := b.Do(t, oncall, "POST", "/deadletters/discard", offered, nil)
	require.Equal(t, http.StatusSeeOther, done.Status, done.Body)
	list := b.Do(t, oncall, "GET", done.Header.Get("Location"), nil, nil).Doc(t)

	var status string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status FROM dead_letters WHERE id = $1`, ids[2]).Scan(&status))
	assert.Equal(t, "discarded", status,
		"the confirmation offered 'Discard %d dead letters' (two held by pending request %d) and confirming it as offered discarded nothing: %q",
		confirm.Find(`[data-testid="confirm-item"]`).Length(), held.ID, textOf(list, `[data-testid="flash"]`))
}
