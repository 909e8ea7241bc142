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

// TestRevOncall10HeldByAFinishedRequestSaysHowToFreeIt: a replay whose
// publish got no PubAck ends its request done with problems, the item
// "needs reconciliation", and its dead letter stays held by that request
// until an approver settles it. The on-call who selects the dead letter
// again (the group's "Replay all matching…", or its page) gets a confirm
// page that blocks it with "replay request N already holds this dead
// letter, and a dead letter is in one open request at a time; wait for it
// to finish or cancel it" (replaypolicy.JudgeItem, CheckInRequest). Both
// ways it names are shut: the request has finished (done with problems)
// and nobody can cancel it (the requester's page offers no Cancel; only a
// request not yet run is cancelled). The one way forward, an approver of
// the tenant settling the item on request N, is not said; the dead
// letter's own page says it ("It waits for an approver of … to settle
// it"). The screens server shows it for request 8's three items held by
// done-with-problems request 4 (/tmp/rc10/confirm-1024.png, "Skipped or
// blocked").
//
// Severity: medium (a tired on-call waits for something that will never
// happen). Expected: an item held by a finished request whose items wait
// for a person says so (settle it there), not "wait for it to finish or
// cancel it".
func TestRevOncall10HeldByAFinishedRequestSaysHowToFreeIt(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, who := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "rvo10-held", nil)
	held := testfactory.Request(t, b.Replays, who.Actor, []int64{id}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.Pool, held.ID)

	page := b.Do(t, oncall, "GET", fmt.Sprintf("/replay/requests/%d", held.ID), nil, nil).Doc(t)
	require.Contains(t, page.Find(`h1, .page-head`).Text(), fmt.Sprintf("Replay request %d", held.ID))
	require.Zero(t, page.Find(`form[action$="/cancel"]`).Length(), "the finished request cannot be cancelled by its requester")

	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(id)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil)
	require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
	d := confirm.Doc(t)
	why := textOf(d, `[data-testid="replay-skip-reason"]`)
	require.Contains(t, why, fmt.Sprintf("replay request %d already holds this dead letter", held.ID), "the item is blocked as held")
	assert.NotContains(t, why, "wait for it to finish or cancel it",
		"request %d is done with problems and cannot be cancelled; the item waits for an approver to settle it, which the reason does not say", held.ID)
}
