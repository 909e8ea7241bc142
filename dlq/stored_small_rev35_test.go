package dlq

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev35KnownSmallRereadAsksJetStreamOnce: on a NATS server whose
// max_payload is over 8 MiB, a dead letter read again from its stream
// (its header block not read whole by the client, or a payload it may
// lack) was read as a NATS message even when its delivery showed it to be
// small: the stream's info, a consumer made, its message, the consumer
// deleted, and then again through the JSON API when the block was to be
// read exactly. A producer sending many such dead letters made the meta
// leader make and delete a consumer for each while their batch waited. A
// message known to be small enough is now read through the JSON API at
// once: one request.
func TestRev35KnownSmallRereadAsksJetStreamOnce(t *testing.T) {
	t.Parallel()
	b := bigPayloadBundle(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders", Header: nats.Header{"X": {"y"}}, Data: []byte("small")})

	api, err := b.nc.SubscribeSync("$JS.API.>")
	require.NoError(t, err)
	require.NoError(t, b.nc.Flush())
	st, err := readStoredAtMost(ctx, b.js, "DLQ", 1, false, 200)
	require.NoError(t, err)
	assert.Equal(t, "small", string(st.Data))
	require.NoError(t, b.nc.Flush())
	var asked []string
	for n, _, _ := api.Pending(); n > 0; n, _, _ = api.Pending() {
		m, err := api.NextMsg(0)
		require.NoError(t, err)
		asked = append(asked, m.Subject)
	}
	require.NotEmpty(t, asked, "the subscription saw the read's request")
	assert.Equal(t, []string{"$JS.API.STREAM.MSG.GET.DLQ"}, asked, "the requests of one read of a small message: %s", strings.Join(asked, ", "))
}
