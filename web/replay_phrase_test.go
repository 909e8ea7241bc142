package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestConfirmationPhraseShownAsTyped: a manual item whose message id holds
// a run of spaces ("ref  42", kept exactly by ingest). The confirm page
// and the approve form show the phrase, in an element that keeps its
// spaces (.phrase), as exactly the text that must be typed, and typing
// what they show confirms; the refusal of a phrase typed otherwise names
// it in an element that keeps its spaces too. The stylesheet keeps them.
func TestConfirmationPhraseShownAsTyped(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "ledger.delete", "ref  42", nil)
	const want = `REPLAY "ref\x20\x2042"`

	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(id)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	shown := d.Find(`[data-testid^="phrase-confirm-"]`)
	require.Equal(t, 1, shown.Length(), "the confirm page shows the phrase")
	assert.Equal(t, want, shown.Text(), "the confirm page shows the phrase as it is typed")
	assert.True(t, shown.HasClass("phrase"), "in an element that keeps its spaces")
	field, ok := shown.Closest("label").Attr("for")
	require.True(t, ok)
	name := strings.TrimPrefix(field, "f-")

	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"ledger fixed"}, name: {"REPLAY ref 42"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "the phrase as a collapsing page would show it is refused")
	refusal := resp.Doc(t).Find(`[data-testid="field-error-` + name + `"]`) // beside the field it refuses
	assert.Contains(t, refusal.Text(), `"`+want+`"`, "the refusal names the phrase as it is typed")
	assert.True(t, refusal.HasClass("phrase"), "in an element that keeps its spaces")

	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"ledger fixed"}, name: {shown.Text()}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, "typing what the page shows confirms: %s", resp.Body)
	path := resp.Header.Get("Location")
	reqID, err := requestIDOf(path)
	require.NoError(t, err)
	phrase, err := b.Replays.ConfirmationFor(ctx, reqID)
	require.NoError(t, err)
	require.Equal(t, want, phrase)

	page := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	shown = page.Find(`[data-testid="phrase-confirmation"]`)
	assert.Equal(t, phrase, shown.Text(), "the approve form shows the phrase as it is typed")
	assert.True(t, shown.HasClass("phrase"), "in an element that keeps its spaces")
	intent, _ := page.Find(`[data-testid="approve-form"] input[name="intent"]`).Attr("value")
	version := page.Find(`[data-testid="approve-form"] input[name="version"]`).AttrOr("value", "")

	resp = b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {intent}, "version": {version}, "confirmation": {"REPLAY ref 42"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	refusal = resp.Doc(t).Find(`[data-testid="field-error-confirmation"]`)
	assert.Contains(t, refusal.Text(), `"`+phrase+`"`, "the refusal names the phrase as it is typed")
	assert.True(t, refusal.HasClass("phrase"), "in an element that keeps its spaces")

	resp = b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {intent}, "version": {version}, "confirmation": {shown.Text()}}, nil)
	assert.Equal(t, http.StatusSeeOther, resp.Status, "typing what the form shows approves: %s", resp.Body)
	after := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	assert.Equal(t, "1 of 2", textOf(after, `[data-testid="replay-approval-count"]`), "the approval counts")

	css, ok := page.Find(`link[rel="stylesheet"]`).Attr("href")
	require.True(t, ok)
	sheet := b.Do(t, approver, "GET", css, nil, nil)
	require.Equal(t, http.StatusOK, sheet.Status)
	assert.Contains(t, sheet.Body, ".phrase {\n\twhite-space: pre-wrap;\n}", "the stylesheet keeps a phrase's spaces")
}

// requestIDOf reads the request id from its page's path.
func requestIDOf(path string) (int64, error) {
	var id int64
	_, err := fmt.Sscanf(path, "/replay/requests/%d", &id)
	return id, err
}
