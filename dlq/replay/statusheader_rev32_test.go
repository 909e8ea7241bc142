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
)

// TestRevReplay32StatusHeaderKeptWithAPayload: a replay left out Status and
// Description, in any case, whatever the message: nats.go reads a
// server's status line into them, but only a message with no payload is
// taken for one (TestRevBroker20StatusHeaderReplayNeverReachesConsumer).
// An order event carrying "Status: cancelled" beside its payload was
// replayed without it, unseen by the approver, and its consumer fell back
// to a default: another effect than the original's. With a payload they
// are sent as they came, and a consumer of the target reads them. With
// none the item is blocked (the replay left them out, unseen by the
// approver, whose intent still named them).
func TestRevReplay32StatusHeaderKeptWithAPayload(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const subject = "app.acme.search.index_update"
	id := b.seedItem(t, "search.index_update", "rr32-status", nats.Header{
		"Status": {"cancelled"}, "status": {"x"}, "Description": {"by the customer"},
	}, `{"order":"rr32"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approval")
	items, err := b.replays.Items(ctx, req.ID, 10)
	require.NoError(t, err)
	require.Len(t, items, 1)
	var frozen []string
	for _, h := range items[0].Headers {
		frozen = append(frozen, h.Name+": "+h.Value)
	}
	assert.Subset(t, frozen, []string{"Status: cancelled", "status: x", "Description: by the customer"}, "what the approver reads is what is sent")

	run(t, b.worker(t, replay.WorkerConfig{}))
	require.Equal(t, replay.StatusDone, b.waitFinished(t, req.ID).Status, b.jobsText(t, req.ID))
	cons, err := b.target.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "rr32-status", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: subject,
	})
	require.NoError(t, err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(3*time.Second))
	require.NoError(t, err)
	var received []jetstream.Msg
	for m := range batch.Messages() {
		received = append(received, m)
	}
	require.NoError(t, batch.Error())
	require.Len(t, received, 1)
	h := received[0].Headers()
	assert.Equal(t, fmt.Sprint(id), h.Get(replay.HeaderReplayOf))
	assert.Equal(t, []string{"cancelled"}, h.Values("Status"), "the application's header, sent as it came")
	assert.Equal(t, []string{"x"}, h.Values("status"))
	assert.Equal(t, []string{"by the customer"}, h.Values("Description"))
	assert.Equal(t, `{"order":"rr32"}`, string(received[0].Data()))

	empty := b.seedItem(t, "search.index_update", "rr32-status-empty", nats.Header{"sTaTuS": {"409"}}, "")
	check, reason := draftVerdict(t, b, empty)
	assert.Equal(t, replaypolicy.CheckUnsendable, check)
	assert.Contains(t, reason, `header "sTaTuS" on a message with no payload is what NATS clients read a server's status into`)
}
