package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevBroker9AnswerFromNoStreamIsNotReplayed: the target stream no
// longer takes the item's subject (events.acme.> is stored by no stream),
// but a plain NATS subscriber of the subject answers the publish's reply
// inbox with a body shaped like a PubAck. Nothing was stored by any
// stream, yet the worker takes the first answer on its inbox as the
// broker's word: the item is recorded "replayed: ... stored as EVENTS:7"
// and written to the replay ledger (a dedupe item is then skipped by
// every later replay). Invariant 13: "replayed" means the broker stored
// our publish of that item; a PubAck naming a stream that does not store
// the subject (or any stream other than the one the worker judged the
// publish by) is not proof of that.
func TestRevBroker9AnswerFromNoStreamIsNotReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	subject := "events.acme.search.index_update"
	sub, err := b.nc.Subscribe("events.acme.>", func(m *nats.Msg) {
		if m.Reply != "" {
			_ = m.Respond([]byte(`{"stream":"EVENTS","seq":7}`)) // not a broker: a subscriber that answers requests
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, b.nc.Flush())

	id := b.seedItem(t, "search.index_update", "forged-ack-1", nats.Header{dlq.HeaderOriginalSubject: {subject}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	run(t, b.worker(t, replay.WorkerConfig{Retry: 50 * time.Millisecond}))
	b.waitFinished(t, req.ID)

	_, err = b.js.StreamNameBySubject(context.Background(), subject)
	require.Error(t, err, "no stream stores the subject: nothing can have been stored")
	j := b.job(t, req.ID, id)
	assert.NotEqual(t, "replayed", j.State, "recorded replayed though no stream stored it: %s", j.Result)
	var ledger int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM replay_ledger WHERE request_id = $1 AND dead_letter_id = $2`, req.ID, id).Scan(&ledger))
	assert.Zero(t, ledger, "the replay ledger holds a replay no stream stored")
}

// TestRevBroker9PubAckFromAnotherStreamIsNotReplayed: the worker judges the
// publish of app.acme.search.index_update by stream APP (its window, its
// dedupe), but the account maps that subject elsewhere (an account subject
// mapping added by an operator), so the broker stores the publish in stream
// OTHER under other.search. The PubAck names OTHER; a first attempt takes
// any PubAck as "replayed" without comparing its stream with the one it
// judged the publish by (a retry does: otherStream), so the console says
// "replayed" and the ledger skips the item for good, though nothing reached
// the original subject or the stream its consumers read.
func TestRevBroker9PubAckFromAnotherStreamIsNotReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	subject := "app.acme.search.index_update"
	other := b.createStream(t, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}})
	id := b.seedItem(t, "search.index_update", "mapped-ack-1", nats.Header{dlq.HeaderOriginalSubject: {subject}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.NoError(t, b.ns.GlobalAccount().AddMapping(subject, "other.search"))
	run(t, b.worker(t, replay.WorkerConfig{Retry: 50 * time.Millisecond}))
	b.waitFinished(t, req.ID)

	assert.Zero(t, b.onSubject(t, subject), "nothing reached APP")
	info, err := other.Info(context.Background())
	require.NoError(t, err)
	// Sent expecting APP (the stream the worker judged it by), the publish
	// is refused by OTHER: nothing lands where the subject's consumers do
	// not read.
	assert.Zero(t, info.State.Msgs, "OTHER stored a publish sent expecting APP")
	j := b.job(t, req.ID, id)
	assert.NotEqual(t, "replayed", j.State, "recorded replayed though the PubAck names another stream than the one judged: %s", j.Result)
}
