package dlq

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
)

// TestReadStoredBigReadsAsANATSMessage: on a server that takes messages
// over storedJSONMax, readStored reads a large message by a direct get
// when its stream allows them, else by a consumer of its own, whole,
// with its headers, subject, sequence and stored time, without the
// server closing the connection; a sequence the stream does not hold is
// ErrMsgNotFound, and with next the message after it is read. A header
// block the client does not read whole is read exactly when the message
// is at most storedJSONMax, and fails (not as gone) when it is larger.
func TestReadStoredBigReadsAsANATSMessage(t *testing.T) {
	t.Parallel()
	ns := natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 64 << 20 })
	for _, tc := range []struct {
		name   string
		direct bool
	}{{"DirectGet", true}, {"Consumer", false}} {
		t.Run(tc.name, func(t *testing.T) {
			nc, js := ns.Connect(t)
			var dropped atomic.Int64
			nc.SetDisconnectErrHandler(func(_ *nats.Conn, _ error) { dropped.Add(1) })
			ctx := context.Background()
			name := "BIG" + tc.name
			s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"big." + tc.name + ".>"},
				Storage: jetstream.MemoryStorage, AllowDirect: tc.direct})
			require.NoError(t, err)
			_, err = js.Publish(ctx, "big."+tc.name+".small", []byte("x"))
			require.NoError(t, err)
			payload := bytes.Repeat([]byte("y"), 40<<20)
			m := nats.NewMsg("big." + tc.name + ".acme")
			m.Header.Set("X-A", "b")
			m.Header.Add("Nats-Subject", "a producer's own")
			m.Data = payload
			ack, err := js.PublishMsg(ctx, m)
			require.NoError(t, err)

			st, err := readStored(ctx, js, name, ack.Sequence, false)
			require.NoError(t, err)
			assert.Equal(t, "big."+tc.name+".acme", st.Subject)
			assert.Equal(t, ack.Sequence, st.Seq)
			assert.False(t, st.Time.IsZero())
			assert.Nil(t, st.Header)
			assert.Equal(t, nats.Header{"X-A": {"b"}, "Nats-Subject": {"a producer's own"}}, st.Headers)
			assert.True(t, bytes.Equal(payload, st.Data), "payload of %d bytes read whole", len(st.Data))

			_, err = readStored(ctx, js, name, 99, false)
			assert.True(t, errors.Is(err, jetstream.ErrMsgNotFound), "%v", err)
			require.NoError(t, s.DeleteMsg(ctx, 1))
			st, err = readStored(ctx, js, name, 1, true)
			require.NoError(t, err)
			assert.Equal(t, ack.Sequence, st.Seq, "the next one")
			_, err = readStored(ctx, js, name, 1, false)
			assert.True(t, errors.Is(err, jetstream.ErrMsgNotFound), "%v", err)

			// A header block the client does not read whole (it skips a
			// line with an empty name): read exactly through the JSON API
			// when the message is small enough, refused when it is not.
			raw := ns.DialRaw(t)
			block := []byte("NATS/1.0\r\nX-A: b\r\n: hidden from the client\r\n\r\n")
			small, err := raw.Publish("big."+tc.name+".odd", block, []byte("z"))
			require.NoError(t, err)
			st, err = readStored(ctx, js, name, small.Seq, false)
			require.NoError(t, err)
			assert.Equal(t, block, st.Header, "the block as stored")
			assert.Nil(t, st.Headers)
			assert.Equal(t, []byte("z"), st.Data)
			large, err := raw.Publish("big."+tc.name+".odd", block, bytes.Repeat([]byte("z"), storedJSONMax+1))
			require.NoError(t, err)
			_, err = readStored(ctx, js, name, large.Seq, false)
			require.Error(t, err)
			assert.False(t, errors.Is(err, jetstream.ErrMsgNotFound), "not gone: %v", err)
			assert.Contains(t, err.Error(), "too large")
			assert.Zero(t, dropped.Load(), "the server closed the connection")
		})
	}
}
