package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestConfirmNothingToRequestAsksNoReason: the confirm page of a
// selection nothing of which can be requested has no button to request
// it, yet it asked for a reason (required). It asks none; the reason
// typed before a refused submit is still shown, to use again.
func TestConfirmNothingToRequestAsksNoReason(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	r1 := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	r2 := seed(t, b, "acme", "orders.refund", "refund-2", nil)
	confirm := draftPage(t, b, oncall, r1, r2)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	require.Zero(t, d.Find(`[data-testid="replay-submit"]`).Length())
	assert.Zero(t, d.Find(`textarea[name="reason"]`).Length(), "the page asks for a reason for nothing")
	assert.Zero(t, d.Find(`[data-testid="replay-reason"]`).Length())
	assert.Equal(t, "nothing to replay", textOf(d, `[data-testid="replay-group-count"]`), "the group's head says so, not \"0 to replay\"")

	resp := b.Do(t, oncall, "POST", confirm, pageForm(d, url.Values{"reason": {"payments gateway back"}}), nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status)
	back := resp.Doc(t)
	assert.Zero(t, back.Find(`textarea[name="reason"]`).Length(), "the 422 page asks for a reason for nothing")
	assert.Equal(t, "payments gateway back", textOf(back, `[data-testid="replay-reason"]`), "the reason typed is shown")
}
