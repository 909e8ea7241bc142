package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev37VoidedDraftStaysItsRequesters: a request never submitted is
// its requester's alone, whatever its status now. A draft the sweeper
// voided (ExpireDrafts), or a submit voided because it left nothing of
// it, used to be shown to every reader of its tenant, with the payload
// its requester typed into an item edit and the edit's reason, because
// only the status draft was hidden. Voided, it stays not found for anyone
// else (its page, its item's payload download, the replays page under
// any status filter, the dead letter's page), and its requester still
// sees it. A request that was submitted and then cancelled is everyone's
// to read, as before.
func TestRev37VoidedDraftStaysItsRequesters(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	requesterClient, requester := b.SignIn(t, "acme:oncall")
	viewer, _ := b.SignIn(t, "acme:viewer")
	approver, _ := b.SignIn(t, "acme:approver")

	const secret = "draft-secret-9931"
	draftDL := seed(t, b, "acme", "orders.refund", "rev37-draft", nil)
	_, drafts := testfactory.Draft(t, b.Replays, requester.Actor, draftDL)
	require.Len(t, drafts, 1)
	draft := drafts[0]
	require.NoError(t, b.Replays.EditPayload(ctx, draft.ID, firstItem(t, b, draft.ID), requester.Actor,
		replay.PayloadEdit{Payload: []byte(`{"typed":"` + secret + `"}`), Reason: "trying something"}, quarantine.RequestMeta{}))
	_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE replay_requests SET created_at = created_at - interval '2 days' WHERE id = $1`, draft.ID)
	require.NoError(t, err)
	_, err = b.Replays.ExpireDrafts(ctx)
	require.NoError(t, err)
	expired, err := b.Replays.Request(ctx, draft.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusVoid, expired.Status, "the sweeper voided the draft")
	require.Nil(t, expired.SubmittedAt, "it was never submitted")

	// An email without an operation id is left out at submit, which voids
	// the request nothing is left of: emptied, it was never submitted.
	emptiedDL := seed(t, b, "acme", "email.send", "rev37-emptied", nil)
	emptied := testfactory.Request(t, b.Replays, requester.Actor, []int64{emptiedDL}, replay.SubmitInput{})
	emptied, err = b.Replays.Request(ctx, emptied.ID)
	require.NoError(t, err)
	require.Equal(t, replay.StatusVoid, emptied.Status, "the submit voided the draft it left nothing of")
	require.Nil(t, emptied.SubmittedAt, "it was never submitted")

	cancelledDL := seed(t, b, "acme", "email.send", "rev37-cancelled", opHeader("op-rev37-cancelled"))
	cancelled := testfactory.Request(t, b.Replays, requester.Actor, []int64{cancelledDL}, replay.SubmitInput{})
	require.NoError(t, b.Replays.Cancel(ctx, cancelled.ID, requester.Actor, "not needed after all", quarantine.RequestMeta{}))

	draftPage := fmt.Sprintf("/replay/requests/%d", draft.ID)
	draftLink := fmt.Sprintf(`href="%s"`, draftPage)

	t.Run("NotFoundForOthers", func(t *testing.T) {
		deniedBefore := b.AuditCount(t, `action = 'authz.denied'`)
		for name, client := range map[string]*http.Client{"viewer": viewer, "approver": approver} {
			page := b.Do(t, client, "GET", draftPage, nil, nil)
			assert.Equal(t, http.StatusNotFound, page.Status, "%s: the page of someone else's expired draft", name)
			assert.False(t, strings.Contains(page.Body, secret), "%s: the payload its requester typed is shown", name)
			assert.False(t, strings.Contains(page.Body, "trying something"), "%s: the edit's reason is shown", name)
		}
		emptiedPage := b.Do(t, viewer, "GET", fmt.Sprintf("/replay/requests/%d", emptied.ID), nil, nil)
		assert.Equal(t, http.StatusNotFound, emptiedPage.Status, "the page of someone else's draft voided at submit")
		download := b.Do(t, approver, "GET", fmt.Sprintf("%s/items/%d/payload", draftPage, draftDL), nil, nil)
		assert.Equal(t, http.StatusNotFound, download.Status, "the download of its item's payload")
		assert.False(t, strings.Contains(download.Body, secret), "the payload its requester typed is downloaded")
		assert.Equal(t, deniedBefore+4, b.AuditCount(t, `action = 'authz.denied'`), "each refusal audited")
	})

	t.Run("NotListedForOthers", func(t *testing.T) {
		all := listedIDs(b.Do(t, viewer, "GET", "/replay/requests", nil, nil).Doc(t))
		require.Contains(t, all, cancelled.ID, "a submitted request is listed")
		void := listedIDs(b.Do(t, viewer, "GET", "/replay/requests?status=void", nil, nil).Doc(t))
		for _, id := range []int64{draft.ID, emptied.ID} {
			assert.NotContains(t, all, id, "every status")
			assert.NotContains(t, void, id, "status void")
		}
		dl := b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d", draftDL), nil, nil)
		require.Equal(t, http.StatusOK, dl.Status)
		assert.False(t, strings.Contains(dl.Body, draftLink), "the dead letter's page names it")
	})

	t.Run("RequesterStillSeesIt", func(t *testing.T) {
		page := b.Do(t, requesterClient, "GET", draftPage, nil, nil)
		require.Equal(t, http.StatusOK, page.Status)
		assert.True(t, strings.Contains(page.Body, "trying something"), "the edit's reason is on its requester's page")
		assert.Contains(t, listedIDs(b.Do(t, requesterClient, "GET", "/replay/requests", nil, nil).Doc(t)), draft.ID)
		assert.Contains(t, listedIDs(b.Do(t, requesterClient, "GET", "/replay/requests?status=void", nil, nil).Doc(t)), draft.ID)
	})

	t.Run("SubmittedThenCancelledStaysVisible", func(t *testing.T) {
		page := fmt.Sprintf("/replay/requests/%d", cancelled.ID)
		assert.Equal(t, http.StatusOK, b.Do(t, viewer, "GET", page, nil, nil).Status)
		assert.Equal(t, http.StatusOK, b.Do(t, approver, "GET", fmt.Sprintf("%s/items/%d/payload", page, cancelledDL), nil, nil).Status)
		assert.Contains(t, listedIDs(b.Do(t, viewer, "GET", "/replay/requests?status=cancelled", nil, nil).Doc(t)), cancelled.ID)
		dl := b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d", cancelledDL), nil, nil)
		require.Equal(t, http.StatusOK, dl.Status)
		assert.True(t, strings.Contains(dl.Body, fmt.Sprintf(`href="%s"`, page)), "the dead letter's page names it")
	})
}
