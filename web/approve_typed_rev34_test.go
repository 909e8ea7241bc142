package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev34MistypedApprovalComesBackAsTyped: an approver who mistypes one
// character of a long phrase got the page back with the field empty and
// the same sentence three times (at the top, at the field, under the
// form). The phrase comes back as typed, to correct, and the refusal is
// said at the field and at the top only. A refusal for any other reason
// (the intent moved on) asks for the phrase afresh.
func TestRev34MistypedApprovalComesBackAsTyped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "ledger.delete", "r34-typed", nil)
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(id)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	shown := d.Find(`[data-testid^="phrase-confirm-"]`)
	name := strings.TrimPrefix(shown.Closest("label").AttrOr("for", ""), "f-")
	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"ledger fixed"}, name: {shown.Text()}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	path := resp.Header.Get("Location")

	page := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	phrase := page.Find(`[data-testid="phrase-confirmation"]`).Text()
	intent := page.Find(`[data-testid="approve-form"] input[name="intent"]`).AttrOr("value", "")
	version := page.Find(`[data-testid="approve-form"] input[name="version"]`).AttrOr("value", "")
	typo := strings.Replace(phrase, "r34", "r43", 1)
	require.NotEqual(t, phrase, typo)

	resp = b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {intent}, "version": {version}, "confirmation": {typo}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	back := resp.Doc(t)
	assert.Equal(t, typo, back.Find(`[data-testid="approve-form"] input[name="confirmation"]`).AttrOr("value", ""), "the phrase as typed, to correct")
	refusal := strings.TrimSpace(back.Find(`[data-testid="field-error-confirmation"]`).Text())
	require.NotEmpty(t, refusal, "said at the field")
	assert.Zero(t, back.Find(`[data-testid="field-error-approve"]`).Length(), "not a third time under the form")

	resp = b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {strings.Repeat("0", 64)}, "confirmation": {phrase}}, nil)
	require.GreaterOrEqual(t, resp.Status, 400, resp.Body)
	assert.Empty(t, resp.Doc(t).Find(`[data-testid="approve-form"] input[name="confirmation"]`).AttrOr("value", ""),
		"an intent that moved on asks for the phrase afresh")

	resp = b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {intent}, "version": {version}, "confirmation": {phrase}}, nil)
	assert.Equal(t, http.StatusSeeOther, resp.Status, "the phrase corrected approves: %s", resp.Body)
}
