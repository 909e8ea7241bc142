package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev42WorkerWithOtherSettingsLeavesApprovedItemsWaiting: the replay
// subjects (REPLAY_SUBJECT_ALLOW) and the revalidation subject
// (REVALIDATE_SUBJECT) are settings of each process. A worker started
// without them, or with a list the console that approved the request
// does not have, blocked every approved item it claimed for good: the
// requester asked again, the approvers approved again. Now a worker whose
// list refuses the subject, or which has no revalidation subject, leaves
// the job waiting, saying which setting, and a worker with the settings
// replays it; a worker with no replay subjects at all claims nothing.
func TestRev42WorkerWithOtherSettingsLeavesApprovedItemsWaiting(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	t.Run("SubjectRefused", func(t *testing.T) {
		id := b.seedItem(t, "search.index_update", "rev42-other-list", nil, "{}")
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status)
		n, err := b.subjectWorker(t, "events.{tenant}.>").RunOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		j := b.job(t, req.ID, id)
		assert.Equal(t, "pending", j.State, j.Result)
		assert.Contains(t, j.Result, "REPLAY_SUBJECT_ALLOW differ")
		assert.Zero(t, b.publishedAs(t, "rev42-other-list"))

		j = b.rerun(t, b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}), req.ID, id)
		assert.Equal(t, "replayed", j.State, j.Result)
		assert.Equal(t, 1, b.publishedAs(t, "rev42-other-list"))
	})

	// A running request's job waits no longer than its approval's expiry:
	// a subject taken out on purpose on every process must not be
	// published to by the first worker given it back, weeks later.
	t.Run("StartedRequestPastItsApprovalsExpiry", func(t *testing.T) {
		req, _, out := b.startedWithOneWaiting(t, "rev42-started")
		j := b.job(t, req.ID, out)
		assert.Equal(t, "pending", j.State, j.Result)
		assert.Contains(t, j.Result, "until its approval's expiry, whether or not something of its request was published")
		r, err := b.replays.Request(ctx, req.ID)
		require.NoError(t, err)
		require.Equal(t, replay.StatusRunning, r.Status, "something of it was published")

		b.approvedLongAgo(t, req.ID) // a day and more later by the database's clock
		w := b.subjectWorker(t, "acme=app.acme.search.index_update")
		j = b.rerun(t, w, req.ID, out)
		assert.Equal(t, "blocked", j.State, j.Result)
		assert.Contains(t, j.Result, "no worker whose setting allows it took the job before its approval's expiry: request again")
		assert.Zero(t, b.publishedAs(t, "rev42-started-out"))
	})

	t.Run("NoSubjects", func(t *testing.T) {
		id := b.seedItem(t, "search.index_update", "rev42-no-list", nil, "{}")
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		n, err := b.subjectWorker(t, "").RunOnce(ctx)
		require.NoError(t, err)
		assert.Zero(t, n, "a worker with no replay subjects claims nothing")
		j := b.job(t, req.ID, id)
		assert.Equal(t, "pending", j.State, j.Result)
		assert.Zero(t, j.Attempts)
		j = b.rerun(t, b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}), req.ID, id)
		assert.Equal(t, "replayed", j.State, j.Result)
	})

	t.Run("NoRevalidator", func(t *testing.T) {
		sub, err := b.nc.Subscribe("rev42.revalidate", func(m *nats.Msg) { _ = m.Respond([]byte(`{"allow": true}`)) })
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		id := b.seedItem(t, "accounts.permission_grant", "rev42-no-reval", nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"read"}`)
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.True(t, d.Ready)

		// A worker started without REVALIDATE_SUBJECT, wired as app wires
		// one: its service's configuration says so too.
		cfg := b.config(t)
		cfg.Revalidation = false
		bare := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil,
			replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute, Retry: time.Millisecond}, b.log)
		n, err := bare.RunOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		j := b.job(t, req.ID, id)
		assert.Equal(t, "pending", j.State, j.Result)
		assert.Contains(t, j.Result, "no revalidation subject is configured on this worker")
		assert.Zero(t, b.publishedAs(t, "rev42-no-reval"))

		j = b.rerun(t, b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}, replay.NewNATSRevalidator(b.nc, "rev42.revalidate", 5*time.Second)), req.ID, id)
		assert.Equal(t, "replayed", j.State, j.Result)
		assert.Equal(t, 1, b.publishedAs(t, "rev42-no-reval"))
	})
}
