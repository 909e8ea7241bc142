package dlq

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIngestStatusHeaderDeadLettersStored: a dead letter with no payload
// and a Status header looks, to the NATS client's pull consumer, like the
// server's own status messages: 400 and "409 Consumer Deleted" stop its
// Consume, "408" with a bad pending count too, and any other status makes
// it drop the message without handing it on. Every one of them is stored,
// with its headers, and dead letters sent after them are stored too.
func TestIngestStatusHeaderDeadLettersStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start(t, IngestConfig{}, nil)

	hostile := []nats.Header{
		{"Status": {"400"}, "Description": {"Bad Request"}},
		{"Status": {"409"}, "Description": {"Consumer Deleted"}},
		{"Status": {"408"}, "Nats-Pending-Messages": {"not a number"}},
		{"Status": {"404"}, "Description": {"No Messages"}},
		{"Status": {"100"}, "Description": {"Idle Heartbeat"}},
		{"Status": {"503"}},
		{"Status": {"418"}, "Description": {"I'm a teapot"}},
	}
	for i, h := range hostile {
		h.Set(HeaderOriginalSubject, fmt.Sprintf("app.acme.status.%d", i))
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.status", Header: h})
	}
	raw := b.ns.DialRaw(t)
	_, err := raw.Publish("dlq.acme.status", []byte("NATS/1.0 409 Consumer Deleted\r\nDlq-Original-Subject: app.acme.status.inline\r\n\r\n"), nil)
	require.NoError(t, err)
	for i := range 3 {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.after", Data: fmt.Appendf(nil, `{"n":%d}`, i),
			Header: nats.Header{HeaderOriginalSubject: {"app.acme.after"}}})
	}

	total := len(hostile) + 1 + 3
	b.waitRows(t, total)
	b.waitDrained(t)
	assert.Equal(t, total, countRows(t, b.db.Pool, "true"))
	for i, h := range hostile {
		d := b.row(t, "original_subject = $1", fmt.Sprintf("app.acme.status.%d", i))
		hs, err := d.Headers()
		require.NoError(t, err)
		got, err := DecodeHeaders(hs)
		require.NoError(t, err)
		assert.Equal(t, h["Status"], got["Status"], "its Status header kept")
		assert.Empty(t, d.Payload)
	}
	// JetStream stores a block with an inline status without it
	// ("NATS/1.0"): the row has the rest of the block.
	inline := b.row(t, "original_subject = 'app.acme.status.inline'")
	assert.Empty(t, inline.Flags)
}
