package replay_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// published reads every message of the target stream APP, by message id
// (each id once: a second message with an id fails the test).
func (b *replayBundle) published(t *testing.T) map[string]*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	info, err := b.target.Info(ctx)
	require.NoError(t, err)
	out := map[string]*jetstream.RawStreamMsg{}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := b.target.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		require.NoError(t, err)
		id := m.Header.Get(dlq.HeaderNatsMsgID)
		require.NotContains(t, out, id, "message id %s published twice", id)
		out[id] = m
	}
	return out
}

// seedN stores n dead letters of itemType with message ids prefix-0...
func (b *replayBundle) seedN(t *testing.T, n int, itemType, prefix string) ([]int64, []string) {
	t.Helper()
	letters := make([]testfactory.Letter, n)
	msgIDs := make([]string, n)
	for i := range letters {
		msgIDs[i] = fmt.Sprintf("%s-%d", prefix, i)
		letters[i] = testfactory.Letter{ItemType: itemType, MsgID: msgIDs[i], Payload: fmt.Appendf(nil, `{"n":%d}`, i)}
	}
	return testfactory.DeadLetters(t, b.db.Pool, letters...), msgIDs
}

// runUntilDone runs a worker until request id is done.
func (b *replayBundle) runUntilDone(t *testing.T, id int64) replay.Request {
	t.Helper()
	run(t, b.worker(t, replay.WorkerConfig{}))
	return b.waitFinished(t, id)
}

// TestOneOpenRequestPerDeadLetter makes two drafts of the same dead
// letters (a double click, two tabs) and submits both at once: one takes
// them, the other is refused naming it, and the database refuses a second
// holder whatever the code does. The target stream holds each message once.
func TestOneOpenRequestPerDeadLetter(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	ids, msgIDs := b.seedN(t, 3, "email.send", "one-open")
	for _, id := range ids { // same_operation: the requests wait for approval, holding their dead letters
		_, err := b.db.Pool.Exec(ctx, `UPDATE dead_letters SET operation_id = 'op-' || msg_id WHERE id = $1`, id)
		require.NoError(t, err)
	}
	batchA, draftsA := b.draft(t, oncall, ids...)
	batchB, draftsB := b.draft(t, oncall, ids...)
	require.Len(t, draftsA, 1)
	require.Len(t, draftsB, 1)

	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	for _, batch := range []string{batchA, batchB} {
		wg.Go(func() {
			_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "smtp relay fixed"}, quarantine.RequestMeta{})
			mu.Lock()
			errs[batch] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	won, lost := batchA, batchB
	winner, loser := draftsA[0].ID, draftsB[0].ID
	if errs[batchA] != nil {
		won, lost, winner, loser = batchB, batchA, draftsB[0].ID, draftsA[0].ID
	}
	require.NoError(t, errs[won], "one submit takes the dead letters")
	require.Error(t, errs[lost], "the other is refused")
	assert.Contains(t, quarantine.ErrorMessage(errs[lost]), fmt.Sprintf("replay request %d", winner), "the refusal names the request that holds them")

	// The database itself refuses a second holder.
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_items SET held = true WHERE request_id = $1`, loser)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	assert.Equal(t, "23505", pgErr.Code, "replay_items_one_open_request: %v", err)

	// Submitted again (unless the refusal above already did it), the
	// losing draft leaves its items out, with why, and, nothing left to
	// replay and all of it in the winner, is voided by that submit (fixux12:
	// it used to stay a draft until a third submit voided it).
	for range 2 {
		if mustRequest(t, b, loser).Status == replay.StatusVoid {
			break
		}
		var refused *replay.RefusedError
		_, err = b.replays.Submit(ctx, lost, oncall, replay.SubmitInput{Reason: "again"}, quarantine.RequestMeta{})
		require.ErrorAs(t, err, &refused)
		assert.Contains(t, refused.Reasons[loser], fmt.Sprintf("replay request %d", winner))
	}
	assert.Equal(t, replay.StatusVoid, mustRequest(t, b, loser).Status, "nothing left to replay")
	items, err := b.replays.Items(ctx, loser, 10)
	require.NoError(t, err)
	for _, it := range items {
		assert.Equal(t, replay.VerdictBlock, it.Verdict, "%+v", it)
		assert.Equal(t, replaypolicy.CheckInRequest, it.Check)
		assert.False(t, it.Held)
	}

	// A new selection of a held dead letter says who holds it.
	_, drafts := b.draft(t, oncall, ids[1])
	items, err = b.replays.Items(ctx, drafts[0].ID, 1)
	require.NoError(t, err)
	assert.Contains(t, items[0].SkipReason, fmt.Sprintf("replay request %d already holds this dead letter", winner))

	won1 := mustRequest(t, b, winner)
	_, err = b.replays.Approve(ctx, winner, approver1, replay.ApproveInput{IntentHex: won1.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	b.runUntilDone(t, winner)
	got := b.published(t)
	assert.Len(t, got, 3, "each dead letter published once")
	for i, id := range msgIDs {
		require.Contains(t, got, id)
		assert.Equal(t, fmt.Sprint(winner), got[id].Header.Get(replay.HeaderReplayRequest))
		assert.Equal(t, fmt.Sprintf(`{"n":%d}`, i), string(got[id].Data))
	}
	var held int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_items WHERE held`).Scan(&held))
	assert.Zero(t, held, "a request that ended holds nothing")
}

func mustRequest(t *testing.T, b *replayBundle, id int64) replay.Request {
	t.Helper()
	r, err := b.replays.Request(context.Background(), id)
	require.NoError(t, err)
	return r
}

// TestStaleDraftDoesNotPublishClosedItem drafts 50 dead letters, has a
// colleague discard the 7th, and submits: the submit is refused naming
// it, the draft leaves it out, and the second submit publishes the other
// 49 and never the 7th.
func TestStaleDraftDoesNotPublishClosedItem(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	ids, msgIDs := b.seedN(t, 50, "search.index_update", "stale")
	batch, drafts := b.draft(t, oncall, ids...)
	require.Equal(t, 50, drafts[0].ItemCount)
	_, err := b.store.Close(ctx, dlq.CloseInput{IDs: []int64{ids[6]}, To: dlq.StatusDiscarded, Reason: "duplicate of an earlier event", All: true},
		approver1, quarantine.RequestMeta{})
	require.NoError(t, err)

	_, err = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "indexer fixed"}, quarantine.RequestMeta{})
	var refused *replay.RefusedError
	require.ErrorAs(t, err, &refused, "a draft whose items changed is not submitted as it was")
	assert.Contains(t, refused.Reasons[drafts[0].ID], fmt.Sprintf("dead letter %d: rebuildable: this item was discarded", ids[6]))
	r := mustRequest(t, b, drafts[0].ID)
	assert.Equal(t, replay.StatusDraft, r.Status)
	assert.Equal(t, 49, r.ItemCount, "the draft now leaves it out")
	assert.Equal(t, 1, countAudit(t, b, "replay.draft.changed"))

	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "indexer fixed"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Equal(t, replay.StatusApproved, reqs[0].Status)
	b.runUntilDone(t, reqs[0].ID)
	got := b.published(t)
	assert.Len(t, got, 49)
	assert.NotContains(t, got, msgIDs[6], "the discarded item is never published")
	d, err := b.store.Get(ctx, ids[6])
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusDiscarded, d.Status)
}

// TestWorkerRechecksItemStatus approves a request and then changes its
// dead letters behind its back (as a path around the rules would): one is
// discarded, one loses its hold. The worker re-reads each item's dead
// letter in the claim and blocks both; only the untouched one is published.
func TestWorkerRechecksItemStatus(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	ids, msgIDs := b.seedN(t, 3, "search.index_update", "recheck")
	req := b.request(t, ids, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	testfactory.SetStatus(t, b.db.Pool, dlq.StatusDiscarded, ids[1])
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_items SET held = false WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, ids[2])
	require.NoError(t, err)

	done := b.runUntilDone(t, req.ID)
	assert.Equal(t, replay.StatusDoneWithProblems, done.Status, "two items were blocked: not done")
	got := b.published(t)
	assert.Len(t, got, 1)
	assert.Contains(t, got, msgIDs[0])
	var results []string
	rows, err := b.db.Pool.Query(ctx, `SELECT state || ': ' || result FROM replay_jobs WHERE request_id = $1 ORDER BY dead_letter_id`, req.ID)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		results = append(results, s)
	}
	require.Len(t, results, 3)
	assert.True(t, strings.HasPrefix(results[0], "replayed"), results[0])
	assert.Contains(t, results[1], "blocked: rebuildable: this item was discarded")
	assert.Contains(t, results[2], "blocked: rebuildable: this request no longer holds the dead letter")
	d, err := b.store.Get(ctx, ids[1])
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusDiscarded, d.Status, "a blocked item never overwrites what happened to its dead letter")
}

// TestEveryItemJudgedAtEveryStep puts the bad item away from the front of
// the request at each step: at draft (a system subject), at submit (closed
// since), at approve (closed behind the request's back) and at execution
// (its payload no longer the approved one). Each step refuses that item,
// never only the first, and the target stream holds exactly the good ones.
func TestEveryItemJudgedAtEveryStep(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()

	t.Run("Draft", func(t *testing.T) {
		ids, _ := b.seedN(t, 2, "search.index_update", "step-draft")
		sys := b.seedItem(t, "search.index_update", "step-draft-sys", nats.Header{dlq.HeaderOriginalSubject: {"$JS.API.STREAM.DELETE.APP"}}, "{}")
		_, drafts := b.draft(t, oncall, append(ids, sys)...) // the system subject is manual: a draft of its own
		byID := b.itemsOf(t, drafts)
		assert.Equal(t, replaypolicy.CheckSubject, byID[sys].Check)
		assert.Equal(t, replay.VerdictGo, byID[ids[1]].Verdict)
	})
	t.Run("Submit", func(t *testing.T) {
		ids, _ := b.seedN(t, 3, "search.index_update", "step-submit")
		batch, drafts := b.draft(t, oncall, ids...)
		_, err := b.store.Close(ctx, dlq.CloseInput{IDs: []int64{ids[2]}, To: dlq.StatusResolved, Reason: "fixed by hand", All: true}, oncall, quarantine.RequestMeta{})
		require.NoError(t, err)
		_, err = b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "r"}, quarantine.RequestMeta{})
		var refused *replay.RefusedError
		require.ErrorAs(t, err, &refused)
		assert.Contains(t, refused.Reasons[drafts[0].ID], fmt.Sprintf("dead letter %d", ids[2]))
	})
	t.Run("Approve", func(t *testing.T) {
		ids, _ := b.seedN(t, 3, "email.send", "step-approve")
		_, err := b.db.Pool.Exec(ctx, `UPDATE dead_letters SET operation_id = 'op-' || msg_id WHERE id = ANY($1)`, ids)
		require.NoError(t, err)
		req := b.request(t, ids, replay.SubmitInput{})
		require.Equal(t, replay.StatusPendingApproval, req.Status)
		testfactory.SetStatus(t, b.db.Pool, dlq.StatusDiscarded, ids[2])
		_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
		assert.Contains(t, quarantine.ErrorMessage(err), "this item was discarded")
		assert.Empty(t, b.jobStates(t, req.ID), "nothing approved, no job written")
	})
	t.Run("Execution", func(t *testing.T) {
		ids, msgIDs := b.seedN(t, 3, "search.index_update", "step-run")
		req := b.request(t, ids, replay.SubmitInput{})
		_, err := b.db.Pool.Exec(ctx, `UPDATE dead_letters SET payload = '{"n":"forged"}' WHERE id = $1`, ids[2])
		require.NoError(t, err)
		b.runUntilDone(t, req.ID)
		assert.Equal(t, map[string]int{"replayed": 2, "blocked": 1}, b.jobStates(t, req.ID))
		var result string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT result FROM replay_jobs WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, ids[2]).Scan(&result))
		assert.Contains(t, result, "is not the one approved")
		got := b.published(t)
		assert.Contains(t, got, msgIDs[0])
		assert.Contains(t, got, msgIDs[1])
		assert.NotContains(t, got, msgIDs[2], "a payload changed after approval is not published")
		assert.Len(t, got, 2, "only the good items of this test were published")
	})
}

// TestEditedPayloadNeedsApproverAndShowsDiff edits a payload in a
// rebuildable draft (which alone would replay at once): the edit needs a
// reason, the request then waits for an approver who is not the
// requester, the view shows the change as a diff, the audit has both
// hashes, and the replayed message carries the edited bytes under the
// original message id with Dlq-Payload-Edited.
func TestEditedPayloadNeedsApproverAndShowsDiff(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "edit-1", nil, `{"doc":"sku-1","price":10}`)
	batch, drafts := b.draft(t, oncall, id)
	draft := drafts[0]
	edited := []byte(`{"price": 12, "doc": "sku-1"}`)

	err := b.replays.EditPayload(ctx, draft.ID, id, oncall, replay.PayloadEdit{Payload: edited}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "an edit needs a reason: %v", err)
	err = b.replays.EditPayload(ctx, draft.ID, id, approver1, replay.PayloadEdit{Payload: edited, Reason: "x"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "only the requester edits")
	require.NoError(t, b.replays.EditPayload(ctx, draft.ID, id, oncall, replay.PayloadEdit{Payload: edited, Reason: "price was repriced upstream"}, quarantine.RequestMeta{}))

	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex with the new price"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	req := reqs[0]
	require.Equal(t, replay.StatusPendingApproval, req.Status, "an edited rebuildable item waits for an approver")
	assert.True(t, req.PayloadEdited)
	run(t, b.worker(t, replay.WorkerConfig{}))
	assert.Empty(t, b.jobStates(t, req.ID), "nothing runs before the approval")
	assert.Empty(t, b.published(t))

	v, err := b.replays.View(ctx, req.ID, approver1, replay.ViewOptions{Items: 10, Edits: 5})
	require.NoError(t, err)
	assert.Equal(t, replaypolicy.OneApprover, v.Decision.Requirement)
	assert.True(t, v.Decision.ActorCanApprove)
	assert.Contains(t, v.Decision.Reason, "a payload was edited")
	require.Len(t, v.Edits, 1)
	assert.Equal(t, "price was repriced upstream", v.Edits[0].Reason)
	assert.JSONEq(t, `{"doc":"sku-1","price":10}`, string(v.Edits[0].Original))
	diff := views.NewPayloadDiff(v.Edits[0].Original, v.Edits[0].Edited)
	assert.Equal(t, "json", diff.Kind)
	assert.Equal(t, 1, diff.Added, "only the price changed; key order and spaces do not count")
	assert.Equal(t, 1, diff.Removed)

	_, err = b.replays.Approve(ctx, req.ID, oncall, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "the requester cannot approve their own edit")
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	b.waitStatus(t, req.ID, replay.StatusDone)

	got := b.published(t)
	require.Contains(t, got, "edit-1", "the original message id")
	sum := sha256.Sum256(edited)
	assert.Equal(t, string(edited), string(got["edit-1"].Data), "the edited bytes, exactly")
	assert.Equal(t, hex.EncodeToString(sum[:]), got["edit-1"].Header.Get(replay.HeaderPayloadEdited))

	var before, after []byte
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT before, after FROM audit_log WHERE action = 'replay.edit_payload' AND outcome = 'ok'`).Scan(&before, &after))
	var bj, aj map[string]any
	require.NoError(t, json.Unmarshal(before, &bj))
	require.NoError(t, json.Unmarshal(after, &aj))
	orig := sha256.Sum256([]byte(`{"doc":"sku-1","price":10}`))
	assert.Equal(t, hex.EncodeToString(orig[:]), bj["original_sha256"])
	assert.Equal(t, hex.EncodeToString(orig[:]), bj["payload_sha256"])
	assert.Equal(t, hex.EncodeToString(sum[:]), aj["payload_sha256"])

	// same_operation payloads are never edited.
	mail := b.seedItem(t, "email.send", "edit-mail", nats.Header{dlq.HeaderOperationID: {"op-edit"}}, "{}")
	mreq := b.request(t, []int64{mail}, replay.SubmitInput{})
	err = b.replays.EditPayload(ctx, mreq.ID, mail, oncall, replay.PayloadEdit{Payload: []byte(`{"x":1}`), Reason: "r"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err))
}

// TestTargetSubjectBoundToTenant replays only to the tenant's own replay
// subjects: an acme dead letter aimed at initech's subjects, or at a
// subject acme has no pattern for, is refused at draft; a tenant with no
// patterns cannot replay at all (the sentence names the setting); and the
// worker checks again, so a request approved before the setting narrowed
// publishes nothing: its job waits for a worker whose setting allows it
// (review round 42: a worker's own setting blocked approved items for
// good).
func TestTargetSubjectBoundToTenant(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	subjects, err := replay.ParseSubjectAllowlist("app.{tenant}.>, acme=billing.acme.>")
	require.NoError(t, err)
	b.replays = replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: subjects})
	_, err = replay.ParseSubjectAllowlist("app.>")
	assert.ErrorContains(t, err, "has no {tenant} token", "a pattern for every tenant must be bound to the tenant")

	ok := b.seedItem(t, "search.index_update", "bound-ok", nil, "{}")
	other := b.seedItem(t, "search.index_update", "bound-initech", nats.Header{dlq.HeaderOriginalSubject: {"app.initech.search.index_update"}}, "{}")
	stray := b.seedItem(t, "search.index_update", "bound-stray", nats.Header{dlq.HeaderOriginalSubject: {"payments.acme.charge"}}, "{}")
	_, drafts := b.draft(t, oncall, ok, other, stray) // the stray subject is manual: a draft of its own
	why := skipReasonsOf(t, b.replays, drafts)
	assert.Empty(t, why[ok])
	assert.Contains(t, why[other], `subject "app.initech.search.index_update" is not in the replay allowlist of tenant "acme"`)
	assert.Contains(t, why[stray], "not in the replay allowlist")

	none, err := replay.ParseSubjectAllowlist("acme=app.acme.>")
	require.NoError(t, err)
	noGlobex := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: none})
	g := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "bound-globex"})
	_, gd := testfactory.Draft(t, noGlobex, oncall, g)
	gi, err := noGlobex.Items(ctx, gd[0].ID, 1)
	require.NoError(t, err)
	assert.Contains(t, gi[0].SkipReason, `no replay subjects are configured for tenant "globex" (REPLAY_SUBJECT_ALLOW)`)

	// Approved while allowed; the setting narrowed before the worker ran.
	late := b.seedItem(t, "search.index_update", "bound-late", nil, "{}")
	req := testfactory.Request(t, b.replays, oncall, []int64{late}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	narrowed, err := replay.ParseSubjectAllowlist("acme=billing.acme.>")
	require.NoError(t, err)
	w := replay.NewWorker(replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: narrowed}), b.js, b.auth, nil, replay.WorkerConfig{}, b.log)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"pending": 1}, b.jobStates(t, req.ID))
	var result string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT result FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&result))
	assert.Contains(t, result, `subject "app.acme.search.index_update" is not in the replay allowlist of tenant "acme" (REPLAY_SUBJECT_ALLOW: billing.acme.>) on this worker`)
	assert.Empty(t, b.published(t), "nothing reached a subject outside the tenant's")
}

// TestStrictestClassOfTypeAndSubject files a dead letter under an easy
// item type (search.index_update, rebuildable) aimed at a strict subject
// (app.acme.orders.refund, manual by a subject rule of dev/policy.toml):
// its class is manual, so it is not replayed directly but needs two
// approvers and the typed confirmation, and publishes once after them.
func TestStrictestClassOfTypeAndSubject(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := b.seedItem(t, "search.index_update", "strict-1", nats.Header{dlq.HeaderOriginalSubject: {"app.acme.orders.refund"}}, `{"refund":"all"}`)
	c := b.policy.Load().ClassOf("search.index_update", "app.acme.orders.refund")
	require.Equal(t, replaypolicy.Manual, c.Class)
	require.True(t, c.BySubject)

	batch, drafts := b.draft(t, oncall, id)
	require.Len(t, drafts, 1)
	assert.Equal(t, replaypolicy.Manual, drafts[0].Class)
	_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "r"}, quarantine.RequestMeta{})
	var refused *replay.RefusedError
	require.ErrorAs(t, err, &refused, "manual wants the typed confirmation")
	assert.Contains(t, refused.Reasons[drafts[0].ID], "REPLAY strict-1")

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status, "not replayed on one operator's word")
	d, err := b.replays.Decision(ctx, req.ID, approver1)
	require.NoError(t, err)
	assert.Equal(t, replaypolicy.TwoApprovers, d.Requirement)
	assert.Contains(t, d.Reason, `the target subject "app.acme.orders.refund" is manual by rule`)
	run(t, b.worker(t, replay.WorkerConfig{}))
	in := replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY strict-1"}
	d, err = b.replays.Approve(ctx, req.ID, approver1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.False(t, d.Ready)
	assert.Empty(t, b.published(t), "one approval is not enough")
	_, err = b.replays.Approve(ctx, req.ID, approver2, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	b.waitStatus(t, req.ID, replay.StatusDone)
	got := b.published(t)
	require.Len(t, got, 1)
	assert.Equal(t, "app.acme.orders.refund", got["strict-1"].Subject)
}

// TestSamePersonByVerifiedEmail: a second identity-provider account with
// the requester's verified email cannot approve the request (one person,
// two identities), and is audited as denied; nor can an account that
// claims the email unverified (whoever controls a second account controls
// whether its email is verified), yet neither may act as the requester
// (cancel); a real second person approves and the message is published
// once.
func TestSamePersonByVerifiedEmail(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	dana := quarantine.Actor{Issuer: "https://idp.example", Subject: "dana", Email: "dana@example.com", EmailVerified: true}
	danaElsewhere := quarantine.Actor{Issuer: "https://other-idp.example", Subject: "d-42", Email: "Dana@Example.com", EmailVerified: true}
	claims := quarantine.Actor{Issuer: "https://other-idp.example", Subject: "mallory", Email: "dana@example.com", EmailVerified: false}
	id := b.seedItem(t, "email.send", "person-1", nats.Header{dlq.HeaderOperationID: {"op-person"}}, "{}")
	require.NoError(t, b.auth.Directory.Remember(ctx, authz.User{Actor: dana, Groups: []string{"quarantine:acme:oncall"}}))
	req := testfactory.Request(t, b.replays, dana, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	assert.True(t, mustRequest(t, b, req.ID).Requester.EmailVerified, "the request remembers the email was verified")

	_, err := b.replays.Approve(ctx, req.ID, danaElsewhere, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	assert.Equal(t, 1, countAuditDenied(t, b, "replay.approve", req.ID))
	run(t, b.worker(t, replay.WorkerConfig{}))
	assert.Empty(t, b.jobStates(t, req.ID))
	assert.Empty(t, b.published(t))

	v, err := b.replays.View(ctx, req.ID, danaElsewhere, replay.ViewOptions{})
	require.NoError(t, err)
	assert.False(t, v.Reviewer, "no approve button for the same person")
	assert.False(t, v.Decision.ActorCanApprove)
	assert.False(t, v.Canceller, "another account is not the requester: a match by email takes rights away, never gives them")
	v, err = b.replays.View(ctx, req.ID, claims, replay.ViewOptions{})
	require.NoError(t, err)
	assert.False(t, v.Reviewer, "an unverified copy of the requester's email is kept from approving")
	assert.False(t, v.Canceller, "and grants nothing")
	_, err = b.replays.Approve(ctx, req.ID, claims, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(err), "%v", err)
	assert.Equal(t, quarantine.EFORBIDDEN, quarantine.ErrorCode(b.replays.Cancel(ctx, req.ID, danaElsewhere, "", quarantine.RequestMeta{})))

	_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	b.waitStatus(t, req.ID, replay.StatusDone)
	assert.Len(t, b.published(t), 1)

	// Two accounts of one approver count once towards manual's two.
	ref := b.seedItem(t, "orders.refund", "person-2", nil, "{}")
	mreq := b.request(t, []int64{ref}, replay.SubmitInput{})
	in := replay.ApproveInput{IntentHex: mreq.IntentHex(), Confirmation: "REPLAY person-2"}
	a1 := approver1
	a1.EmailVerified = true
	a1Elsewhere := quarantine.Actor{Issuer: "https://other-idp.example", Subject: "a1-bis", Email: approver1.Email, EmailVerified: true}
	_, err = b.replays.Approve(ctx, mreq.ID, a1, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	_, err = b.replays.Approve(ctx, mreq.ID, a1Elsewhere, in, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "the same person twice is one approval (%v)", err)
	mv, err := b.replays.View(ctx, mreq.ID, a1Elsewhere, replay.ViewOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, mv.Count.Have)
	assert.Empty(t, b.jobStates(t, mreq.ID))
}

// TestSelectionBoundedBeforeLoading selects more dead letters of a class
// than its bulk cap allows: the selection is refused before anything but
// their keys is read (a dead letter whose headers cannot even be decoded
// does not matter), and nothing is written. A selection within the cap
// copies no payload; the filter route reads ids only, capped; and workers
// claim no more payload bytes than their bound, yet publish everything.
func TestSelectionBoundedBeforeLoading(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	over := replaypolicy.ListedOverCap + 1
	ids, _ := b.seedN(t, over, "search.index_update", "bound")
	table, err := replaypolicy.Parse("capped.toml", []byte("[[rule]]\nitem_type = \"search.*\"\nclass = \"rebuildable\"\n[class.rebuildable]\nbulk_cap = 10\n"))
	require.NoError(t, err)
	capped := replay.New(b.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return table }, Subjects: testSubjects(t)})
	_, err = b.db.Pool.Exec(ctx, `UPDATE dead_letters SET headers = '{"not":"a header list"}' WHERE id = $1`, ids[500])
	require.NoError(t, err)

	_, err = capped.CreateDrafts(ctx, oncall, ids, []string{"acme"}, false, allowAll, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, quarantine.ErrorMessage(err), fmt.Sprintf("the selection holds %d rebuildable dead letters of tenant acme, and one rebuildable request takes at most 10", over))
	var requests int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_requests`).Scan(&requests))
	assert.Zero(t, requests, "nothing written")

	matching, err := replay.MatchingIDs(ctx, b.store, dlq.ListFilter{Tenants: []string{"acme"}, ItemType: "search.index_update"}, 100)
	assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "a filter over the limit is refused: %v", err)
	assert.Nil(t, matching)

	within := ids[:10]
	batch, _ := testfactory.Draft(t, capped, oncall, within...)
	var copied int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_items WHERE payload IS NOT NULL`).Scan(&copied))
	assert.Zero(t, copied, "payloads are read from the dead letters when published, never copied")
	reqs, err := capped.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "bounded"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now()`)
	require.NoError(t, err)

	w := replay.NewWorker(capped, b.js, b.auth, nil, replay.WorkerConfig{BatchBytes: 20}, b.log) // payloads {"n":0} ... of 7 bytes
	jobs, err := w.Claim(ctx)
	require.NoError(t, err)
	assert.Len(t, jobs, 2, "no more payload bytes than the bound in one claim")
	w.Judge(ctx, jobs)
	w.Publish(ctx, jobs, time.Now().Add(time.Minute))
	require.NoError(t, w.Record(ctx, jobs))
	run(t, w)
	b.waitStatus(t, reqs[0].ID, replay.StatusDone)
	assert.Len(t, b.published(t), 10)
}

// TestDraftsExpire leaves a draft unsubmitted past its time to live: the
// submit is refused, the sweeper voids it (audited), a fresh draft is left
// alone, and nothing is published.
func TestDraftsExpire(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	svc := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t), DraftTTL: time.Hour, Now: b.clock})
	old := b.seedItem(t, "search.index_update", "expire-old", nil, "{}")
	batch, drafts := testfactory.Draft(t, svc, oncall, old)
	// The old draft is 61 minutes old by the database's clock, which dated
	// it and judges its age; the fresh one a minute.
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_requests SET created_at = now() - interval '61 minutes' WHERE id = $1`, drafts[0].ID)
	require.NoError(t, err)
	fresh := b.seedItem(t, "search.index_update", "expire-fresh", nil, "{}")
	_, freshDrafts := testfactory.Draft(t, svc, oncall, fresh)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_requests SET created_at = now() - interval '1 minute' WHERE id = $1`, freshDrafts[0].ID)
	require.NoError(t, err)

	_, err = svc.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "too late"}, quarantine.RequestMeta{})
	assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	assert.Contains(t, quarantine.ErrorMessage(err), "expired 1h after it was made")

	n, err := svc.ExpireDrafts(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	r := mustRequest(t, b, drafts[0].ID)
	assert.Equal(t, replay.StatusVoid, r.Status)
	assert.Contains(t, r.StatusReason, "expired")
	assert.Equal(t, replay.StatusDraft, mustRequest(t, b, freshDrafts[0].ID).Status, "a fresh draft stays")
	assert.Equal(t, 1, countAudit(t, b, "replay.draft_expired"))
	n, err = svc.ExpireDrafts(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "swept once")
	_, err = b.worker(t, replay.WorkerConfig{}).RunOnce(ctx)
	require.NoError(t, err)
	assert.Empty(t, b.published(t))
}

func countAudit(t *testing.T, b *replayBundle, action string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = $1`, action).Scan(&n))
	return n
}

func countAuditDenied(t *testing.T, b *replayBundle, action string, requestID int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = $1 AND outcome = 'denied'
        AND object_id = $2`, action, fmt.Sprint(requestID)).Scan(&n))
	return n
}
