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

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestCloseSelectionLeavesOutWhatARequestHolds: a selection of three,
// two of them held by a pending replay request. Confirmed at once (as
// app.js's dialog posts it), the discard is refused whole and comes back
// as its confirmation (409): the reason typed kept, a message that says
// what is true, the open one offered, the two named with the request that
// holds them. A selection of only held ones offers nothing to confirm.
func TestCloseSelectionLeavesOutWhatARequestHolds(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, who := b.SignIn(t, "acme:oncall")
	var letters []testfactory.Letter
	for i := range 3 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: fmt.Sprintf("clo-%d", i),
			OperationID: fmt.Sprintf("clo-op-%d", i), Error: "smtp 451 try again later", Class: "transient"})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	held := testfactory.Request(t, b.Replays, who.Actor, ids[:2], replay.SubmitInput{Reason: "smtp relay fixed"})
	status := func(id int64) string {
		var s string
		require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&s))
		return s
	}

	t.Run("ConfirmedComesBack", func(t *testing.T) {
		const reason = "these must never be sent"
		form := url.Values{"reason": {reason}, "return_to": {"/deadletters"}, "confirmed": {"1"}}
		for _, id := range ids {
			form.Add("id", fmt.Sprint(id))
		}
		resp := b.Do(t, oncall, "POST", "/deadletters/discard", form, nil)
		require.Equal(t, http.StatusConflict, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Equal(t, "Nothing changed: 2 of the 3 dead letters you confirmed cannot be discarded now; why is below. Confirm again to discard the other one.",
			textOf(d, `[data-testid="confirm-error"]`))
		assert.Equal(t, reason, textOf(d, `[data-testid="confirm-reason"]`), "the reason typed is kept")
		assert.Equal(t, 1, d.Find(`[data-testid="confirm-item"]`).Length())
		assert.Equal(t, []string{fmt.Sprint(ids[2])}, d.Find(`form[data-testid="confirm-form"] input[name="id"]`).Map(func(_ int, s *goquery.Selection) string {
			return s.AttrOr("value", "")
		}), "only the open one is offered")
		assert.Equal(t, fmt.Sprintf("/replay/requests/%d", held.ID), d.Find(`[data-testid="left-out-request"]`).AttrOr("href", ""))
		assert.Equal(t, 2, d.Find(`[data-testid="left-out-item"]`).Length(), "the two held are named")
		assert.Contains(t, strings.Join(strings.Fields(textOf(d, `[data-testid="confirm-left-out"]`)), " "),
			"2 dead letters in replay request #"+fmt.Sprint(held.ID)+" (pending approval), which may still send them")
		assert.Equal(t, "quarantined", status(ids[2]), "nothing changed")
	})

	t.Run("NothingToConfirm", func(t *testing.T) {
		form := url.Values{"reason": {"x"}, "id": {fmt.Sprint(ids[0]), fmt.Sprint(ids[1])}}
		resp := b.Do(t, oncall, "POST", "/deadletters/discard", form, nil)
		require.Equal(t, http.StatusConflict, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Equal(t, "Nothing to discard", textOf(d, `[data-testid="confirm-title"]`))
		assert.Zero(t, d.Find(`[data-testid="confirm-submit"]`).Length(), "no button for nothing")
		assert.Equal(t, 1, d.Find(`[data-testid="left-out-group"]`).Length())
	})
}
