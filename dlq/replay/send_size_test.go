package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestSendFactsSizeIsTheWireSize: the size every stage judges against
// max_payload is the size of the message the worker sends (Message, with
// Nats-Msg-Id and Nats-Expected-Stream as Worker.send publishes it), to
// the byte when the stream and the request are known: a server whose
// max_payload is that size stores it, and a client told one byte less
// refuses to send it. A stage that knows neither counts the longest
// stream name and request id, never less.
func TestSendFactsSizeIsTheWireSize(t *testing.T) {
	t.Parallel()
	const stream = "REPLAY_TARGET_ORDERS_EU_WEST_1" // 30 characters
	hs := []dlq.HeaderValue{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Trace", Value: "a"}, {Name: "X-Trace", Value: "b"},
		{Name: "Nats-Rollup", Value: "all"}, {Name: "Dlq-Error", Value: "boom"}} // the last two are not forwarded
	payload := []byte(`{"order":` + strings.Repeat("7", 1000) + `}`)
	sum := sha256.Sum256(payload)
	const dl, req = 4242, 77
	ids := []string{"order-1", "op-1", "corr-1"}
	as := sentAs{deadLetterID: dl, requestID: req, edited: true, stream: stream}
	judged := sendFacts(hs, nil, "orders.acme.placed", int64(len(payload)), 0, as, ids...).Size

	// publish sends the replay as the worker does, to a server of
	// max_payload limit, returning the publish's error.
	publish := func(t *testing.T, limit int32) error {
		srv := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = limit })
		_, js := srv.Connect(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"orders.>"}})
		require.NoError(t, err)
		m, err := Message("orders.acme.placed", ids[0], ids[1], ids[2], dl, req, hs, payload, hex.EncodeToString(sum[:]))
		require.NoError(t, err)
		_, err = js.PublishMsg(ctx, m, jetstream.WithMsgID(ids[0]), jetstream.WithExpectStream(stream))
		if err == nil {
			assert.Equal(t, judged, dlq.WireSize(m), "the message sent is the size judged")
		}
		return err
	}

	t.Run("StoredAtTheLimit", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, publish(t, int32(judged)))
	})
	t.Run("RefusedAByteBelow", func(t *testing.T) {
		t.Parallel()
		require.ErrorIs(t, publish(t, int32(judged-1)), nats.ErrMaxPayload)
	})
	t.Run("UnknownStreamAndRequestCountTheLongest", func(t *testing.T) {
		t.Parallel()
		bound := sendFacts(hs, nil, "orders.acme.placed", int64(len(payload)), 0, sentAs{deadLetterID: dl, edited: true}, ids...).Size
		assert.Equal(t, judged+int64(server.JSMaxNameLen-len(stream))+int64(len("9223372036854775807")-len("77")), bound)
	})
	t.Run("UneditedHasNoEditMarker", func(t *testing.T) {
		t.Parallel()
		plain := sendFacts(hs, nil, "orders.acme.placed", int64(len(payload)), 0, sentAs{deadLetterID: dl, requestID: req, stream: stream}, ids...).Size
		assert.Equal(t, judged-int64(len(HeaderPayloadEdited+": \r\n")+2*sha256.Size), plain)
		assert.Equal(t, judged-plain, as.editMarker())
	})
}
