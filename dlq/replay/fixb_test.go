package replay_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// The review findings on replay after issue 12 ("fix round B"), each on
// real PostgreSQL and NATS, asserting what the target stream holds.

// deadLetterStatus reads the status of dead letter id and whether an item
// of request still holds it.
func (b *replayBundle) deadLetterStatus(t *testing.T, id, request int64) (string, bool) {
	t.Helper()
	var status string
	var held bool
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT d.status,
        EXISTS (SELECT 1 FROM replay_items i WHERE i.dead_letter_id = d.id AND i.request_id = $2 AND i.held)
        FROM dead_letters d WHERE d.id = $1`, id, request).Scan(&status, &held))
	return status, held
}

// TestHaltKeepsMaybePublishedHeld cancels (or stops in an emergency) a
// request whose job may have been published: one whose PubAck was lost
// (unknown), and one a worker published and then crashed before recording
// (claimed, its lease running out). Neither is "cancelled": each needs
// reconciliation, its dead letter stays held (no new request can take it),
// and another request of the same identity is not published while it
// waits for a person. The target stream holds each message once.
func TestHaltKeepsMaybePublishedHeld(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	halts := map[string]func(t *testing.T, id int64){
		"Cancel": func(t *testing.T, id int64) {
			require.NoError(t, b.replays.Cancel(ctx, id, oncall, "wrong target", quarantine.RequestMeta{}))
		},
		"Stop": func(t *testing.T, id int64) {
			require.NoError(t, b.replays.Stop(ctx, id, approver1, replay.StopInput{Reason: "incident", Typed: "STOP"}, quarantine.RequestMeta{}))
		},
	}
	for name, halt := range halts {
		t.Run(name+"Unknown", func(t *testing.T) {
			msgID := "halt-unknown-" + name
			id := b.seedItem(t, "analytics.event", msgID, nil, "{}")
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			w := b.worker(t, replay.WorkerConfig{Retry: time.Hour}) // no retry within the test
			loseAcks(w, 1)
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			require.Equal(t, "unknown", b.job(t, req.ID, id).State)
			halt(t, req.ID)
			b.checkMaybePublished(t, req.ID, id, msgID)
		})
		t.Run(name+"CrashedClaim", func(t *testing.T) {
			msgID := "halt-crashed-" + name
			id := b.seedItem(t, "analytics.event", msgID, nil, "{}")
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			// A lease long enough to publish on a slow machine; it runs out
			// after the halt.
			dying := b.worker(t, replay.WorkerConfig{Owner: "dying-" + name, Lease: time.Minute})
			dying.AfterPublish(func([]int64) bool { return false }) // published, then gone before recording
			_, err := dying.RunOnce(ctx)
			require.ErrorIs(t, err, replay.ErrStopped)
			require.Equal(t, "claimed", b.job(t, req.ID, id).State)
			require.Equal(t, 1, b.publishedAs(t, msgID), "the dying worker published")
			halt(t, req.ID) // while its lease still runs: left to a worker, who finds it halted
			require.Equal(t, "claimed", b.job(t, req.ID, id).State, "the halt leaves a claim whose lease runs to its worker")
			b.leaseRunsOut(t, req.ID)
			survivor := b.worker(t, replay.WorkerConfig{Owner: "survivor-" + name})
			wait.Until(t, "the crashed claim taken over and ended", time.Minute, func() bool {
				_, err := survivor.RunOnce(ctx)
				require.NoError(t, err)
				return !replay.JobState(b.job(t, req.ID, id).State).Running()
			})
			b.checkMaybePublished(t, req.ID, id, msgID)
		})
	}
}

// checkMaybePublished asserts that the job of dead letter id in request
// req, which may have been published as msgID, waits for a person: held,
// needs reconciliation, not draftable again, and that another dead letter
// of the same message id is not published meanwhile.
func (b *replayBundle) checkMaybePublished(t *testing.T, req, id int64, msgID string) {
	t.Helper()
	ctx := context.Background()
	j := b.job(t, req, id)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
	assert.Contains(t, j.Result, "may have landed")
	status, held := b.deadLetterStatus(t, id, req)
	assert.Equal(t, "needs_reconciliation", status)
	assert.True(t, held, "the dead letter stays held until a person decides")
	_, drafts := b.draft(t, oncall, id)
	items, err := b.replays.Items(ctx, drafts[0].ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.NotEmpty(t, items[0].SkipReason, "a new request cannot take it")
	assert.Equal(t, 1, b.publishedAs(t, msgID), "published once")

	// Another dead letter of the same message id (dedupe): the ledger
	// counts the one waiting for a person as possibly replayed.
	twin := b.seedItem(t, "analytics.event", msgID, nil, "{}")
	other := b.request(t, []int64{twin}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	wait.Until(t, "the twin judged", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return !replay.JobState(b.job(t, other.ID, twin).State).Running()
	})
	tj := b.job(t, other.ID, twin)
	assert.Equal(t, "blocked", tj.State, tj.Result)
	assert.Contains(t, tj.Result, "waits for reconciliation")
	assert.Equal(t, 1, b.publishedAs(t, msgID), "the twin was not published")
}

// publishedAs counts the messages of the target stream published under
// message id msgID.
func (b *replayBundle) publishedAs(t *testing.T, msgID string) int {
	t.Helper()
	n := 0
	for _, m := range streamMsgs(t, b.target) {
		if m.Header.Get(dlq.HeaderNatsMsgID) == msgID {
			n++
		}
	}
	return n
}

// TestRecordGuardsOnHeldItem records the outcome of a job whose request
// no longer holds its dead letter (another request took it meanwhile):
// the job ends as the rules said, but the dead letter stays as the request
// holding it left it, and that request replays it once.
func TestRecordGuardsOnHeldItem(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "guarded", nil, "{}")
	first := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{})
	jobs, err := w.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)

	// Meanwhile the first request let go of the dead letter (as a person
	// settling it would) and a second one took it.
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_items SET held = false WHERE request_id = $1`, first.ID)
	require.NoError(t, err)
	testfactory.SetStatus(t, b.db.Pool, dlq.StatusQuarantined, id)
	second := b.request(t, []int64{id}, replay.SubmitInput{})

	w.Judge(ctx, jobs) // on what the claim read: it still held the dead letter then
	w.Publish(ctx, jobs, time.Now().Add(time.Minute))
	require.NoError(t, w.Record(ctx, jobs))
	assert.Equal(t, 0, b.publishedAs(t, "guarded"), "the gate saw the dead letter is no longer the request's")
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = CASE WHEN request_id = $1 THEN now() ELSE now() + interval '1 hour' END`, first.ID)
	require.NoError(t, err)
	jobs, err = w.Claim(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	w.Judge(ctx, jobs)
	w.Publish(ctx, jobs, time.Now().Add(time.Minute))
	require.NoError(t, w.Record(ctx, jobs))
	assert.Equal(t, "blocked", b.job(t, first.ID, id).State)
	status, held := b.deadLetterStatus(t, id, second.ID)
	assert.Equal(t, "replay_requested", status, "the first request's late record leaves the second's dead letter alone")
	assert.True(t, held)
	assert.Empty(t, testfactory.CountersDrift(t, b.db.Pool), "the counters move only for dead letters a mark changed")

	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, second.ID)
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, second.ID, replay.StatusDone)
	assert.Equal(t, 1, b.publishedAs(t, "guarded"))
	status, _ = b.deadLetterStatus(t, id, second.ID)
	assert.Equal(t, "replayed", status)
	assert.Empty(t, testfactory.CountersDrift(t, b.db.Pool))
}

// TestDeterministicPublishErrorsEndTheJob replays messages NATS can never
// publish as they are. Judged when drafted: a header name the client
// cannot send, a header value it would send changed (a CR inside a
// message id or another value becomes a space, a blank or CR at a value's
// end is trimmed), and a payload bigger than
// the server's max_payload, are left out with why, and an edit that makes
// a payload too big is refused.
// Met at execution all the same (a console that did not know the limit):
// the client's refusal and the broker's (a stream's max_msg_size) end the
// job blocked with the reason, never unknown and never retried, and
// nothing is stored.
func TestDeterministicPublishErrorsEndTheJob(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	small := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 4096 })
	snc, sjs := small.Connect(t)
	_, err := sjs.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}})
	require.NoError(t, err)
	_, err = sjs.CreateStream(ctx, jetstream.StreamConfig{Name: "TINY", Subjects: []string{"events.>"}, MaxMsgSize: 256})
	require.NoError(t, err)
	knowing := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t), MaxPayload: snc.MaxPayload()})
	unknowing := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t)})

	big := strings.Repeat("x", 8000)
	badHeader := b.seedItem(t, "search.index_update", "bad-header", nats.Header{"Bad Name": {"v"}}, "{}")
	// A CR inside a value, as a raw producer can send it and ingest keeps
	// it: the client would send a space instead (another message id).
	crMsgID := b.seedItem(t, "search.index_update", "cr\rin-id", nil, "{}")
	crValue := b.seedItem(t, "search.index_update", "cr-value", nats.Header{"X-Note": {"one\rtwo"}}, "{}")
	edgeBlanks := b.seedItem(t, "search.index_update", "edge-blanks", nats.Header{"X-Note": {"\tpadded\r"}}, "{}")
	tooBig := b.seedItem(t, "search.index_update", "too-big", nil, big)
	tiny := b.seedItem(t, "search.index_update", "tiny", nats.Header{dlq.HeaderOriginalSubject: {"events.acme.search.index_update"}}, strings.Repeat("y", 600))
	fine := b.seedItem(t, "search.index_update", "fine", nil, "{}")

	t.Run("JudgedAtDraft", func(t *testing.T) {
		_, drafts := testfactory.Draft(t, knowing, oncall, badHeader, tooBig, fine, crMsgID, crValue, edgeBlanks)
		reasons := skipReasonsOf(t, knowing, drafts)
		assert.Contains(t, reasons[badHeader], `header "Bad Name" cannot be sent over NATS`)
		assert.Contains(t, reasons[crMsgID], `header "Nats-Msg-Id" holds a line break inside its value`)
		assert.Contains(t, reasons[crValue], `header "X-Note" holds a line break inside its value`)
		// A reader trims the blanks at a value's start only: the CR at
		// its end its consumers read, and the client would not send it
		// (review round 36).
		assert.Contains(t, reasons[edgeBlanks], `header "X-Note" holds a line break inside its value, or blanks at its end`)

		// Why: what the client really sends for such an id and value.
		sub, err := snc.SubscribeSync("probe.cr")
		require.NoError(t, err)
		m, err := replay.Message("probe.cr", "cr\rin-id", "", "", crMsgID, 1,
			[]dlq.HeaderValue{{Name: "X-Note", Value: "one\rtwo"}}, []byte("{}"), "")
		require.NoError(t, err)
		require.NoError(t, snc.PublishMsg(m))
		got, err := sub.NextMsg(5 * time.Second)
		require.NoError(t, err)
		assert.Equal(t, "cr in-id", got.Header.Get(dlq.HeaderNatsMsgID), "another message id than the stored one")
		assert.Equal(t, "one two", got.Header.Get("X-Note"))
		assert.Contains(t, reasons[tooBig], "more than the server's max_payload of 4096 bytes")
		assert.Empty(t, reasons[fine])
		err = knowing.EditPayload(ctx, drafts[0].ID, fine, oncall, replay.PayloadEdit{Payload: []byte(big), Reason: "bigger"}, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
		assert.ErrorContains(t, err, "max_payload")
	})

	t.Run("RefusedAtExecution", func(t *testing.T) {
		req := testfactory.Request(t, unknowing, oncall, []int64{tooBig, tiny}, replay.SubmitInput{Reason: "unknowing"})
		w := replay.NewWorker(unknowing, sjs, b.auth, nil, replay.WorkerConfig{Retry: 10 * time.Millisecond}, b.log)
		wait.Until(t, "both jobs ended", time.Minute, func() bool {
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			s := b.jobStates(t, req.ID)
			return s["pending"]+s["claimed"]+s["unknown"]+s["deferred"] == 0
		})
		for id, want := range map[int64]string{tooBig: "maximum payload exceeded", tiny: "the broker refused it"} {
			j := b.job(t, req.ID, id)
			assert.Equal(t, "blocked", j.State, j.Result)
			assert.Contains(t, j.Result, want)
			assert.Contains(t, j.Result, "can never be published as it is")
			assert.Equal(t, 1, j.Attempts, "never retried")
			assert.Nil(t, j.FirstAttemptAt, "nothing of it was stored")
		}
		for _, name := range []string{"APP", "TINY"} {
			st, err := sjs.Stream(ctx, name)
			require.NoError(t, err)
			info, err := st.Info(ctx)
			require.NoError(t, err)
			assert.Zero(t, info.State.Msgs, "stream %s stores nothing", name)
		}
		b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
	})
}

// TestReapproveAfterApprovalExpired lets an approver whose approval of a
// manual request expired approve it again: the request does not get stuck
// one approval short. A second click on an approval that still counts is
// still a conflict. The replay then publishes once.
func TestReapproveAfterApprovalExpired(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	start := time.Now().Add(-5 * time.Hour)
	b.now.Store(&start)
	id := b.seedItem(t, "orders.refund", "refund-again", nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY refund-again"}
	_, err := b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	b.now.Store(nil) // five hours later: manual approvals expire after 4h
	d, err := b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.False(t, d.Ready, "the first approval expired")
	_, err = b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "an approval that counts is not given twice")

	d, err = b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err, "the expired approver approves again")
	assert.True(t, d.Ready)
	assert.Equal(t, 2, d.ApprovalsHave)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Equal(t, 1, b.publishedAs(t, "refund-again"))
}

// TestUpstreamHeadersNotForwarded replays a dead letter that carries an
// earlier hop's Dlq-* headers as the producer helper renamed them
// (Upstream-Dlq-*): none of them is forwarded, under that name or as
// Dlq-* again; the message's own headers are.
func TestUpstreamHeadersNotForwarded(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	id := b.seedItem(t, "search.index_update", "upstream", nats.Header{
		"Upstream-Dlq-Principal": {"user:root"}, "Upstream-Dlq-Payload-Edited": {"abc"}, "Upstream-Dlq-Replay-Of": {"7"},
		"X-Trace": {"t-1"},
	}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	m := b.published(t)["upstream"]
	require.NotNil(t, m)
	assert.Equal(t, "t-1", m.Header.Get("X-Trace"))
	for k := range m.Header {
		assert.False(t, strings.HasPrefix(strings.ToLower(k), "upstream-"), "forwarded %s", k)
	}
	assert.Empty(t, m.Header.Get("Dlq-Principal"))
	assert.Empty(t, m.Header.Get(replay.HeaderPayloadEdited))
	assert.Equal(t, strconv.FormatInt(id, 10), m.Header.Get(replay.HeaderReplayOf))
}

// TestPolicyVersionLivesInDatabase starts two processes with different
// policy tables: the second to start makes its version the active one
// (audited). A request approved under it is not judged by the first
// process's older rules: its worker claims nothing (nothing blocked,
// nothing published) and its console submits nothing, until it reloads its
// file and has the active version; then the replay runs.
func TestPolicyVersionLivesInDatabase(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	older := b.policy.Load()
	newer := policyAt(t, 400)
	require.NotEqual(t, older.Version(), newer.Version())

	var file atomic.Pointer[replaypolicy.Table] // what the first process's policy file holds
	file.Store(older)
	var inForce atomic.Pointer[replaypolicy.Table]
	inForce.Store(older)
	first := replay.New(b.db.Pool, replay.Config{Policy: inForce.Load, Subjects: testSubjects(t),
		Reload: func() (*replaypolicy.Table, error) { t := file.Load(); inForce.Store(t); return t, nil }})
	second := replay.New(b.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return newer }, Subjects: testSubjects(t)})
	require.NoError(t, first.ActivatePolicy(ctx, "first"))
	require.NoError(t, second.ActivatePolicy(ctx, "second"))
	require.NoError(t, second.ActivatePolicy(ctx, "second"), "a restart with the same table changes nothing")
	assert.Equal(t, 2, countAudit(t, b, audit.ActionReplayPolicy))

	id := b.seedItem(t, "search.index_update", "policy-db", nil, "{}")
	req := testfactory.Request(t, second, oncall, []int64{id}, replay.SubmitInput{Reason: "newer"})
	require.Equal(t, newer.Version(), req.PolicyVersion)
	w := replay.NewWorker(first, b.js, b.auth, nil, replay.WorkerConfig{}, b.log)
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "a worker with older rules claims nothing")
	assert.Equal(t, map[string]int{"pending": 1}, b.jobStates(t, req.ID), "nothing blocked")
	assert.Zero(t, b.publishedAs(t, "policy-db"))

	other := b.seedItem(t, "search.index_update", "policy-db-2", nil, "{}")
	batch, _ := testfactory.Draft(t, second, oncall, other)
	_, err = first.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "older"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	assert.ErrorContains(t, err, "is not the active one")

	file.Store(newer) // the deploy reached the first process's file
	wait.Until(t, "the reloaded worker replays it", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State == "replayed"
	})
	assert.Equal(t, newer.Version(), inForce.Load().Version())
	assert.Equal(t, 1, b.publishedAs(t, "policy-db"))
}

// TestClassUnionOfTypeAndSubject drafts items whose item type and target
// subject map to different classes: the strictest sets the class, and the
// weaker class's rules still apply. A dedupe item type sent to a
// same_operation subject is skipped when its message id was replayed on
// that subject (the ledger keys its message id too, under another
// operation id); a same_operation item type sent to a revalidate subject
// still needs its operation id.
func TestClassUnionOfTypeAndSubject(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	first := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: "union-1", OperationID: "op-first",
		Subject: "app.acme.email.send", Payload: []byte("{}")})
	req := b.request(t, []int64{first}, replay.SubmitInput{Reason: "union"})
	require.Equal(t, replay.StatusPendingApproval, req.Status, "same_operation by its subject: one approver")
	_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	var dedupeKey, operationKey bool
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT dedupe_key, operation_key FROM replay_ledger WHERE request_id = $1`, req.ID).Scan(&dedupeKey, &operationKey))
	assert.True(t, dedupeKey)
	assert.True(t, operationKey)

	again := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: "union-1", OperationID: "op-u",
		Subject: "app.acme.email.send", Payload: []byte("{}")})
	noOp := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "email.send", MsgID: "union-2", Principal: "user:1",
		Subject: "app.acme.accounts.grant", Payload: []byte("{}")})
	_, drafts := b.draft(t, oncall, again, noOp)
	reasons := skipReasonsOf(t, b.replays, drafts)
	assert.Contains(t, reasons[again], "already replayed", "same_operation by its subject, dedupe by its type: its message id was replayed")
	assert.Contains(t, reasons[noOp], "without an operation id", "revalidate by its subject, same_operation by its type")
	assert.Equal(t, 1, b.publishedAs(t, "union-1"))
}

// skipReasonsOf returns, by dead letter, why each item of the requests
// reqs of svc is left out ("" for one that goes).
func skipReasonsOf(t *testing.T, svc *replay.Service, reqs []replay.Request) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, r := range reqs {
		items, err := svc.Items(context.Background(), r.ID, 100)
		require.NoError(t, err)
		for _, it := range items {
			out[it.DeadLetterID] = it.SkipReason
		}
	}
	return out
}
