package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// gateWaitsWhile makes w's next publish gate wait for request id's row
// (another transaction holds it: another worker's gate or record of the
// request, a finish, a person's action on it) and, while the gate's
// UPDATE of the request waits, runs change (committed), then lets the
// row go. The gate's UPDATE re-checks the request's own columns on the
// row it finally locks, but its policyStillActive and authorityStamp
// subqueries read other tables in the statement's snapshot, taken before
// change committed.
func gateWaitsWhile(t *testing.T, b *replayBundle, w *replay.Worker, id int64, change func()) <-chan struct{} {
	t.Helper()
	ctx := context.Background()
	done := make(chan struct{})
	w.AfterJudge(func() {
		w.AfterJudge(nil)
		hold, err := b.db.Pool.Begin(ctx)
		require.NoError(t, err)
		// As another worker's gate of the request reserves its slots.
		_, err = hold.Exec(ctx, `UPDATE replay_requests SET rate_next = greatest(rate_next, clock_timestamp()) WHERE id = $1`, id)
		require.NoError(t, err)
		go func() {
			defer close(done)
			defer func() { _ = hold.Rollback(ctx) }()
			b.waitLockWaiters(t, "the publish gate waits for the request's row", 1)
			change()
			require.NoError(t, hold.Commit(ctx))
		}()
	})
	return done
}

// TestRevLock18GatePublishesUnderPolicyActivatedWhileItWaited: defect. The
// publish gate (gateJobs) reserves its slots with one UPDATE of the
// request whose WHERE holds policyStillActive, a subquery of
// replay_policy_active. When the gate has to wait for the request's row,
// PostgreSQL re-checks the row's own columns on its new version but reads
// replay_policy_active in the statement's snapshot: a policy activated
// while the gate waited is not seen, and the job is published under rules
// no longer in force, after the activation committed.
func TestRevLock18GatePublishesUnderPolicyActivatedWhileItWaited(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	require.NoError(t, b.replays.ActivatePolicy(ctx, "first"))
	id := b.seedItem(t, "search.index_update", "revlock18-policy", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	newer := policyAt(t, 400)
	require.NotEqual(t, b.policy.Load().Version(), newer.Version())
	second := replay.New(b.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return newer }, Subjects: testSubjects(t)})

	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
	done := gateWaitsWhile(t, b, w, req.ID, func() {
		require.NoError(t, second.ActivatePolicy(ctx, "second"))
	})
	n, err := w.RunOnce(ctx)
	<-done
	require.NoError(t, err)
	require.Equal(t, 1, n)
	j := b.job(t, req.ID, id)
	t.Logf("job after the claim: %s (%s)", j.State, j.Result)
	assert.Zero(t, b.publishedAs(t, "revlock18-policy"),
		"published by a gate that reserved its slot after another policy was activated (committed while the gate waited for the request's row)")
	assert.Equal(t, "pending", j.State)
}

// TestRevLock18GatePublishesForRequesterRevokedWhileItWaited: defect. The
// same gate checks that the rights of the request's people rest on what
// the claim judged (authorityStamp = the claim's stamp), a subquery of
// access_version, replay_approvals and user_directory. An admin who signs
// the requester out everywhere (RevokeSessions: the directory entry
// revoked, "what they requested or approved is not published") while the
// gate waits for the request's row is not seen by it: the job is published
// after the revocation committed.
func TestRevLock18GatePublishesForRequesterRevokedWhileItWaited(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	msgID := "revlock18-rights"
	id := b.seedItem(t, "email.send", msgID, nats.Header{dlq.HeaderOperationID: {"op-" + msgID}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)

	admin := authz.User{Actor: quarantine.Actor{Issuer: "https://idp.example", Subject: "admin"}}
	w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
	done := gateWaitsWhile(t, b, w, req.ID, func() {
		_, err := authz.RevokeSessions(ctx, b.db.Pool, oncall.Issuer, oncall.Subject, admin, audit.Event{})
		require.NoError(t, err)
	})
	n, err := w.RunOnce(ctx)
	<-done
	require.NoError(t, err)
	require.Equal(t, 1, n)
	j := b.job(t, req.ID, id)
	t.Logf("job after the claim: %s (%s)", j.State, j.Result)
	assert.Zero(t, b.publishedAs(t, msgID),
		"published by a gate that reserved its slot after the requester was revoked (committed while the gate waited for the request's row)")
	assert.Equal(t, "pending", j.State)
}
