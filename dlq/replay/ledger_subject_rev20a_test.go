package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevLedger20DedupeSkippedByReplayOfAnotherStreamsMessage: severity
// medium. JetStream scopes a Nats-Msg-Id to its stream: two services of one
// tenant may each use a business key ("order-123") as the message id of
// their own messages, on their own subjects and streams (the search indexer
// on SEARCH, the analytics pipeline on EVENTS). Both dead-letter. The
// replay ledger is asked by (tenant, message id) alone
// (ledgerTerms.replayedByMsg: no subject, no stream), so once the search
// item is replayed (rebuildable: one operator, direct), the analytics event
// - a different message, never re-published, on a subject and stream that
// never saw any replay - is judged "already replayed successfully by
// replay request N; the item is skipped, not re-sent" at draft, submit and
// execution. The console reports an effect that did not happen
// (invariant 13), and the event is lost: a dedupe item is promised one
// replay of ITS message. A producer of the tenant can cause this on
// purpose: file a rebuildable dead letter under another service's message
// id, and the first bulk replay of the easy class silently cancels the
// other's replay.
func TestRevLedger20DedupeSkippedByReplayOfAnotherStreamsMessage(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	// Two streams, as two services have them: APP now takes only the search
	// subjects, EVENTS the analytics ones. Each has its own duplicate
	// window, so each message id is its own stream's.
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.acme.search.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"app.acme.analytics.>"}, Duplicates: time.Second})

	const id = "order-123"
	search := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: id, CorrelationID: "corr-search",
		Payload: []byte(`{"doc":"order-123"}`), At: time.Now().Add(-2 * time.Hour)})
	event := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: id, CorrelationID: "corr-event",
		Payload: []byte(`{"event":"order_viewed"}`), At: time.Now().Add(-2 * time.Hour)})

	req := b.request(t, []int64{search}, replay.SubmitInput{})
	require.Equal(t, replaypolicy.Rebuildable, req.Class)
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, req.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, "app.acme.search.index_update"), "the search item was replayed to its own subject")

	info, err := events.Info(ctx, jetstream.WithSubjectFilter("app.acme.analytics.event"))
	require.NoError(t, err)
	require.Zero(t, info.State.Subjects["app.acme.analytics.event"], "nothing was ever replayed to the analytics subject")

	// The analytics event's own replay: nothing of it was ever published.
	_, drafts := b.draft(t, oncall, event)
	items := b.itemsOf(t, drafts)
	require.Contains(t, items, event)
	assert.Empty(t, items[event].SkipReason,
		"the analytics event (subject app.acme.analytics.event, stream EVENTS) was never replayed, yet its draft says it was: a replay of "+
			"another message of the same id on another subject and stream counts for it")
}

// TestRevLedger20DedupeRequestDoneWithNothingPublished: the same defect
// where it shows most: both replays are requested before either runs (each
// direct, one operator), and the search item's job comes first. The worker
// publishes it, then skips the analytics event as "already replayed" by
// the search request (whether it does depends only on which job a worker
// reaches first: run together, both go): the event's request ends done,
// green, its item "skipped", its dead letter marked replayed, and nothing
// was ever published to app.acme.analytics.event (invariant 13: "replayed"
// and "skipped" must be what happened).
func TestRevLedger20DedupeRequestDoneWithNothingPublished(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.acme.search.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"app.acme.analytics.>"}, Duplicates: time.Second})

	const id = "order-456"
	search := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: id, CorrelationID: "corr-search",
		Payload: []byte(`{"doc":"order-456"}`), At: time.Now().Add(-2 * time.Hour)})
	event := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "analytics.event", MsgID: id, CorrelationID: "corr-event",
		Payload: []byte(`{"event":"order_viewed"}`), At: time.Now().Add(-2 * time.Hour)})
	first := b.request(t, []int64{search}, replay.SubmitInput{})
	second := b.request(t, []int64{event}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, first.Status)
	require.Equal(t, replaypolicy.Dedupe, second.Class)
	require.Equal(t, replay.StatusApproved, second.Status)

	// The event's job comes later (its slot at the request's rate, a
	// worker that claims the search request first): held back here until
	// the search item is replayed, then due.
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() + interval '1 hour' WHERE request_id = $1`, second.ID)
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))
	b.waitStatus(t, first.ID, replay.StatusDone)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, second.ID)
	require.NoError(t, err)
	done := b.waitFinished(t, second.ID)

	info, err := events.Info(ctx, jetstream.WithSubjectFilter("app.acme.analytics.event"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.State.Subjects["app.acme.analytics.event"],
		"request %d ended %s (jobs: %v; %s) yet the analytics event was never published: only another stream's message of the same id was",
		second.ID, done.Status, b.jobStates(t, second.ID), b.jobsText(t, second.ID))
	var status string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM dead_letters WHERE id = $1`, event).Scan(&status))
	// Before the fix it was marked replayed with nothing published; now it
	// is, because the event itself was published (checked above).
	assert.Equal(t, "replayed", status, "the analytics event's dead letter is replayed once its own message was published")
}
