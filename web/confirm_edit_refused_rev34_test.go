package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev34RefusedEditKeepsTheConfirmationTyped: on the confirm page of a
// manual request the on-call types the phrase, then saves a payload edit
// that is refused (no reason). The page came back with the reason, the
// note and the rate as typed but the phrase field emptied, without a
// word: nothing was edited, so the phrase still confirms what it did. It
// is kept; the edit's refusal is said at the payload.
func TestRev34RefusedEditKeepsTheConfirmationTyped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "r34-refused-edit",
		Class: "unknown_effect", Error: "refund timed out", Payload: []byte(`{"x":1}`)})
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {strconv.FormatInt(id, 10)}, "reason": {"from the list"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	d := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	gid, _ := d.Find(`[data-testid="replay-group"]`).First().Attr("id")
	req := gid[strings.LastIndex(gid, "-")+1:]
	require.Equal(t, 1, d.Find(`input#f-confirm-`+req).Length(), "a manual request asks for its phrase")
	phrase := textOf(d, `[data-testid="phrase-confirm-`+req+`"]`)
	form := d.Find(`form[data-testid="payload-edit-form"]`).First()
	require.Equal(t, 1, form.Length())

	typed := url.Values{"payload": {`{"x":2}`}, "reason": {""},
		"replay_reason": {"typed reason"}, "replay_reconciliation_note": {"checked the ledger: not refunded"},
		"replay_rate-" + req: {"0.5"}, "replay_confirm-" + req: {phrase}}
	refused := b.Do(t, oncall, "POST", form.AttrOr("action", ""), editFormFields(form, typed), nil)
	require.Equal(t, http.StatusUnprocessableEntity, refused.Status, refused.Body)
	back := refused.Doc(t)
	assert.NotEmpty(t, strings.TrimSpace(back.Find(`[data-testid="field-error-payload-`+strconv.FormatInt(id, 10)+`"]`).Text()), "the refusal is said at the payload")
	assert.Equal(t, "typed reason", textOf(back, `textarea#reason`))
	assert.Equal(t, "0.5", back.Find(`input#f-rate-`+req).AttrOr("value", ""))
	assert.Equal(t, phrase, back.Find(`input#f-confirm-`+req).AttrOr("value", ""), "the phrase typed is kept: nothing was edited")
	assert.NotContains(t, back.Text(), "type it again")
}
