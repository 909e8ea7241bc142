package dlq

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseAdvisoryUnreadOriginalIsNotGone: an original that could not be
// read (NATS, not its absence) is flagged original_unreadable, never
// original_gone.
func TestParseAdvisoryUnreadOriginalIsNotGone(t *testing.T) {
	t.Parallel()
	ws, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	adv := Advisory{Stream: "ORDERS", Consumer: "c", StreamSeq: 7, Deliveries: 5}
	r := parseAdvisory(ws[0], adv, nil, nats.ErrTimeout, []byte(`{}`), Received{Stream: "DLQ_ADVISORIES", Seq: 1})
	assert.Contains(t, r.Flags, "original_unreadable")
	assert.NotContains(t, r.Flags, "original_gone")
	assert.True(t, r.PayloadUnavailable)
	gone := ParseAdvisory(ws[0], adv, nil, []byte(`{}`), Received{Stream: "DLQ_ADVISORIES", Seq: 1})
	assert.Contains(t, gone.Flags, "original_gone")
	assert.NotContains(t, gone.Flags, "original_unreadable")
}
