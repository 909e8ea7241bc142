package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// editFormFields are the fields payload form f sends as the browser sends
// it (its inputs and textareas by name), with set applied over them: what
// the person typed since the page was read.
func editFormFields(f *goquery.Selection, set url.Values) url.Values {
	form := url.Values{}
	f.Find(`input[name], textarea[name]`).Each(func(_ int, s *goquery.Selection) {
		v := s.AttrOr("value", "")
		if goquery.NodeName(s) == "textarea" {
			v = s.Text()
		}
		form.Set(s.AttrOr("name", ""), v)
	})
	for k, v := range set {
		form[k] = v
	}
	return form
}

// TestConfirmEditSendsTheReasonTyped: the confirm page's replay reason
// comes from the list ("from the list"); the on-call types another into
// it, then saves a payload edit from the same page. The edit form sends
// the replay reason as the page's reason field holds it when the form is
// sent (a field tied to it, which app.js fills from it on submit), so the
// page that comes back holds what was typed: after a saved edit, after an
// edit refused (422, no reason for the edit), and when the reason was
// emptied (not the one the page was first read with, still in the form's
// address).
func TestConfirmEditSendsTheReasonTyped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "doc-typed", nil)
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(id)}, "reason": {"from the list"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	d := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
	require.Equal(t, "from the list", textOf(d, `textarea#reason`))

	form := d.Find(`form[data-testid="payload-edit-form"]`)
	require.Equal(t, 1, form.Length())
	carried := form.Find(`input[name="replay_reason"]`)
	require.Equal(t, 1, carried.Length(), "the edit form sends the replay reason")
	assert.Equal(t, "reason", carried.AttrOr("data-value-of", ""), "as the page's reason field holds it when sent")
	assert.Equal(t, "from the list", carried.AttrOr("value", ""), "without JavaScript: as the page was read")
	action := form.AttrOr("action", "")

	t.Run("Refused", func(t *testing.T) {
		resp := b.Do(t, oncall, "POST", action, editFormFields(form, url.Values{"payload": {`{"x":2}`}, "reason": {""},
			"replay_reason": {"typed before the edit"}}), nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
		back := resp.Doc(t)
		assert.Equal(t, "typed before the edit", textOf(back, `textarea#reason`), "the page comes back with the reason as typed")
		assert.Equal(t, "typed before the edit", back.Find(`form[data-testid="payload-edit-form"] input[name="replay_reason"]`).AttrOr("value", ""),
			"and its edit form sends it")
	})
	t.Run("Saved", func(t *testing.T) {
		resp := b.Do(t, oncall, "POST", action, editFormFields(form, url.Values{"payload": {`{"x":2}`}, "reason": {"v2"},
			"replay_reason": {"typed before the edit"}}), nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		back := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
		assert.Equal(t, "typed before the edit", textOf(back, `textarea#reason`), "the reason typed, not the list's")
	})
	t.Run("Emptied", func(t *testing.T) {
		resp := b.Do(t, oncall, "POST", action, editFormFields(form, url.Values{"payload": {`{"x":3}`}, "reason": {"v3"},
			"replay_reason": {""}}), nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		back := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
		assert.Empty(t, textOf(back, `textarea#reason`), "emptied, not the list's reason back")
	})
}
