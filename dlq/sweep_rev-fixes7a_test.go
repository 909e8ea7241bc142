package dlq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevFixes7aWrongAnswerForEveryReadIsNotEachMessagesOwn
//
// Defect (medium): sweepWide takes only no answer (timeout, no
// responders, closed connection) and a few API error codes as NATS's
// failure; an answer that is not the message (an account subject mapping
// or another responder on $JS.API.STREAM.MSG.GET.<stream>, an API error
// other than 503 for every read) is counted against each message as its
// own. Such a failure is every message's, not one message's: here not one
// read of the stream succeeds in five sweeps. Yet after sweepHeldTries
// sweeps (about two and a half minutes at SweepEvery's default) each dead
// letter the sweep was to store is stored as a payload-less position form
// in tenant "unknown", flagged message_unreadable, and the watermark moves
// past them. When the answers are right again (the mapping removed), the
// sweep never stores the real dead letters: their payloads, tenants and
// subjects are lost to the console (replay impossible) although the stream
// still holds them and PostgreSQL takes them. A NATS stream gives any
// message it holds; a read that fails while no read of the stream
// succeeds is not a hostile message.
//
// Expected: a read failure met while no read of the stream succeeds (or
// an answer that is no message at all) is wide: the step stops there,
// nothing is counted, and once the stream answers, each dead letter is
// stored whole, with its payload.
func TestRevFixes7aWrongAnswerForEveryReadIsNotEachMessagesOwn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})
	publishAcked(t, b, 3, nil)
	// Every read of the DLQ stream's messages answered with something
	// that is not the message: a misconfiguration of NATS, for a while.
	acc := b.ns.GlobalAccount()
	require.NoError(t, acc.AddMapping("$JS.API.STREAM.MSG.GET.DLQ", "$JS.API.STREAM.INFO.DLQ"))
	for range sweepHeldTries {
		_, _ = in.sweep(ctx, "DLQ")
	}
	// NATS answers again.
	acc.RemoveMapping("$JS.API.STREAM.MSG.GET.DLQ")
	for range 2 {
		_, err := in.sweep(ctx, "DLQ")
		require.NoError(t, err)
	}

	assert.Equal(t, 3, countRows(t, b.db.Pool, "payload = 'ok' AND tenant = 'acme' AND NOT payload_unavailable"),
		"the dead letters stored whole once the stream answers; rows: %d flagged message_unreadable, payload-less, tenant unknown",
		countRows(t, b.db.Pool, "'message_unreadable' = ANY(flags)"))
}
