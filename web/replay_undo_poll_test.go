package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestPolicyCardSaysWhyStricter: a search.index_update dead letter whose
// error class is "policy" replays as revalidate; the dead letter page's
// policy card names that class and says why it is stricter than its rule.
func TestPolicyCardSaysWhyStricter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	raised := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "card-raised",
		Class: "policy", Principal: "user:7", Error: "not allowed"})
	plain := seed(t, b, "acme", "search.index_update", "card-plain", nil)

	d := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", raised), nil, nil).Doc(t)
	assert.Equal(t, "revalidate", byID(d, "dl-policy-class").Text())
	assert.Equal(t, `Stricter than the rebuildable its rule gives: its error class "policy" replays at least as revalidate.`,
		textOf(d, `[data-testid="dl-policy-raised"]`))
	d = b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", plain), nil, nil).Doc(t)
	assert.Equal(t, "rebuildable", byID(d, "dl-policy-class").Text())
	assert.Zero(t, d.Find(`[data-testid="dl-policy-raised"]`).Length(), "nothing raised it")
}

// TestUndoInADraftSaysNothingOfApprovals: a draft has no approvals, so
// neither its undo hint nor the flash after an undo speaks of them.
func TestUndoInADraftSaysNothingOfApprovals(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "draft-undo", nil)
	confirm := draftPage(t, b, oncall, id)
	action, ok := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t).Find(`form[data-testid="payload-edit-form"]`).Attr("action")
	require.True(t, ok)
	require.Equal(t, http.StatusSeeOther, b.Do(t, oncall, "POST", action, url.Values{"payload": {`{"x":2}`}, "reason": {"v2"}}, nil).Status)

	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	hint := textOf(d, `[data-testid="payload-undo-hint"]`)
	require.NotEmpty(t, hint)
	assert.NotContains(t, hint, "approval")
	resp := b.Do(t, oncall, "POST", action, url.Values{"reason": {"back"}, "undo": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	flash := textOf(b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil).Doc(t), `[data-testid="flash"]`)
	assert.Equal(t, "Edit undone: the item sends the payload received again.", flash)
}

// TestUndoRefusedIsNotOffered: once its request waits for approval, the
// edit a schema_invalid item needs cannot be undone; its form offers no
// Undo edit and says why.
func TestUndoRefusedIsNotOffered(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "undo-refused",
		Class: "schema_invalid", Error: "bad field", Payload: []byte(`{"doc":"bad"}`)})
	confirm := draftPage(t, b, oncall, id)
	action, _ := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t).Find(`form[data-testid="payload-edit-form"]`).Attr("action")
	require.Equal(t, http.StatusSeeOther, b.Do(t, oncall, "POST", action, url.Values{"payload": {`{"doc":"good"}`}, "reason": {"fix"}}, nil).Status)
	resp := b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"reindex"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	form := b.Do(t, oncall, "GET", strings.SplitN(resp.Header.Get("Location"), "?", 2)[0], nil, nil).Doc(t).Find(`form[data-testid="payload-edit-form"]`)
	assert.Zero(t, form.Find(`[data-testid="payload-undo"]`).Length())
	assert.Contains(t, text(form.Find(`[data-testid="payload-undo-refused"]`)), "This edit cannot be undone while the request waits for approval. Without its edit")
}

// TestPollReloadsOnAFirstApproval: a request that needs two approvers
// gets its first; the second approver's open page, whose status is still
// pending approval, is reloaded by its poll. A poll of a page that shows
// the request as it is reloads nothing.
func TestPollReloadsOnAFirstApproval(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignIn(t, "acme:oncall")
	first, _ := b.SignIn(t, "acme:approver")
	second, _ := b.SignIn(t, "acme:approver")
	refund := testfactory.Request(t, b.Replays, requester.Actor, []int64{seed(t, b, "acme", "orders.refund", "poll-refund", nil)},
		replay.SubmitInput{Reason: "the refund timed out"})
	phrase, err := b.Replays.ConfirmationFor(t.Context(), refund.ID)
	require.NoError(t, err)
	path := fmt.Sprintf("/replay/requests/%d", refund.ID)
	poll := func(c *http.Client) string {
		t.Helper()
		u, ok := b.Do(t, c, "GET", path, nil, nil).Doc(t).Find(`[data-testid="replay-progress"]`).Attr("hx-get")
		require.True(t, ok, "the page polls")
		return u
	}
	hx := map[string]string{"HX-Request": "true", "Quarantine-Poll": "1"}
	before := poll(second)
	assert.Empty(t, b.Do(t, second, "GET", before, nil, hx).Header.Get("HX-Refresh"), "nothing changed")

	resp := b.Do(t, first, "POST", path+"/approve", url.Values{"intent": {refund.IntentHex()}, "version": {strconv.Itoa(refund.Version)}, "confirmation": {phrase}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	got := b.Do(t, second, "GET", before, nil, hx)
	require.Equal(t, http.StatusOK, got.Status, got.Body)
	assert.Equal(t, "true", got.Header.Get("HX-Refresh"), "1 of 2: the page is reloaded")
	assert.Empty(t, b.Do(t, second, "GET", poll(second), nil, hx).Header.Get("HX-Refresh"), "the reloaded page is current")
}

// TestGroupTextLimitsCountBytes: the group's note and owner are bounded in
// bytes (the table counts octets); a refusal says so, and how many
// characters the text has when they differ.
func TestGroupTextLimitsCountBytes(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "bytes-1"})
	var group string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT fingerprint FROM dead_letters WHERE id = $1`, id).Scan(&group))
	for _, tc := range []struct{ name, path, field, value, want string }{
		{"NoteWide", "/groups/note", "note", strings.Repeat("再", 700),
			"This note is 2,100 bytes; 2,000 at most. It has 700 characters, and a character outside plain ASCII takes 2 to 4 bytes."},
		{"NoteASCII", "/groups/note", "note", strings.Repeat("n", 2001), "This note is 2,001 characters; 2,000 at most."},
		{"OwnerWide", "/groups/owner", "owner", strings.Repeat("é", 161),
			"This owner is 322 bytes; 320 at most. It has 161 characters, and a character outside plain ASCII takes 2 to 4 bytes."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"tenant": {"acme"}, "group": {group}, tc.field: {tc.value}, "return_to": {"/groups"}}
			resp := b.Do(t, c, http.MethodPost, tc.path, form, nil)
			require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
			assert.Equal(t, tc.want, textOf(resp.Doc(t), `[data-testid="field-error-`+tc.field+`"]`))
		})
	}
	form := url.Values{"tenant": {"acme"}, "group": {group}, "note": {strings.Repeat("再", 600)}, "return_to": {"/groups"}}
	assert.Equal(t, http.StatusSeeOther, b.Do(t, c, http.MethodPost, "/groups/note", form, nil).Status, "1,800 bytes are kept")
}

// TestDashboardRetentionSaysWhoseTerms: while this console's retention
// terms are the active ones the dashboard summarises them and says
// nothing more; once another process made others active, it summarises
// those and says they are not this console's own.
func TestDashboardRetentionSaysWhoseTerms(t *testing.T) {
	t.Parallel()
	b, _ := startWithPolicy(t, shippedPolicyAnd(t, ""))
	oncall, _ := b.SignIn(t, "acme:oncall")
	d := b.Do(t, oncall, "GET", "/", nil, nil).Doc(t)
	assert.NotContains(t, textOf(d, `[data-testid="retention-summary"]`), "rule")
	assert.Zero(t, d.Find(`[data-testid="retention-not-own"]`).Length())

	other, err := replaypolicy.Parse("other.toml", shippedPolicyAnd(t, "\n[[retention.rule]]\ntenant = \"acme\"\nclosed = \"2d\"\n"))
	require.NoError(t, err)
	require.NoError(t, replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return other }}).ActivatePolicy(context.Background(), "console-other-1"))
	d = b.Do(t, oncall, "GET", "/", nil, nil).Doc(t)
	assert.Contains(t, textOf(d, `[data-testid="retention-summary"]`), "; 1 rule for some tenants or item types")
	assert.Contains(t, textOf(d, `[data-testid="retention-not-own"]`), "this console's own are not the active ones")
}
