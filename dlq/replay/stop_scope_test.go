package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestStopOfOneRequestEndsWhatCanStopSays: a stop of one request ends an
// approved one and one done with problems whose items wait for a person
// (CanStop yes), and refuses, as CanStop says, a draft, one waiting for
// approval (rejected or cancelled instead; the conflict says so) and one
// done without problems.
func TestStopOfOneRequestEndsWhatCanStopSays(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	stop := func(id int64) error {
		return b.replays.Stop(ctx, id, approver1, replay.StopInput{Reason: "incident", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{})
	}
	canStop := func(id int64) bool {
		ok, err := b.replays.CanStop(ctx, id)
		require.NoError(t, err)
		return ok
	}

	approved := b.request(t, []int64{b.seedItem(t, "search.index_update", "one-approved", nil, "{}")}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, approved.Status)
	problems := b.request(t, []int64{b.seedItem(t, "search.index_update", "one-problems", nil, "{}")}, replay.SubmitInput{})
	testfactory.NeedsPerson(t, b.db.Pool, problems.ID)
	for _, id := range []int64{approved.ID, problems.ID} {
		assert.True(t, canStop(id), "request %d", id)
		require.NoError(t, stop(id), "request %d", id)
		r, err := b.replays.Request(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, replay.StatusCancelled, r.Status)
		assert.False(t, canStop(id), "a stopped request %d is stopped once", id)
	}

	pending := b.request(t, []int64{b.seedItem(t, "email.send", "one-pending", nats.Header{dlq.HeaderOperationID: {"op-one"}}, "{}")}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, pending.Status)
	_, drafts := b.draft(t, oncall, b.seedItem(t, "search.index_update", "one-draft", nil, "{}"))
	done := b.request(t, []int64{b.seedItem(t, "search.index_update", "one-done", nil, "{}")}, replay.SubmitInput{})
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, done.ID, replay.StatusDone)
	for _, id := range []int64{pending.ID, drafts[0].ID, done.ID} {
		assert.False(t, canStop(id), "request %d", id)
		err := stop(id)
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "request %d: %v", id, err)
	}
	assert.Contains(t, quarantine.ErrorMessage(stop(pending.ID)), "an approver rejects it, its requester cancels it")
	r, err := b.replays.Request(ctx, pending.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status, "still waits for approval")
}

// TestTenantStopSaysWhatItLeft: a stop of a tenant by a person who may
// stop only some classes stops those and says which requests it left, of
// which classes; what it left runs on, unaudited as stopped.
func TestTenantStopSaysWhatItLeft(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	rebuild := b.request(t, []int64{b.seedItem(t, "search.index_update", "left-rebuild", nil, "{}")}, replay.SubmitInput{})
	var mails []replay.Request
	for i := range 2 {
		mails = append(mails, b.request(t, []int64{b.seedItem(t, "email.send", fmt.Sprint("left-mail-", i), nats.Header{dlq.HeaderOperationID: {fmt.Sprint("op-left-", i)}}, "{}")}, replay.SubmitInput{}))
	}
	grant := b.seedItem(t, "accounts.permission_grant", "left-grant", nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"read"}`)
	grants := b.request(t, []int64{grant}, replay.SubmitInput{})

	res, err := b.replays.StopAll(ctx, "acme", func(c replaypolicy.Class) bool { return c == replaypolicy.Rebuildable }, approver1,
		replay.StopInput{Reason: "incident 9", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Stopped)
	var left []int64
	for _, r := range res.Left {
		left = append(left, r.ID)
	}
	assert.Equal(t, []int64{mails[0].ID, mails[1].ID, grants.ID}, left)
	assert.Equal(t, []replaypolicy.Class{replaypolicy.Revalidate, replaypolicy.SameOperation}, res.LeftClasses())

	r, err := b.replays.Request(ctx, rebuild.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, r.Status)
	for _, id := range left {
		r, err := b.replays.Request(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, replay.StatusPendingApproval, r.Status, "request %d is left as it was", id)
	}
	assert.Equal(t, 1, auditCount(t, b, `action = 'replay.stop'`), "one stop, of the request it stopped")
}
