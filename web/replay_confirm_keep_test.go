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

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestConfirmKeepsTheTypedConfirmation: a manual replay's confirm page
// asks to type its phrase; the on-call types it and forgets the reason.
// The page comes back (422) for the reason alone: what the phrase
// confirms did not change, so the phrase stays typed, and the submit with
// the reason filled in goes.
func TestConfirmKeepsTheTypedConfirmation(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	confirm := draftPage(t, b, oncall, id)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	in := d.Find(`input[name^="confirm-"]`)
	name, ok := in.Attr("name")
	require.True(t, ok, "a manual replay asks for a typed confirmation")
	phrase := textOf(d, `[data-testid="phrase-`+name+`"]`)
	require.Equal(t, "REPLAY refund-1", phrase)

	resp := b.Do(t, oncall, "POST", confirm, url.Values{name: {phrase}, "reason": {""}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	back := resp.Doc(t)
	assert.Equal(t, phrase, back.Find(`input[name="`+name+`"]`).AttrOr("value", ""),
		"the phrase typed is emptied though the 422 was for the reason alone")
	_, hidden := back.Find(`#f-` + name + `-error`).Attr("hidden")
	assert.True(t, hidden, "the kept phrase has a message: %q", textOf(back, `#f-`+name+`-error`))

	// The browser sends the form as the page shows it, the reason now filled in.
	form := url.Values{"reason": {"payments gateway back"}}
	back.Find(`[data-testid="replay-confirm-form"] input`).Each(func(_ int, s *goquery.Selection) {
		form.Set(s.AttrOr("name", ""), s.AttrOr("value", ""))
	})
	resp = b.Do(t, oncall, "POST", confirm, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	r, err := b.Replays.Request(t.Context(), mustID(t, resp.Header.Get("Location")))
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status)
	assert.Equal(t, phrase, r.TypedConfirmation)
}

// TestPayloadEditKeepsTheEditOnTheRequestPage: the requester of a
// submitted request (not yet approved) edits a payload on its page and is
// refused (422: no reason; then a payload over the size the page edits,
// with a reason). The page comes back with the payload and the reason as
// typed, not the stored payload and an empty reason.
func TestPayloadEditKeepsTheEditOnTheRequestPage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "accounts.permission_grant", "grant-9", map[string][]string{dlq.HeaderPrincipal: {"user:9"}})
	reqPath := requestReplay(t, b, oncall, id)
	action := fmt.Sprintf("%s/items/%d/payload", reqPath, id)

	edited := `{"x":2,"fixed":"by hand"}`
	resp := b.Do(t, oncall, "POST", action, url.Values{"payload": {edited}, "reason": {""}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	form := resp.Doc(t).Find(`[data-testid="payload-edit-form"]`)
	assert.Equal(t, edited, strings.TrimSpace(form.Find(`textarea[name="payload"]`).Text()), "the payload typed is lost")

	big := `{"x":"` + strings.Repeat("y", replay.MaxEditablePayload) + `"}`
	resp = b.Do(t, oncall, "POST", action, url.Values{"payload": {big}, "reason": {"x must be y"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	form = resp.Doc(t).Find(`[data-testid="payload-edit-form"]`)
	assert.Equal(t, "x must be y", form.Find(`input[name="reason"]`).AttrOr("value", ""), "the reason typed is lost")
	assert.Equal(t, big, strings.TrimSpace(form.Find(`textarea[name="payload"]`).Text()), "the payload typed is lost")
}
