package replay

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
)

// TestAnsweredTellsARefusalFromNoAnswer: a stream read that the server
// answered (the stream gone, a refusal) lets a person decide a first
// attempt's outcome; one it did not answer (a timeout, a reconnect, or a
// 5xx: JetStream without a leader while a clustered server restarts) is
// judged by the claim's list (storedAnswer).
func TestAnsweredTellsARefusalFromNoAnswer(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{jetstream.ErrStreamNotFound, true},
		{fmt.Errorf("read: %w", jetstream.ErrStreamNotFound), true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10059, Description: "bad request"}, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, false},
		{&jetstream.APIError{Code: 500, Description: "no leader"}, false},
		{context.DeadlineExceeded, false},
		{nats.ErrTimeout, false},
		{nats.ErrReconnectBufExceeded, false},
		{nats.ErrConnectionReconnecting, false},
	} {
		assert.Equal(t, tc.want, answered(tc.err), "%v", tc.err)
	}
}
