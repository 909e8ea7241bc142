package replay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// fillAccount makes the account of b's server full: it stores one
// message (so the account's storage is in use) and lowers the account's
// JetStream storage limit under what it holds. Every publish to any of its
// streams is then refused with "resource limits exceeded for account"
// (JetStream error 10002, status 400) until room is made (emptyAccount).
func fillAccount(t *testing.T, b *replayBundle) {
	t.Helper()
	_, err := b.js.Publish(context.Background(), "app.filler", []byte("takes the account's storage"))
	require.NoError(t, err)
	require.NoError(t, b.ns.GlobalAccount().UpdateJetStreamLimits(map[string]server.JetStreamAccountLimits{
		"": {MaxMemory: -1, MaxStore: 1, MaxStreams: -1, MaxConsumers: -1},
	}))
}

// emptyAccount lifts the account's storage limit again: an operator who
// purged other streams, or raised the account's limit.
func emptyAccount(t *testing.T, b *replayBundle) {
	t.Helper()
	require.NoError(t, b.ns.GlobalAccount().UpdateJetStreamLimits(map[string]server.JetStreamAccountLimits{
		"": {MaxMemory: -1, MaxStore: -1, MaxStreams: -1, MaxConsumers: -1},
	}))
}

// TestRevReplay16AccountStorageFullBlocksForGood: the account's JetStream
// storage is full (another stream of the account grew to its limit). The
// broker refuses every publish with "resource limits exceeded for account",
// a 400: nothing was stored, and it will be stored once room is made, as
// with a full stream (503). It is sent again later and replayed once room
// is made. Before, every 400 was read as "this message can never be
// published as it is": the item was blocked for good and its dead letter
// marked replay_failed, and a bulk replay during a full account failed
// every item.
func TestRevReplay16AccountStorageFullBlocksForGood(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	fillAccount(t, b)
	id := b.seedItem(t, "search.index_update", "account-full-1", nil, `{"n":1}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	var j jobRow
	wait.Until(t, "the publish to be answered", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		j = b.job(t, req.ID, id)
		return j.Attempts > 0 || j.Result != ""
	})
	require.True(t, strings.HasPrefix(j.Result, replaypolicy.NotSentLead), "not stored this time, and sent again later: %s (%s)", j.Result, j.State)
	assert.Contains(t, j.Result, "resource limits exceeded for account")
	d, err := b.store.Get(ctx, id)
	require.NoError(t, err)
	assert.NotEqual(t, dlq.StatusReplayFailed, d.Status, "the dead letter is not given up on while the account is full")
	p, err := b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, p.NotStored, "counted among the items the broker did not store")

	emptyAccount(t, b)
	wait.Until(t, "the item to be replayed once room is made", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State == "replayed"
	})
	assert.Contains(t, b.published(t), "account-full-1", "stored under its original message id")
	b.waitStatus(t, req.ID, replay.StatusDone)
}

// TestFixReplay16AccountFullOnRetryStaysUnknown: the first publish of a
// job got no answer (the account was full and refused it, but the answer
// was lost on the way), and its retry meets the full account and is
// refused. The retry stored nothing, but for all the worker knows the
// first publish may have landed: the item stays unknown and is tried
// again, not handed to a person as "refused, may have landed". Once room
// is made the retry is stored, as new (the first never landed), and the
// item is replayed once.
func TestFixReplay16AccountFullOnRetryStaysUnknown(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	fillAccount(t, b)
	id := b.seedItem(t, "search.index_update", "account-full-2", nil, `{"n":2}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err := w.RunOnce(ctx)
	require.NoError(t, err)
	j := b.job(t, req.ID, id)
	require.Equal(t, "unknown", j.State, j.Result)

	wait.Until(t, "the retry to meet the full account", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		j = b.job(t, req.ID, id)
		return j.Attempts >= 2
	})
	assert.Equal(t, "unknown", j.State, j.Result)
	assert.Contains(t, j.Result, "resource limits exceeded for account")
	assert.Contains(t, j.Result, replaypolicy.StillUnknown)

	emptyAccount(t, b)
	wait.Until(t, "the retry after room is made", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State != "unknown"
	})
	j = b.job(t, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Equal(t, 1, b.publishedAs(t, "account-full-2"), "one effect")
}
