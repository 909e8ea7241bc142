package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb8RequestStopRefusedKeepsTheReason: the request page's
// emergency stop asks "Why stop it" and "Type STOP". A stop typed "stop"
// (or anything but STOP) is refused by JudgeStop (422, the form's error),
// and the page that comes back shows the stop form with an empty reason:
// what the on-call wrote, mid-incident, is gone (requestModel builds
// views.StopForm{URL, Error} and never its Reason). The tenant-wide stop
// (renderStopPage) keeps it; STYLE.md 6: "on failure re-render with
// messages (422)" and nothing typed is lost.
//
// Severity: low. Expected: the refused stop comes back with its reason as
// typed in the stop-reason field.
func TestRevWeb8RequestStopRefusedKeepsTheReason(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "search.index_update", "rw8-stop", nil)}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.Pool, req.ID)

	const why = "INC-4711: the index consumer writes to the wrong cluster, stop before more docs land there"
	resp := b.Do(t, approver, "POST", fmt.Sprintf("/replay/requests/%d/stop", req.ID), url.Values{"reason": {why}, "confirm": {"stop"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	d := resp.Doc(t)
	require.Equal(t, 1, d.Find(`[data-testid="stop-form"]`).Length(), "the stop form comes back")
	assert.Contains(t, d.Find(`[data-testid="stop-form"]`).Text(), "STOP", "the refusal is shown at the form")
	got, _ := d.Find(`[data-testid="stop-form"] input[name="reason"]`).Attr("value")
	assert.Equal(t, why, got, "the reason typed for the refused stop is lost")

	r, err := b.Replays.Request(t.Context(), req.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusDoneWithProblems, r.Status, "nothing was stopped")
}

// TestRevWeb8ReconcileRefusedKeepsTheNote: settling an item whose outcome
// nobody knows asks "What did you check in the target, and what did you
// find?" — the evidence, often pasted. An approver who opened the page
// while the request could still republish clicks "Not applied, republish"
// after a colleague stopped the request: JudgeRepublish refuses (422, the
// form's error), and the reconcile form comes back with an empty note
// input (reconcileForm renders <input name="note"> with no value; the
// model has no field for it). Everything they wrote is lost, though
// "Applied" or "Not applied, leave it" would have taken it.
//
// Severity: low. Expected: the refused form shows the note as typed.
func TestRevWeb8ReconcileRefusedKeepsTheNote(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	colleague, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "search.index_update", "rw8-reconcile", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	page := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	require.Equal(t, 1, page.Find(`[data-testid="reconcile-republish"]`).Length(), "republish is offered when the page is read")

	resp := b.Do(t, colleague, "POST", path+"/stop", url.Values{"reason": {"incident"}, "confirm": {"STOP"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	const note = "searched index prod-eu for doc rw8-reconcile at 02:10Z: absent; the consumer log shows no write for its message id"
	resp = b.Do(t, approver, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id), url.Values{"choice": {"republish"}, "note": {note}}, nil)
	require.Contains(t, []int{http.StatusUnprocessableEntity, http.StatusConflict}, resp.Status, resp.Body)
	d := resp.Doc(t)
	require.Equal(t, 1, d.Find(`[data-testid="reconcile-error"]`).Length(), "the refusal is shown at the form")
	got, _ := d.Find(`[data-testid="reconcile-note"]`).Attr("value")
	assert.Equal(t, note, got, "the note typed for the refused settlement is lost")
}
