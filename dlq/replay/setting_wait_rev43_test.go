package replay_test

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev43SettingEmptiedEverywhereThenGivenBackDoesNotPublishOnALapsedApproval:
// a started request's job waits for a worker whose REPLAY_SUBJECT_ALLOW
// allows its subject; the setting is then emptied on every process (whose
// workers claim nothing) for longer than the approval's expiry, and given
// back. The first worker that has it blocks the job, which waited past its
// approval's expiry, instead of publishing it on an approval that lapsed
// a day before.
func TestRev43SettingEmptiedEverywhereThenGivenBackDoesNotPublishOnALapsedApproval(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	req, _, out := b.startedWithOneWaiting(t, "rev43-started")
	j := b.job(t, req.ID, out)
	require.Contains(t, j.Result, "waits for a worker whose setting allows it")

	empty := b.subjectWorker(t, "") // the setting emptied on every process
	n, err := empty.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a worker with no replay subjects claimed a job")
	b.approvedLongAgo(t, req.ID)

	j = b.rerun(t, b.worker(t, replay.WorkerConfig{Retry: time.Millisecond}), req.ID, out) // the setting given back
	assert.Equal(t, "blocked", j.State, j.Result)
	assert.Contains(t, j.Result, "none took it before its approval's expiry")
	assert.Zero(t, b.publishedAs(t, "rev43-started-out"), "published a day after its approval expired")
}

// subjectWorker is a worker whose REPLAY_SUBJECT_ALLOW is allow.
func (b *replayBundle) subjectWorker(t *testing.T, allow string) *replay.Worker {
	t.Helper()
	subjects, err := replay.ParseSubjectAllowlist(allow)
	require.NoError(t, err)
	cfg := b.config(t)
	cfg.Subjects = subjects
	return replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil,
		replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute, Retry: time.Millisecond}, b.log)
}

// startedWithOneWaiting is a running request of two items, in (replayed)
// and out, whose target a worker's narrower REPLAY_SUBJECT_ALLOW refused:
// its job waits for a worker whose setting allows it. Their message ids
// are prefix-in and prefix-out.
func (b *replayBundle) startedWithOneWaiting(t *testing.T, prefix string) (req replay.Request, in, out int64) {
	t.Helper()
	in = b.seedItem(t, "search.index_update", prefix+"-in", nil, "{}")
	out = b.seedItem(t, "search.index_update", prefix+"-out", nats.Header{dlq.HeaderOriginalSubject: {"app.acme.search.reindex"}}, "{}")
	req = b.request(t, []int64{in, out}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	narrow := b.subjectWorker(t, "acme=app.acme.search.index_update")
	wait.Until(t, "the allowed item replayed", time.Minute, func() bool {
		_, err := narrow.RunOnce(context.Background())
		require.NoError(t, err)
		return b.job(t, req.ID, in).State == "replayed"
	})
	require.Equal(t, "pending", b.job(t, req.ID, out).State)
	return req, in, out
}

// approvedLongAgo moves request id's submission and approvals 30 hours
// back by the database's clock: past every class's approval expiry.
func (b *replayBundle) approvedLongAgo(t *testing.T, id int64) {
	t.Helper()
	for _, q := range []string{
		`UPDATE replay_requests SET created_at = created_at - interval '30 hours', submitted_at = submitted_at - interval '30 hours',
            approved_at = approved_at - interval '30 hours' WHERE id = $1`,
		`UPDATE replay_approvals SET approved_at = approved_at - interval '30 hours' WHERE request_id = $1`,
	} {
		_, err := b.db.OwnerPool.Exec(context.Background(), q, id)
		require.NoError(t, err)
	}
}

// TestRev43PolicyActivatedJustBeforeTheClaimCountsApprovalsByIt: a manual
// request submitted and approved under a version activated after the
// worker's check, before its claim. The worker reads the active version
// again (round 42), and now before it reads the run's facts: the two
// approvals, ten minutes apart, both count under the active version's
// expiry (4 h), so the request is replayed, as by a worker that held the
// active table from the start. Counted by the stale table (1 minute), the
// first approval lapsed and the request was blocked for good, with a
// reason about a fix marker nobody recorded.
func TestRev43PolicyActivatedJustBeforeTheClaimCountsApprovalsByIt(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	src, err := os.ReadFile("../../dev/policy.toml")
	require.NoError(t, err)
	stale, err := replaypolicy.Parse("stale.toml", []byte(strings.Replace(string(src), `approval_expiry = "4h"`, `approval_expiry = "1m"`, 1)))
	require.NoError(t, err)
	newer := b.policy.Load()
	require.NotEqual(t, stale.Version(), newer.Version())
	var inForce atomic.Pointer[replaypolicy.Table]
	inForce.Store(stale)
	cfg := b.config(t)
	cfg.Policy = inForce.Load
	cfg.Reload = func() (*replaypolicy.Table, error) { inForce.Store(newer); return newer, nil }
	svc := replay.New(b.db.Pool, cfg)
	require.NoError(t, svc.ActivatePolicy(ctx, "first"))
	const msgID = "rev43-manual-race"
	id := b.seedItem(t, "orders.refund", msgID, nil, `{"refund":"x"}`)
	cfg2 := b.config(t)
	cfg2.Policy = func() *replaypolicy.Table { return newer }
	deploy := replay.New(b.db.Pool, cfg2)

	w := replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, AckTimeout: time.Minute, Retry: time.Millisecond}, b.log)
	var req replay.Request
	w.BeforeClaim(func() {
		w.BeforeClaim(nil)
		require.NoError(t, deploy.ActivatePolicy(ctx, "second"))
		req = testfactory.Request(t, deploy, oncall, []int64{id}, replay.SubmitInput{})
		require.Equal(t, replay.StatusPendingApproval, req.Status)
		in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY " + msgID}
		_, err := deploy.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
		require.NoError(t, err)
		for _, q := range []string{ // the first approval was given ten minutes before the second
			`UPDATE replay_approvals SET approved_at = approved_at - interval '10 minutes' WHERE request_id = $1`,
			`UPDATE replay_requests SET created_at = created_at - interval '11 minutes', submitted_at = submitted_at - interval '11 minutes' WHERE id = $1`,
		} {
			_, err = b.db.OwnerPool.Exec(ctx, q, req.ID)
			require.NoError(t, err)
		}
		d, err := deploy.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.True(t, d.Ready, d.Reason)
	})
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	j := b.job(t, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Equal(t, 1, b.publishedAs(t, msgID))
}

// TestRev43SettingWaitEndsWhenAWorkerWithTheSettingTakesTheJob: a job
// that waited once for a worker whose REPLAY_SUBJECT_ALLOW allows its
// subject is taken by one in time and published, but its PubAck is lost;
// the retry comes after the approval's expiry. The wait for the setting
// ended when that worker took it, so the retry is judged as any job's of
// a started request: it finds the broker's copy its own and is replayed,
// as a job that never waited is, not blocked as one nobody took in time.
func TestRev43SettingWaitEndsWhenAWorkerWithTheSettingTakesTheJob(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	req, _, out := b.startedWithOneWaiting(t, "rev43-taken")
	const msgID = "rev43-taken-out"
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, req.ID)
	require.NoError(t, err)

	full := b.worker(t, replay.WorkerConfig{Retry: time.Millisecond})
	var outJob int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT id FROM replay_jobs WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, out).Scan(&outJob))
	var lost atomic.Bool
	full.OnAck(func(id int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		if id == outJob && lost.CompareAndSwap(false, true) {
			return nil, context.DeadlineExceeded // stored; the ack never came
		}
		return a, err
	})
	wait.Until(t, "published, its PubAck lost", time.Minute, func() bool {
		_, err := full.RunOnce(ctx)
		require.NoError(t, err)
		return lost.Load() && b.job(t, req.ID, out).State != "pending"
	})
	require.Equal(t, "unknown", b.job(t, req.ID, out).State)
	require.Equal(t, 1, b.publishedAs(t, msgID))
	b.approvedLongAgo(t, req.ID)
	wait.Until(t, "the retry judged", time.Minute, func() bool {
		_, err := full.RunOnce(ctx)
		require.NoError(t, err)
		s := b.job(t, req.ID, out).State
		return s != "unknown" && s != "pending"
	})
	j := b.job(t, req.ID, out)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Equal(t, 1, b.publishedAs(t, msgID))
}
