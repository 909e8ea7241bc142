package replay_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestApprovalExpiredBetweenClaimAndPublishIsNotPublished: a claim judges
// a request's approval (JudgeRun) up to two thirds of a lease before it
// publishes. An approval that expires in between, while nothing of the
// request was published, publishes nothing: the gate right before the
// publish compares the expiry again with the claim's clock (no round
// trip), releases the job unsent (a mark of its attempt undone), and the
// next claim blocks it as expired. The target stream holds nothing of the
// request, and the request ends done with problems.
func TestApprovalExpiredBetweenClaimAndPublishIsNotPublished(t *testing.T) {
	t.Parallel()
	for name, at := range map[string]func(w *replay.Worker, pass func()){
		// The expiry passes after the judge, before the gate reserves a slot.
		"AfterTheJudge": func(w *replay.Worker, pass func()) { w.AfterJudge(pass) },
		// It passes after the gate marked the job attempted, while the job
		// waits for its slot, right before the send.
		"BeforeTheSend": func(w *replay.Worker, pass func()) { w.BeforeSend(func(int64, time.Time) { pass() }) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			table, err := replaypolicy.Parse("expiry.toml", []byte(`
[[rule]]
item_type = "analytics.*"
class = "dedupe"
[class.dedupe]
approval_expiry = "1h"
`))
			require.NoError(t, err)
			b.policy.Store(table)
			id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: "gate-exp-" + name,
				Subject: "app.acme.events", Payload: []byte("{}")})
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			if req.Status == replay.StatusPendingApproval {
				d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
				require.NoError(t, err)
				require.True(t, d.Ready)
			}

			w := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
			var passed atomic.Bool
			at(w, func() {
				if passed.CompareAndSwap(false, true) {
					later := time.Now().Add(2 * time.Hour) // past the 1h expiry
					b.now.Store(&later)
				}
			})
			n, err := w.RunOnce(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.True(t, passed.Load(), "the clock moved between the claim and the publish")
			j := b.job(t, req.ID, id)
			assert.Equal(t, "pending", j.State, j.Result)
			assert.Contains(t, j.Result, "the approval expired since the claim judged it")
			assert.Nil(t, j.FirstAttemptAt, "nothing of it was sent: no attempt on record")
			assert.Empty(t, streamMsgs(t, b.target), "nothing published on an approval that expired before the publish")
			r, err := b.replays.Request(ctx, req.ID)
			require.NoError(t, err)
			assert.Equal(t, replay.StatusApproved, r.Status, "nothing of it may have landed: it did not start")

			// The next claim judges the request again: expired, not started.
			_, err = b.db.OwnerPool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, req.ID)
			require.NoError(t, err)
			_, err = w.RunOnce(ctx)
			require.NoError(t, err)
			j = b.job(t, req.ID, id)
			assert.Equal(t, "blocked", j.State, j.Result)
			assert.Contains(t, j.Result, "the approval expired (1h0m0s) before the replay started")
			assert.Empty(t, streamMsgs(t, b.target), "the target stream holds nothing of the request")
			assert.Equal(t, replay.StatusDoneWithProblems, b.waitFinished(t, req.ID).Status)
		})
	}
}
