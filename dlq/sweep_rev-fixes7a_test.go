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

// TestRevFixes7aStaleCountOfAnotherReplicaSkipsTheHold
//
// Defect (low): the sweep's counts of failed sweeps (sweepFailed) are kept
// in memory per replica, by stream name and sequence, and forgotten on a
// stream made again only by the replica whose step sees it made again
// (sweepForget in that step). Another replica keeps its counts of the old
// stream's sequences past the new watermark, and applies them to the new
// stream's messages of the same sequences: here replica A counted the old
// #1 four times; the DLQ stream is made again (replica B's sweep sees
// it); a new dead letter at #1 that PostgreSQL refuses is stored without
// its content (content_refused: payload and headers gone) at the first
// sweep that fails it, not after sweepHeldTries sweeps: the hold that is
// to give on-call time to look (and PostgreSQL to take it) is skipped.
//
// Expected: counts are of a stream as made (forgotten when the watermark's
// stream creation time differs from the one they were counted under, or
// keyed by it); the new #1 is held sweepHeldTries sweeps like any other.
func TestRevFixes7aStaleCountOfAnotherReplicaSkipsTheHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	inA, _ := b.idle(t, IngestConfig{})
	inB, _ := b.idle(t, IngestConfig{})
	refuseHostile(t, b)
	publishAcked(t, b, 1, map[int]string{1: "hostile"})
	for range sweepHeldTries - 1 {
		_, err := inA.sweep(ctx, "DLQ")
		require.NoError(t, err)
	}
	require.Zero(t, countRows(t, b.db.Pool, "true"), "the old #1 held, not stored")

	// The DLQ stream is made again; replica B's sweep sees it.
	require.NoError(t, b.js.DeleteStream(ctx, "DLQ"))
	require.NoError(t, inB.Setup(ctx))
	_, err := inB.sweep(ctx, "DLQ")
	require.NoError(t, err)

	// A new hostile dead letter at #1, acked without a row; replica A's
	// first sweep of it.
	publishAcked(t, b, 1, map[int]string{1: "hostile"})
	_, err = inA.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Zero(t, countRows(t, b.db.Pool, "'content_refused' = ANY(flags)"),
		"the new #1 stored without its content at the first sweep that failed it")
	assert.Equal(t, []int64{1}, b.heldOf(t, "DLQ"), "the new #1 held")
}
