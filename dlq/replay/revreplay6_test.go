package replay_test

import (
	"context"
	"encoding/json"
	"strconv"
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

// TestRevReplay6RepublishAnsweredByACopyOnAnotherSubject: a person settles
// an item that needs reconciliation as "not applied, republish". The
// republish is a first attempt; the broker answers Duplicate, and the
// worker takes the message it keeps as "this replay's own earlier publish"
// (replaypolicy.OursKept) because it carries this item's Dlq-Replay-Of,
// this request's Dlq-Replay-Request and the approved payload, and was
// stored after the job's first publish. Nothing asks on which subject it
// was stored. The target stream APP takes app.> (every tenant's subjects,
// as the shipped allowlist pattern app.{tenant}.> lays them out): anyone
// who may publish on another subject APP takes, and reads the earlier
// replay there (its ids and payload are in its headers and body), stores
// a copy of it under another subject once the earlier publish has left the
// duplicate window (which is why the item needs a person at all). The
// republish is then dropped, nothing reaches app.acme.*, and the item, its
// dead letter and the request read "replayed": the person who said "not
// applied, republish" is told it was republished.
func TestRevReplay6RepublishAnsweredByACopyOnAnotherSubject(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	short := jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second}
	_, err := b.js.UpdateStream(ctx, short)
	require.NoError(t, err)

	const msgID = "rr6-copy-1"
	payload := []byte(`{"doc":"rr6"}`)
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID,
		CorrelationID: "corr-" + msgID, Payload: payload, At: time.Now().Add(-2 * time.Hour)})
	const subject = "app.acme.search.index_update"
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)

	// The publish lands but no PubAck comes back, ever: past the (short)
	// window the item needs a person.
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1<<30)
	wait.Until(t, "the item to need reconciliation", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State == "needs_reconciliation"
	})
	require.Equal(t, 1, b.onSubject(t, subject), "the earlier publish landed once")

	// Someone who publishes on another subject APP takes copies that
	// publish, once its id has left the window.
	forged := &nats.Msg{Subject: "app.other.copy", Data: payload, Header: nats.Header{}}
	forged.Header.Set(replay.HeaderReplayOf, strconv.FormatInt(id, 10))
	forged.Header.Set(replay.HeaderReplayRequest, strconv.FormatInt(req.ID, 10))
	wait.Until(t, "the copy to be stored", time.Minute, func() bool {
		ack, err := b.js.PublishMsg(ctx, forged, jetstream.WithMsgID(msgID))
		require.NoError(t, err)
		return !ack.Duplicate
	})
	// The operator lengthens the window again (or it was long and the
	// earlier publish simply aged out of it).
	long := short
	long.Duplicates = time.Hour
	_, err = b.js.UpdateStream(ctx, long)
	require.NoError(t, err)

	require.NoError(t, b.replays.Reconcile(ctx, req.ID, id, approver1, replay.ReconcileInput{Choice: replaypolicy.Republish,
		Note: "the index has no document rr6: not applied"}, quarantine.RequestMeta{}))

	w2 := b.worker(t, replay.WorkerConfig{})
	wait.Until(t, "the republish to be decided", time.Minute, func() bool {
		_, err := w2.RunOnce(ctx)
		require.NoError(t, err)
		s := b.job(t, req.ID, id).State
		return s != "pending" && s != "claimed" // decided by a claim: published, deferred, or anything else
	})
	j := b.job(t, req.ID, id)
	delivered := b.onSubject(t, subject) - 1
	var status string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM dead_letters WHERE id = $1`, id).Scan(&status))
	if j.State == "replayed" || status == string(dlq.StatusReplayed) {
		assert.Equal(t, 1, delivered, "the republish is shown replayed (%s) and the dead letter %s, but nothing new reached %s: "+
			"the message the broker keeps is a copy stored on another subject", j.Result, status, subject)
	}
}

// TestRevReplay6IdsWithBlanksGoOutAsOtherIds: ingest keeps a producer's
// message and operation ids exactly, blanks at either end included (the
// confirm phrase shows such an id quoted, `REPLAY "rr6-blank "`), and a
// replay promises to publish under the original ids. The NATS client the
// worker publishes with trims every header value it writes, and nothing
// judges that (sendFacts flags only a line break inside an id): the
// broker stores the replay as Nats-Msg-Id "rr6-blank" and Dlq-Operation-Id
// "rr6-op", not the ids the original carried. The broker keys its
// duplicate window on the bytes it received (a producer on another client
// stored the original under "rr6-blank "), and so does any consumer that
// reads the header as sent: the replay is another message, another
// operation, to them.
func TestRevReplay6IdsWithBlanksGoOutAsOtherIds(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID, opID = "rr6-blank ", "rr6-op "
	id := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID, OperationID: opID,
		CorrelationID: "corr-rr6", Payload: []byte(`{"doc":"rr6"}`)})
	var storedMsg, storedOp string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT msg_id, operation_id FROM dead_letters WHERE id = $1`, id).Scan(&storedMsg, &storedOp))
	require.Equal(t, msgID, storedMsg, "ingest keeps the id exactly")
	require.Equal(t, opID, storedOp, "ingest keeps the id exactly")

	// Sending the ids as they are, or refusing the item (at the draft, the
	// submit or the worker) as one the client would send changed, both
	// keep the promise; publishing other ids does not.
	batch, _ := b.draft(t, oncall, id)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "consumer fixed"}, quarantine.RequestMeta{})
	if err == nil && len(reqs) == 1 && reqs[0].Status == replay.StatusApproved {
		run(t, b.worker(t, replay.WorkerConfig{}))
		b.waitFinished(t, reqs[0].ID)
	}
	if b.onSubject(t, "app.acme.search.index_update") == 0 {
		return // refused, nothing sent under other ids
	}

	// The message as the broker stored it, header bytes and all.
	reply, err := b.nc.Request("$JS.API.STREAM.MSG.GET.APP", []byte(`{"last_by_subj":"app.acme.search.index_update"}`), 10*time.Second)
	require.NoError(t, err)
	var got struct {
		Message struct {
			Hdrs []byte `json:"hdrs"`
		} `json:"message"`
	}
	require.NoError(t, json.Unmarshal(reply.Data, &got))
	raw := string(got.Message.Hdrs)
	assert.Contains(t, raw, "\r\n"+dlq.HeaderNatsMsgID+": "+msgID+"\r\n", "the original message id, as the dead letter holds it; stored: %q", raw)
	assert.Contains(t, raw, "\r\n"+dlq.HeaderOperationID+": "+opID+"\r\n", "the original operation id, as the dead letter holds it; stored: %q", raw)
}
