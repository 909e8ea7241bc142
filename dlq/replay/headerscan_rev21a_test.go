package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// twice is the header text that makes nats-server's search for
// Nats-Msg-Id give up (getHeaderKeyIndex): the key twice in a row.
const twice = "Nats-Msg-IdNats-Msg-Id"

// TestRevBroker21ForwardedHeaderHidesMsgIDFromBroker (review 21a): a
// replay forwards every header of the original but Nats-*, Dlq-*,
// Status and Description, judged by the header's NAME, and sends the
// producer's correlation and operation ids as its own Dlq-* headers. The
// broker finds Nats-Msg-Id (and Nats-Expected-Stream) by scanning the
// header block for the key's bytes (nats-server v2.15.2,
// getHeaderKeyIndex): a copy of the key that does not start a line is
// skipped, but when the next copy starts within two bytes of the end of
// that one (the key twice in a row, "Nats-Msg-IdNats-Msg-Id"), the scan
// gives up (index < 2) and the broker sees no message id at all, so it
// keeps no duplicate check for the publish. nats.go writes headers in map
// order, so in most publishes the producer's header comes before the
// replay's Nats-Msg-Id. A worker that dies after publishing and a
// survivor that republishes the same id inside the window
// (TestWorkerDiesAfterPublishBeforeCommit) then leave TWO copies in the
// target stream, both reported replayed: a producer's header value turns
// off the broker dedupe the replay relies on (invariant 4). Fifty items
// per case make the header order's luck irrelevant.
//
// The review asserted "stored once" after the dying worker and the
// survivor published. Such an item is now never published
// (replaypolicy.CheckBrokerKeyText: a person resolves it), so the test
// asserts "blocked, never stored twice" where it can be reached: a
// dead letter holding the text is left out of its draft, and the items of
// a request that froze the text before the rule existed (it is written
// into them after the submit) are judged blocked before any publish, by
// the dying worker and again by the survivor, which records it: neither
// stores one, let alone twice. With a plain
// value in the same header, every item is published and stored once
// (TestRevBroker21PlainHeaderStoredOnce).
func TestRevBroker21ForwardedHeaderHidesMsgIDFromBroker(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		letter func(msgID, text string) testfactory.Letter
		// freeze puts $2 into the items of request $1 as a release
		// before the rule froze them at its draft.
		freeze string
		header string // the header the block names
	}{
		"ForwardedHeaderValue": {
			letter: func(msgID, text string) testfactory.Letter {
				return testfactory.Letter{MsgID: msgID, CorrelationID: "corr-" + msgID, Headers: nats.Header{"X-Note": {text}}}
			},
			freeze: `UPDATE replay_items SET headers = jsonb_build_array(jsonb_build_object('name', 'X-Note', 'value', $2::text)) WHERE request_id = $1`,
			header: "X-Note",
		},
		"CorrelationID": {
			letter: func(msgID, text string) testfactory.Letter {
				return testfactory.Letter{MsgID: msgID, CorrelationID: text}
			},
			freeze: `UPDATE replay_items SET correlation_id = $2 WHERE request_id = $1`,
			header: "Dlq-Correlation-Id",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupReplay(t)
			ctx := context.Background()
			blocks := fmt.Sprintf(`header %q holds the text "Nats-" in its value`, c.header)

			// At the draft: left out, for a person.
			l := c.letter("doc-hidden-draft", twice)
			l.ItemType, l.Payload = "search.index_update", []byte("{}")
			dl := testfactory.DeadLetter(t, b.db.Pool, l)
			_, drafts := b.draft(t, oncall, dl)
			item := b.itemsOf(t, drafts)[dl]
			assert.Equal(t, replaypolicy.CheckBrokerKeyText, item.Check, item.SkipReason)
			assert.Contains(t, item.SkipReason, blocks)
			assert.Contains(t, item.SkipReason, "the broker would not see the message id")

			// At execution: a request that froze the text before the rule.
			const n = 50
			ids := make([]int64, n)
			msgIDs := make([]string, n)
			for i := range ids {
				msgIDs[i] = fmt.Sprintf("doc-hidden-%d", i)
				l := c.letter(msgIDs[i], "plain")
				l.ItemType, l.Payload = "search.index_update", []byte("{}")
				ids[i] = testfactory.DeadLetter(t, b.db.Pool, l)
			}
			req := b.request(t, ids, replay.SubmitInput{})
			_, err := b.db.Pool.Exec(ctx, c.freeze, req.ID, twice)
			require.NoError(t, err)
			_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now()`) // all due at once
			require.NoError(t, err)

			dying := b.worker(t, replay.WorkerConfig{Owner: "dying", Lease: time.Minute, Batch: n})
			dying.AfterPublish(func([]int64) bool { return false }) // judged (and published, if any went), then gone before recording
			got, err := dying.RunOnce(ctx)
			require.ErrorIs(t, err, replay.ErrStopped)
			require.Equal(t, n, got)
			for _, id := range msgIDs {
				require.Zero(t, b.publishedAs(t, id), "the dying worker published %s", id)
			}
			b.leaseRunsOut(t, req.ID)
			run(t, b.worker(t, replay.WorkerConfig{Owner: "survivor", Batch: n}))
			assert.Equal(t, replay.StatusDoneWithProblems, b.waitFinished(t, req.ID).Status)
			require.Equal(t, map[string]int{"blocked": n}, b.jobStates(t, req.ID), b.jobsText(t, req.ID))
			assert.Contains(t, b.jobsText(t, req.ID), blocks)
			stored := 0
			for _, id := range msgIDs {
				stored += b.publishedAs(t, id)
			}
			assert.Zero(t, stored, "items stored in the target stream under a header block that hides their Nats-Msg-Id (jobs: %s)", b.jobsText(t, req.ID))
		})
	}
}

// TestRevBroker21PlainHeaderStoredOnce: the review's control. The same
// header with a plain value, on the path of a worker that dies after
// publishing and a survivor that republishes the same ids inside the
// window: every item is stored once, the survivor's copy answered
// Duplicate by the broker.
func TestRevBroker21PlainHeaderStoredOnce(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const n = 50
	ids := make([]int64, n)
	msgIDs := make([]string, n)
	for i := range ids {
		msgIDs[i] = fmt.Sprintf("doc-plain-%d", i)
		ids[i] = b.seedItem(t, "search.index_update", msgIDs[i], nats.Header{"X-Note": {"plain"}}, "{}")
	}
	req := b.request(t, ids, replay.SubmitInput{})
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now()`) // all due at once
	require.NoError(t, err)
	dying := b.worker(t, replay.WorkerConfig{Owner: "dying", Lease: time.Minute, Batch: n})
	dying.AfterPublish(func([]int64) bool { return false }) // published, then gone before recording
	got, err := dying.RunOnce(ctx)
	require.ErrorIs(t, err, replay.ErrStopped)
	require.Equal(t, n, got)
	b.leaseRunsOut(t, req.ID)
	run(t, b.worker(t, replay.WorkerConfig{Owner: "survivor", Batch: n}))
	b.waitFinished(t, req.ID)
	for _, id := range msgIDs {
		assert.Equal(t, 1, b.publishedAs(t, id), "message %s (jobs: %s)", id, b.jobsText(t, req.ID))
	}
}

// TestRevBroker21ForwardedHeaderLostPubAckStoredTwice (review 21a): the
// same producer header on the path of a lost PubAck
// (TestLostPubAckReconciled): the broker stored the first publish, its
// answer never came, and the retry "under the same id, inside the
// window" is stored again instead of answered Duplicate, so the target
// stream holds the item twice while the console says replayed once.
//
// The review asserted "stored once" after the retries. Such an item is
// now never published (replaypolicy.CheckBrokerKeyText), so the test
// asserts "blocked, never stored": the items of a request that froze the
// header before the rule existed are blocked by the worker before any
// publish, no answer is ever lost, and nothing is retried.
func TestRevBroker21ForwardedHeaderLostPubAckStoredTwice(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const n = 50
	ids := make([]int64, n)
	msgIDs := make([]string, n)
	for i := range ids {
		msgIDs[i] = fmt.Sprintf("doc-lost-hidden-%d", i)
		ids[i] = b.seedItem(t, "search.index_update", msgIDs[i], nats.Header{"X-Note": {"plain"}}, "{}")
	}
	req := b.request(t, ids, replay.SubmitInput{})
	_, err := b.db.Pool.Exec(ctx, `UPDATE replay_items SET headers = jsonb_build_array(jsonb_build_object('name', 'X-Note', 'value', $2::text))
        WHERE request_id = $1`, req.ID, twice) // frozen before the rule
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now()`) // all due at once
	require.NoError(t, err)
	w := b.worker(t, replay.WorkerConfig{Retry: 50 * time.Millisecond, Batch: n})
	acks := 0
	w.OnAck(func(job int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		acks++
		return nil, context.DeadlineExceeded // the broker stored it; the ack never came
	})
	wait.Until(t, "the request to finish", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		r, err := b.replays.Request(ctx, req.ID)
		require.NoError(t, err)
		return r.Status == replay.StatusDone || r.Status == replay.StatusDoneWithProblems
	})
	require.Equal(t, map[string]int{"blocked": n}, b.jobStates(t, req.ID), b.jobsText(t, req.ID))
	assert.Contains(t, b.jobsText(t, req.ID), `header "X-Note" holds the text "Nats-" in its value`)
	assert.Zero(t, acks, "no publish, so no answer to lose")
	stored := 0
	for _, id := range msgIDs {
		stored += b.publishedAs(t, id)
	}
	assert.Zero(t, stored, "items stored in the target stream under a header block that hides their Nats-Msg-Id (jobs: %s)", b.jobsText(t, req.ID))
}
