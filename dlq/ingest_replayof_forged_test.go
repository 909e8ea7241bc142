package dlq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestAdvisoryForgedReplayClaimDoesNotChooseOperationID (review): the
// console replays a dead letter of acme (it sends Nats-Msg-Id refund-7,
// Dlq-Replay-Of <id> and the dead letter's own operation id, op-real, on
// the tenant's subject, where any of its publishers may read them). A
// publisher of acme's watched stream then sends a poison message with the
// same Nats-Msg-Id and Dlq-Replay-Of, and a Dlq-Operation-Id of its
// choosing. Its consumer gives up on it; the advisory's record claims to be
// the console's replay, linkReplays confirms the claim (a replayed dead
// letter of that tenant and message id), and confirmReplayContext takes the
// publisher's operation id: a same_operation replay of it would go out
// under an operation id no replay of the console ever sent. What a
// confirmed replay carries is what the console sent: op-real.
func TestAdvisoryForgedReplayClaimDoesNotChooseOperationID(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	origin := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "refund-7",
		OperationID: "op-real", At: r.daysAgo(3)})
	req := testfactory.Request(t, r.replays, replayRequester, []int64{origin}, replay.SubmitInput{})
	published(t, r.db.Pool, req.ID, origin)

	ws, err := dlq.ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	now := time.Now().UTC()
	adv := dlq.Advisory{Type: "io.nats.jetstream.advisory.v1.terminated", Timestamp: now, Stream: "ORDERS", Consumer: "refunder",
		StreamSeq: 99, Deliveries: 5}
	raw := fmt.Sprintf(`{"type":%q,"stream":"ORDERS","consumer":"refunder","stream_seq":99,"deliveries":5}`, adv.Type)
	orig := &dlq.Original{Subject: "app.acme.search.index_update", Data: []byte(`{"refund":"forged"}`), Time: now.Add(-time.Second),
		Header: map[string][]string{
			dlq.HeaderNatsMsgID:     {"refund-7"},
			dlq.HeaderReplayOf:      {fmt.Sprint(origin)},
			dlq.HeaderOperationID:   {"op-chosen-by-publisher"},
			dlq.HeaderCorrelationID: {"corr-chosen-by-publisher"},
		}}
	rec := dlq.ParseAdvisory(ws[0], adv, orig, []byte(raw), dlq.Received{Stream: "DLQ_ADVISORIES", Seq: 1, Time: now})
	_, err = dlq.NewStore(r.db.Pool).Insert(ctx, []dlq.Record{rec})
	require.NoError(t, err)
	d, err := dlq.NewStore(r.db.Pool).BySource(ctx, "ORDERS", 99, "refunder")
	require.NoError(t, err)
	assert.NotEqual(t, "op-chosen-by-publisher", d.OperationID, "an operation id no replay of the console sent")
	assert.NotEqual(t, "corr-chosen-by-publisher", d.CorrelationID)
	require.NotNil(t, d.ReplayOf, "the claim holds: the console replayed that dead letter")
	assert.Equal(t, origin, *d.ReplayOf)
	assert.Equal(t, "op-real", d.OperationID, "what the console sent with its replay")
	assert.Empty(t, d.CorrelationID, "what the console sent with its replay: none")
	assert.Contains(t, d.Flags, "upstream:dlq_headers", "the headers that say otherwise are named")
}
