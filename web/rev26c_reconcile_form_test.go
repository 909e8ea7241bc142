package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevExec26ReconcileFormThatNamesNoEpisodeSettlesNothing: a reconcile
// form whose episode field is not a number (a form altered in the browser,
// a proxy that mangled it) says nothing of which attempt the person
// checked: it settles nothing (422, the item still waits for a person, no
// reconciled row), rather than being read as "whichever attempt it waits
// about now", which may be a later one the person never saw.
func TestRevExec26ReconcileFormThatNamesNoEpisodeSettlesNothing(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, requester := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "search.index_update", "rev26c-episode-garbled", nil)
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{id}, replay.SubmitInput{Reason: "reindex"})
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	action, form := reconcileFormOf(t, b.Do(t, approver, "GET", path, nil, nil).Doc(t), id)
	require.NotEmpty(t, form.Get("settled"), "the form says which attempt its page showed")
	for _, bad := range []string{"first", "-1"} {
		form.Set("settled", bad)
		form.Set("choice", "applied")
		form.Set("note", "the index holds doc rev26c-episode-garbled")
		resp := b.Do(t, approver, "POST", action, form, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "episode %q", bad)
		var state string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT state FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&state))
		assert.Equal(t, "needs_reconciliation", state, "episode %q: the item still waits for a person", bad)
	}
	assert.Zero(t, b.AuditCount(t, "outcome = 'ok' AND action = 'replay.item.reconciled'"), "nothing settled")
}
