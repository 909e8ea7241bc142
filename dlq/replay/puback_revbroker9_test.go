package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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
