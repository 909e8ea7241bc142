package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
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
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

func TestReplayKeepsIdentity(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "orig-1", nats.Header{
		dlq.HeaderOperationID: {"op-1"}, "X-Custom": {"kept"}, "Nats-Rollup": {"all"}, "Nats-Expected-Last-Sequence": {"5"},
	}, `{"doc":"sku-1"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	assert.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approval")
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)

	msg, err := b.target.GetLastMsgForSubject(ctx, "app.acme.search.index_update")
	require.NoError(t, err)
	assert.Equal(t, `{"doc":"sku-1"}`, string(msg.Data))
	assert.Equal(t, "orig-1", msg.Header.Get("Nats-Msg-Id"), "the original message id")
	assert.Equal(t, "op-1", msg.Header.Get(dlq.HeaderOperationID))
	assert.Equal(t, "corr-orig-1", msg.Header.Get(dlq.HeaderCorrelationID))
	assert.Equal(t, fmt.Sprint(id), msg.Header.Get(replay.HeaderReplayOf))
	assert.Equal(t, fmt.Sprint(req.ID), msg.Header.Get(replay.HeaderReplayRequest))
	assert.Equal(t, "kept", msg.Header.Get("X-Custom"))
	assert.Empty(t, msg.Header.Get("Nats-Rollup"), "Nats-* headers are never forwarded")
	assert.Empty(t, msg.Header.Get("Nats-Expected-Last-Sequence"))

	d, err := b.store.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusReplayed, d.Status)
	var trail int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE message_id = 'orig-1'
        AND action IN ('replay.item.requested', 'replay.item.replayed')`).Scan(&trail))
	assert.Equal(t, 2, trail, "the item's steps are in the audit log under its message id")
}

func TestHeaderAndSubjectAllowlist(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	allow, err := replay.ParseSubjectAllowlist("acme=app.acme.>")
	require.NoError(t, err)
	b.replays = replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: allow})
	ok := b.seedItem(t, "search.index_update", "m-ok", nil, "{}")
	system := b.seedItem(t, "search.index_update", "m-sys", nats.Header{dlq.HeaderOriginalSubject: {"$JS.API.STREAM.DELETE.APP"}}, "{}")
	inbox := b.seedItem(t, "search.index_update", "m-inbox", nats.Header{dlq.HeaderOriginalSubject: {"_INBOX.abc"}}, "{}")
	other := b.seedItem(t, "search.index_update", "m-other", nats.Header{dlq.HeaderOriginalSubject: {"billing.acme.charge"}}, "{}")
	// The refused subjects are no subject the shipped policy classifies,
	// so they are manual: a draft of their own, every item left out.
	_, reqs := b.draft(t, oncall, ok, system, inbox, other)
	reasons := skipReasonsOf(t, b.replays, reqs)
	assert.Empty(t, reasons[ok])
	assert.Contains(t, reasons[system], "system subject")
	assert.Contains(t, reasons[inbox], "system subject")
	assert.Contains(t, reasons[other], "not in the replay allowlist")
	count := 0
	for _, r := range reqs {
		count += r.ItemCount
	}
	assert.Equal(t, 1, count, "only the allowed item is replayed")

	for _, s := range []string{"$SYS.REQ.SERVER.PING", "$JS.API.INFO", "_INBOX.x", "a.*", ""} {
		assert.Error(t, (&replay.SubjectAllowlist{}).Check(s), s)
	}
	assert.NoError(t, (&replay.SubjectAllowlist{}).Check("app.acme.x"))
	_, err = replay.ParseSubjectAllowlist("app.>.x")
	assert.Error(t, err)

	hs := replay.Headers([]dlq.HeaderValue{{Name: "Nats-Rollup", Value: "all"}, {Name: "Nats-Expected-Stream", Value: "X"},
		{Name: "nats-msg-id", Value: "x"}, {Name: "Dlq-Error", Value: "e"}, {Name: "Traceparent", Value: "t"}})
	assert.Equal(t, []dlq.HeaderValue{{Name: "Traceparent", Value: "t"}}, hs)
}

func TestDoubleApproveOneJob(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "mail-1", nats.Header{dlq.HeaderOperationID: {"send-1"}}, `{"to":"x"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		})
	}
	wg.Wait()
	succeeded := 0
	for _, err := range errs {
		if err == nil {
			succeeded++
		} else {
			assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
		}
	}
	assert.Equal(t, 1, succeeded, "one click counts, the others are conflicts")
	_, err := b.replays.Approve(ctx, req.ID, approver2, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "already approved")
	assert.Equal(t, map[string]int{"pending": 1}, b.jobStates(t, req.ID), "one job")

	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, 1, b.onSubject(t, "app.acme.email.send"))
}

func TestTwoWorkersOnePublish(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	var ids []int64
	for i := range 300 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprint("doc-", i), nil, fmt.Sprint(i)))
	}
	req := b.request(t, ids, replay.SubmitInput{Rates: nil})
	_, err := b.db.Pool.Exec(context.Background(), `UPDATE replay_jobs SET not_before = now()`) // all due at once
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{Owner: "w1", Batch: 16}))
	run(t, b.worker(t, replay.WorkerConfig{Owner: "w2", Batch: 16}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, map[string]int{"replayed": 300}, b.jobStates(t, req.ID))
	info, err := b.target.Info(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(300), info.State.Msgs, "each message in the target stream once")
	var dups, owners int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE duplicate),
        count(DISTINCT split_part(a.actor_subject, ':', 2)) FROM replay_ledger l
        JOIN audit_log a ON a.action = 'replay.item.replayed' AND a.object_id = l.dead_letter_id::text`).Scan(&dups, &owners))
	assert.Zero(t, dups)
	assert.Equal(t, 2, owners, "both workers took a share")
}

func TestWorkerDiesAfterPublishBeforeCommit(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "doc-die", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})

	// A lease long enough to publish on a slow machine (a worker publishes
	// only in the first two thirds of its lease); it runs out below.
	dying := b.worker(t, replay.WorkerConfig{Owner: "dying", Lease: time.Minute})
	dying.AfterPublish(func([]int64) bool { return false }) // published, then gone before recording
	n, err := dying.RunOnce(ctx)
	require.ErrorIs(t, err, replay.ErrStopped)
	require.Equal(t, 1, n)
	require.Equal(t, 1, b.onSubject(t, "app.acme.search.index_update"))
	assert.Equal(t, map[string]int{"claimed": 1}, b.jobStates(t, req.ID))

	survivor := b.worker(t, replay.WorkerConfig{Owner: "survivor"})
	_, err = survivor.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"claimed": 1}, b.jobStates(t, req.ID), "nobody takes over a lease that still runs")
	b.leaseRunsOut(t, req.ID)
	run(t, survivor) // takes over now that the lease has run out
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, 1, b.onSubject(t, "app.acme.search.index_update"), "the target stream holds it once")
	var dup bool
	var state, result string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT duplicate, state, result FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&dup, &state, &result))
	assert.True(t, dup, "the broker answered Duplicate")
	assert.Equal(t, "replayed", state, "and the message it keeps is the dying worker's publish of this request: replayed")
	assert.Contains(t, result, "this replay's own earlier publish")
}

func TestLostPubAckReconciled(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "doc-lost", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 50 * time.Millisecond})
	lost := true
	w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		if lost {
			lost = false
			return nil, context.DeadlineExceeded // the broker stored it; the ack never came
		}
		return a, err
	})
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"unknown": 1}, b.jobStates(t, req.ID))
	wait.Until(t, "the retry", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.jobStates(t, req.ID)["replayed"] == 1
	})
	assert.Equal(t, 1, b.onSubject(t, "app.acme.search.index_update"), "republished under the same id: one message")
	var attempts int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT attempts FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&attempts))
	assert.Equal(t, 2, attempts)
}

func TestStaleFenceRejected(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "doc-fence", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	slow := b.worker(t, replay.WorkerConfig{Owner: "slow"})
	jobs, err := slow.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	// Its lease runs out; another worker claims the job with a new token.
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET lease_until = now() - interval '1 second'`)
	require.NoError(t, err)
	fast := b.worker(t, replay.WorkerConfig{Owner: "fast"})
	again, err := fast.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.Greater(t, again[0].Fence(), jobs[0].Fence())

	jobs[0].SetOutcome(replay.JobBlocked, "stale worker's verdict")
	require.NoError(t, slow.Record(ctx, jobs))
	var state, owner string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT state, lease_owner FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&state, &owner))
	assert.Equal(t, "claimed", state, "the stale worker recorded nothing")
	assert.Equal(t, "fast", owner)

	fast.Judge(ctx, again)
	fast.Publish(ctx, again, time.Now().Add(time.Minute))
	require.NoError(t, fast.Record(ctx, again))
	assert.Equal(t, map[string]int{"replayed": 1}, b.jobStates(t, req.ID))
}

func TestSelfApprovalRefused(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "email.send", "mail-self", nats.Header{dlq.HeaderOperationID: {"send-self"}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	sameWithOtherEmail := oncall
	sameWithOtherEmail.Email = "alias@example.com"
	_, err := b.replays.Approve(ctx, req.ID, sameWithOtherEmail, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	r, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusPendingApproval, r.Status)
	var denied int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'replay.approve' AND outcome = 'denied'
        AND object_id = $1`, fmt.Sprint(req.ID)).Scan(&denied))
	assert.Equal(t, 1, denied)
}

func TestManualNeedsTwoApprovers(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "orders.refund", "refund-1", nil, `{"amount":10}`)
	batch, drafts := b.draft(t, oncall, id)
	_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "refund again", Confirmations: map[int64]string{drafts[0].ID: "yes"}}, quarantine.RequestMeta{})
	var refused *replay.RefusedError
	require.ErrorAs(t, err, &refused, "manual needs the typed confirmation")
	req := b.request(t, []int64{id}, replay.SubmitInput{Confirmations: nil})
	require.Equal(t, replay.StatusPendingApproval, req.Status)

	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY refund-1"}
	_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "the approver types the confirmation too")
	d, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.False(t, d.Ready)
	assert.Equal(t, 1, d.ApprovalsHave)
	_, err = b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "the same approver twice counts once")
	assert.Empty(t, b.jobStates(t, req.ID), "one approval is not enough")
	d, err = b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.True(t, d.Ready)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, 1, b.onSubject(t, "app.acme.orders.refund"))

	id2 := b.seedItem(t, "orders.refund", "refund-2", nil, "{}")
	id3 := b.seedItem(t, "orders.refund", "refund-3", nil, "{}")
	_, drafts = b.draft(t, oncall, id2, id3)
	assert.Zero(t, drafts[0].ItemCount, "manual items are never replayed in bulk")
	items, err := b.replays.Items(ctx, drafts[0].ID, 5)
	require.NoError(t, err)
	assert.Contains(t, items[0].SkipReason, "cannot be replayed in bulk")
}

func TestApprovalExpires(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	// Approver1 approves five hours ago, approver2 now: manual approvals
	// expire after 4h. (Not a console clock five hours ahead for
	// approver2: an approval is never dated after the database's clock,
	// TestRevGov17FastConsoleApprovalOutlivesItsExpiry.)
	start := time.Now().Add(-5 * time.Hour)
	b.now.Store(&start)
	id := b.seedItem(t, "orders.refund", "refund-exp", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY refund-exp"}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)

	b.now.Store(nil) // five hours later
	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.False(t, d.Ready, "the first approval expired: still one short")
	assert.Equal(t, 1, d.ApprovalsHave)
	assert.Contains(t, d.Reason, "expired")
	assert.Empty(t, b.jobStates(t, req.ID))
}

func TestIntentChangeNeedsNewApproval(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "accounts.permission_grant", "grant-1", nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"admin"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	old := req.IntentHex()

	require.NoError(t, b.replays.EditPayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Payload: []byte(`{"grant":"viewer"}`), Reason: "viewer is enough"}, quarantine.RequestMeta{}))
	edited, err := b.replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.NotEqual(t, old, edited.IntentHex(), "an edit is a new intent")
	_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: old}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "an approval of the old intent does not count")
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: edited.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.True(t, d.Ready)

	reval := newResponder(t, b, "revalidate.acme", func(q replay.RevalidateQuery) (bool, string, bool) { return true, "", true })
	run(t, b.worker(t, replay.WorkerConfig{}, reval))
	b.waitStatus(t, req.ID, replay.StatusDone)
	msg, err := b.target.GetLastMsgForSubject(ctx, "app.acme.accounts.permission_grant")
	require.NoError(t, err)
	assert.Equal(t, `{"grant":"viewer"}`, string(msg.Data))
	assert.Equal(t, "grant-1", msg.Header.Get("Nats-Msg-Id"), "the original message id is kept")

	// same_operation payloads are never edited.
	mid := b.seedItem(t, "email.send", "mail-edit", nats.Header{dlq.HeaderOperationID: {"op-e"}}, "{}")
	mreq := b.request(t, []int64{mid}, replay.SubmitInput{})
	err = b.replays.EditPayload(ctx, mreq.ID, mid, oncall, replay.PayloadEdit{Payload: []byte("{}"), Reason: "r"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
}

func TestPolicyChangeVoidsApproval(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	pending := b.request(t, []int64{b.seedItem(t, "email.send", "mail-p", nats.Header{dlq.HeaderOperationID: {"op-p"}}, "{}")}, replay.SubmitInput{})
	approved := b.request(t, []int64{b.seedItem(t, "search.index_update", "doc-p", nil, "{}")}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, approved.Status)

	changed, err := replaypolicy.Parse("changed.toml", []byte(`
[[rule]]
item_type = "search.*"
class = "rebuildable"
[[rule]]
item_type = "email.*"
class = "same_operation"
[class.rebuildable]
default_rate = 400
`))
	require.NoError(t, err)
	require.NotEqual(t, b.policy.Load().Version(), changed.Version())
	b.policy.Store(changed)

	_, err = b.replays.Approve(ctx, pending.ID, approver1, replay.ApproveInput{IntentHex: pending.IntentHex()}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, err.Error(), "policy")
	n, err := b.replays.VoidStale(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	r := b.waitStatus(t, pending.ID, replay.StatusVoid)
	assert.Contains(t, r.StatusReason, "policy changed")

	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, approved.ID, replay.StatusDoneWithProblems)
	assert.Equal(t, map[string]int{"blocked": 1}, b.jobStates(t, approved.ID), "approved under the old policy: not published")
	assert.Zero(t, b.onSubject(t, "app.acme.search.index_update"))
}

// newResponder answers revalidation requests on subject with decide; when
// decide says answer=false it stays silent (a hung service).
func newResponder(t *testing.T, b *replayBundle, subject string, decide func(replay.RevalidateQuery) (allow bool, reason string, answer bool)) *replay.NATSRevalidator {
	t.Helper()
	sub, err := b.nc.Subscribe(subject, func(m *nats.Msg) {
		var q replay.RevalidateQuery
		if json.Unmarshal(m.Data, &q) != nil {
			return
		}
		allow, reason, answer := decide(q)
		if !answer {
			return
		}
		body, _ := json.Marshal(map[string]any{"allow": allow, "reason": reason})
		_ = m.Respond(body)
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, b.nc.Flush())
	return replay.NewNATSRevalidator(b.nc, subject, 300*time.Millisecond)
}

func TestRevalidateDenyAndTimeoutBlock(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	reval := newResponder(t, b, "revalidate.grants", func(q replay.RevalidateQuery) (bool, string, bool) {
		switch q.Principal {
		case "user:allowed":
			return true, "", true
		case "user:revoked":
			return false, "user:revoked lost billing:admin on 2026-11-28", true
		default:
			return false, "", false // hangs
		}
	})
	mk := func(principal string) replay.Request {
		id := b.seedItem(t, "accounts.permission_grant", "grant-"+principal, nats.Header{dlq.HeaderPrincipal: {principal}}, "{}")
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		return req
	}
	allowed, revoked, hung := mk("user:allowed"), mk("user:revoked"), mk("user:hung")
	run(t, b.worker(t, replay.WorkerConfig{}, reval))
	b.waitStatus(t, allowed.ID, replay.StatusDone)
	for _, r := range []replay.Request{revoked, hung} {
		b.waitStatus(t, r.ID, replay.StatusDoneWithProblems)
	}
	result := func(r replay.Request) (state, result string) {
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT state, result FROM replay_jobs WHERE request_id = $1`, r.ID).Scan(&state, &result))
		return
	}
	s, _ := result(allowed)
	assert.Equal(t, "replayed", s)
	s, why := result(revoked)
	assert.Equal(t, "blocked", s)
	assert.Contains(t, why, "lost billing:admin")
	s, why = result(hung)
	assert.Equal(t, "blocked", s)
	assert.Contains(t, why, "no answer")
	assert.Equal(t, 1, b.onSubject(t, "app.acme.accounts.permission_grant"))

	// Nobody listening at all: blocked, and the breaker stops asking.
	nobody := replay.NewNATSRevalidator(b.nc, "revalidate.nobody", 100*time.Millisecond)
	for range 5 {
		_, _, err := nobody.Revalidate(ctx, replay.RevalidateQuery{})
		require.ErrorContains(t, err, "no service answers")
	}
	_, _, err := nobody.Revalidate(ctx, replay.RevalidateQuery{})
	assert.ErrorContains(t, err, "circuit open")
}

func TestDedupeSkipsAlreadyReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	// A target with a short duplicate window, so the broker forgets the id.
	short := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: 200 * time.Millisecond})
	hdr := nats.Header{dlq.HeaderOriginalSubject: {"events.acme.analytics.page_view"}}
	first := b.seedItem(t, "analytics.event", "evt-1", hdr, `{"n":1}`)
	req := b.request(t, []int64{first}, replay.SubmitInput{})
	// The worker runs for the first request only: the two requests below
	// must both be made before any worker can claim either (with a worker
	// running, the first is published before the second is submitted,
	// whose submit then finds it in the ledger instead).
	first1, stopFirst := context.WithCancel(ctx)
	var firstRun sync.WaitGroup
	w := b.worker(t, replay.WorkerConfig{})
	firstRun.Go(func() { w.Run(first1) })
	b.waitStatus(t, req.ID, replay.StatusDone)
	stopFirst()
	firstRun.Wait()

	// Wait until the broker's window has passed: a probe id publishes as new again.
	_, err := b.js.Publish(ctx, "events.probe", nil, jetstream.WithMsgID("probe"))
	require.NoError(t, err)
	wait.Until(t, "the duplicate window to pass", time.Minute, func() bool {
		ack, err := b.js.Publish(ctx, "events.probe", nil, jetstream.WithMsgID("probe"))
		require.NoError(t, err)
		return !ack.Duplicate
	})

	// The same event dead-lettered again (another DLQ message, same id):
	// the draft already says it was replayed.
	again := b.seedItem(t, "analytics.event", "evt-1", hdr, `{"n":1}`)
	_, drafts := b.draft(t, oncall, again)
	items, err := b.replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	assert.Contains(t, items[0].SkipReason, "already replayed")

	// Two requests made before either ran: the worker's ledger check skips the second.
	x := b.seedItem(t, "analytics.event", "evt-2", hdr, `{"n":2}`)
	y := b.seedItem(t, "analytics.event", "evt-2", hdr, `{"n":2}`)
	r1 := b.request(t, []int64{x}, replay.SubmitInput{})
	r2 := b.request(t, []int64{y}, replay.SubmitInput{})
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, r1.ID, replay.StatusDone)
	b.waitStatus(t, r2.ID, replay.StatusDone)
	states := b.jobStates(t, r1.ID)
	for k, v := range b.jobStates(t, r2.ID) {
		states[k] += v
	}
	assert.Equal(t, map[string]int{"replayed": 1, "skipped": 1}, states)
	info, err := short.Info(ctx, jetstream.WithSubjectFilter("events.acme.analytics.page_view"))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), info.State.Subjects["events.acme.analytics.page_view"], "evt-1 once and evt-2 once")
}

func TestBulkSnapshotIgnoresLateArrivals(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	var ids []int64
	for i := range 5 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprint("snap-", i), nil, "{}"))
	}
	batch, err := b.replays.CreateDrafts(ctx, oncall, ids, []string{"acme"}, false, allowAll, quarantine.RequestMeta{})
	require.NoError(t, err)
	for i := range 3 { // arrive after the selection was made, same type and tenant
		b.seedItem(t, "search.index_update", fmt.Sprint("late-", i), nil, "{}")
	}
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "bulk"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, reqs[0].ID, replay.StatusDone)
	assert.Equal(t, map[string]int{"replayed": 5}, b.jobStates(t, reqs[0].ID))
	assert.Equal(t, 5, b.onSubject(t, "app.acme.search.index_update"))
	var quarantined int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE msg_id LIKE 'late-%' AND status = 'quarantined'`).Scan(&quarantined))
	assert.Equal(t, 3, quarantined)
}

func TestRateLimitHolds(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	var ids []int64
	for i := range 6 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprint("rate-", i), nil, "{}"))
	}
	batch, drafts := b.draft(t, oncall, ids...)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "slowly", Rates: map[int64]float64{drafts[0].ID: 5}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, 5.0, reqs[0].Rate)
	run(t, b.worker(t, replay.WorkerConfig{Owner: "a"}))
	run(t, b.worker(t, replay.WorkerConfig{Owner: "b"})) // the rate holds across workers
	b.waitStatus(t, reqs[0].ID, replay.StatusDone)

	// The guarantee: item i is not published before approval + i/rate,
	// however many workers there are (a late first one may compress the span).
	done, err := b.replays.Request(ctx, reqs[0].ID)
	require.NoError(t, err)
	require.NotNil(t, done.ApprovedAt)
	last, err := b.target.GetMsg(ctx, 6)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, last.Time.Sub(*done.ApprovedAt), 950*time.Millisecond,
		"the 6th message at 5/s comes at least 1 s after approval (50 ms for clock granularity)")
	_, err = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "again"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "a batch is submitted once")

	batch, drafts = b.draft(t, oncall, b.seedItem(t, "search.index_update", "rate-x", nil, "{}"))
	_, err = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "fast", Rates: map[int64]float64{drafts[0].ID: 1e6}}, quarantine.RequestMeta{})
	var refused *replay.RefusedError
	require.ErrorAs(t, err, &refused, "a rate over the class's maximum is refused")
}

func TestCancelStopsRemaining(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	var ids []int64
	for i := range 10 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprint("cancel-", i), nil, "{}"))
	}
	batch, drafts := b.draft(t, oncall, ids...)
	// At 1/s the eight others take eight seconds: the cancel comes before
	// them however slowly the test sees the first two. It looks in the
	// target stream: a worker that fell behind claims the jobs due by then
	// together and records them after the last one's publish.
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "slow", Rates: map[int64]float64{drafts[0].ID: 1}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	id := reqs[0].ID
	run(t, b.worker(t, replay.WorkerConfig{}))
	wait.Until(t, "the first publishes", time.Minute, func() bool { return b.onSubject(t, "app.acme.search.index_update") >= 2 })
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(b.replays.Cancel(ctx, id, approver1, "", quarantine.RequestMeta{})), "only the requester cancels")
	require.NoError(t, b.replays.Cancel(ctx, id, oncall, "wrong target", quarantine.RequestMeta{}))
	wait.Until(t, "no job left in flight", time.Minute, func() bool {
		s := b.jobStates(t, id)
		return s["pending"]+s["claimed"]+s["unknown"] == 0
	})
	s := b.jobStates(t, id)
	assert.Equal(t, 10, s["replayed"]+s["cancelled"])
	assert.Positive(t, s["cancelled"])
	assert.Equal(t, s["replayed"], b.onSubject(t, "app.acme.search.index_update"), "nothing cancelled was published")
	r, err := b.replays.Request(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, r.Status)
	var back int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE msg_id LIKE 'cancel-%' AND status = 'quarantined'`).Scan(&back))
	assert.Equal(t, s["cancelled"], back, "what was not replayed is back in quarantine")
}

func TestSlowRateReleasesBeforeLeaseEnds(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	var ids []int64
	for i := range 9 {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprint("lease-", i), nil, "{}"))
	}
	batch, drafts := b.draft(t, oncall, ids...)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "slow", Rates: map[int64]float64{drafts[0].ID: 1}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now()`) // all due: the worker fell behind
	require.NoError(t, err)
	// A lease whose first two thirds leave time to claim and judge on a
	// slow machine before the slots run out.
	w := b.worker(t, replay.WorkerConfig{Lease: 12 * time.Second, Retry: 10 * time.Millisecond})
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 9, n, "a claim takes what the rate publishes in two thirds of the lease (8 s at 1/s), and one")
	s := b.jobStates(t, reqs[0].ID)
	assert.Positive(t, s["replayed"], "some went out at 1/s")
	assert.Positive(t, s["pending"], "the rest were released before the 12 s lease ran out")
	assert.Zero(t, s["claimed"])
	run(t, w)
	b.waitStatus(t, reqs[0].ID, replay.StatusDone)
	assert.Equal(t, 9, b.onSubject(t, "app.acme.search.index_update"))
}

func TestApprovedButNotStartedExpires(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	req := b.request(t, []int64{b.seedItem(t, "search.index_update", "late-start", nil, "{}")}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	later := time.Now().Add(25 * time.Hour) // rebuildable approvals last 24h; the workers were down
	b.now.Store(&later)
	_, err := b.worker(t, replay.WorkerConfig{}).RunOnce(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"blocked": 1}, b.jobStates(t, req.ID))
	assert.Zero(t, b.onSubject(t, "app.acme.search.index_update"))
}
