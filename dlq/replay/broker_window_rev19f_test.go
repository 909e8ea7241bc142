package replay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// brokerHolds reports whether stream APP's duplicate window still holds
// msgID, storing nothing either way: a publish under the id that expects
// a last message id no message has is answered Duplicate while the broker
// holds the id (its duplicate check comes first), and refused otherwise.
func brokerHolds(ctx context.Context, b *replayBundle, msgID string) (bool, error) {
	ack, err := b.js.Publish(ctx, "app.acme.probe", nil, jetstream.WithMsgID(msgID), jetstream.WithExpectLastMsgID("rev19f-no-such-id"))
	var api *jetstream.APIError
	switch {
	case err == nil && ack.Duplicate:
		return true, nil
	case errors.As(err, &api) && api.ErrorCode == 10070: // JSStreamWrongLastMsgIDErrF
		return false, nil
	case err != nil:
		return false, err
	}
	return false, fmt.Errorf("the probe was stored as %s:%d", ack.Stream, ack.Sequence)
}

// TestRevBroker19RaisedWindowRetryStoresTwice: a first publish lands but
// its PubAck is lost (unknown). The broker forgets its id once the
// stream's duplicate window (here 500ms; 2 min by default) has passed,
// and then the operator raises the window (docs/replay.md asks for a
// window longer than the lease plus the retry waits; workers were down
// meanwhile). The retry is judged by the window as it is now, which
// "covers" the first attempt, so the worker republishes; the broker, which
// no longer holds the id, stores it a second time, and the re-read after
// the PubAck finds the same stream with a window that covers the first
// attempt: the item is shown replayed, the target holds it twice
// (invariant 4; and 13: "replayed" hides that the first may have been
// applied too).
func TestRevBroker19RaisedWindowRetryStoresTwice(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	cfg := jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: 500 * time.Millisecond}
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	msgID := "raised-window"
	requestID, id := b.firstPublishLost(t, w, msgID)

	wait.For(t, "the broker to forget the first publish's id", time.Minute, func() error {
		held, err := brokerHolds(ctx, b, msgID)
		if err != nil {
			return err
		}
		if held {
			return wait.ErrNotYet
		}
		return nil
	})
	cfg.Duplicates = time.Hour // the operator raises the window
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)

	j := b.settled(t, w, requestID, id)
	assert.Equal(t, 1, b.publishedAs(t, msgID), "published again after the broker forgot the first publish: the target holds it twice; the item is %s: %s", j.State, j.Result)
	assert.Equal(t, "needs_reconciliation", j.State, j.Result)
}
