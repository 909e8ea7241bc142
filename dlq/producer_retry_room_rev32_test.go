package dlq

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevIngest32RetryIDStillFits: Publish tries a dead letter again under
// a longer Nats-Msg-Id (":" and 16 hex digits more) when the DLQ stream
// keeps another message under its id. fit sized the message with the
// first id only, so a dead letter within 17 bytes of max_payload fitted
// once and not again: the retry got ErrMaxPayload on every try and the
// original looped until MaxDeliver. It leaves room for the longest id now.
func TestRevIngest32RetryIDStillFits(t *testing.T) {
	t.Parallel()
	orig := &nats.Msg{Subject: "orders.created", Header: nats.Header{HeaderNatsMsgID: {"ord-1"}}, Data: []byte(`{"order":1}`)}
	from := Origin{Stream: "ORDERS", Seq: 7, Time: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	f := Failure{Err: errors.New("refund failed"), Stack: strings.Repeat("at frame\n", 600), Consumer: "refunds",
		LastFailedAt: time.Date(2026, 12, 6, 12, 1, 0, 0, time.UTC)}
	whole, err := newDeadLetter("dlq", "acme", "orders.created", orig, from, f, 0, nil)
	require.NoError(t, err)
	size := int64(headerBlockLen(whole.Header) + len(whole.Data))
	for _, limit := range []int64{size, size + 5, size + 16} {
		m, err := newDeadLetter("dlq", "acme", "orders.created", orig, from, f, limit, nil)
		require.NoError(t, err)
		m.Header.Set(HeaderNatsMsgID, m.Header.Get(HeaderNatsMsgID)+":0123456789abcdef") // Publish's last try
		assert.LessOrEqual(t, int64(headerBlockLen(m.Header)+len(m.Data)), limit, "max_payload %d: the last try's id must fit too", limit)
	}
}
