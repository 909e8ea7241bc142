package dlq

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
)

// TestRev39PeerOfflineIsWaitedFor: a cluster that cannot place a stream's
// replicas because a peer is offline (a node restarting, a heartbeat that
// lags just after the cluster formed) answers 400, 10005; the console
// waits for it as for a cluster without a leader, where it exited at
// start. The other reasons 10005 gives are refusals.
func TestRev39PeerOfflineIsWaitedFor(t *testing.T) {
	t.Parallel()
	offline := &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}
	assert.True(t, jetStreamNotReady(offline))
	assert.True(t, jetStreamNotReady(fmt.Errorf("create stream DLQ: %w", offline)))
	assert.False(t, jetStreamNotReady(&jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, tags not matched ['az:1']"}))
	assert.False(t, jetStreamNotReady(&jetstream.APIError{Code: 400, ErrorCode: 10065, Description: "subjects overlap with an existing stream"}))
}
