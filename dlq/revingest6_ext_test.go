package dlq_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevIngest6PurgedOriginResetsTheReplayChain: a dead letter is
// replayed (its request done, its job replayed) and, closed, retention
// removes it when its period ends. The replayed message then fails again
// in its consumer and comes back as a dead letter that names the one it
// was replayed from (Dlq-Replay-Of). The console did send that replay (its
// request, item and job are all kept), but the claim is checked by joining
// the origin's row, which retention removed: the new dead letter is
// flagged unlinked:replay_of, loses its chain and starts again at
// generation 0, so the generation limit that stops replay loops (only
// manual past it) never holds for a message whose replays fail slower
// than its dead letters are kept. Retention removed what a later replay
// (the loop guard) needs.
func TestRevIngest6PurgedOriginResetsTheReplayChain(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	origin := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "doc-1", At: r.daysAgo(40)})
	_, err := r.db.Pool.Exec(ctx, `UPDATE dead_letters SET generation = 2 WHERE id = $1`, origin)
	require.NoError(t, err)
	sent := testfactory.Request(t, r.replays, replayRequester, []int64{origin}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, sent.Status)
	published(t, r.db.Pool, sent.ID, origin)
	// The worker replayed it and the request is done.
	_, err = r.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed' WHERE request_id = $1`, sent.ID)
	require.NoError(t, err)
	_, err = r.db.Pool.Exec(ctx, `UPDATE replay_items SET held = false WHERE request_id = $1`, sent.ID) // as releaseEnded does
	require.NoError(t, err)
	_, err = r.db.Pool.Exec(ctx, `UPDATE replay_requests SET status = 'done' WHERE id = $1`, sent.ID)
	require.NoError(t, err)
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusReplayed, origin)

	// Linked while the origin is kept.
	before := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "doc-1",
		Headers: map[string][]string{dlq.HeaderReplayOf: {fmt.Sprint(origin)}}})
	b, err := dlq.NewStore(r.db.Pool).Get(ctx, before)
	require.NoError(t, err)
	require.NotNil(t, b.ReplayOf, "linked while the origin is kept: %v", b.MalformedReasons)
	require.Equal(t, int32(3), b.Generation)

	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	r.pass(t)
	require.Empty(t, r.remaining(t, []int64{origin}), "replayed 40 days ago: removed")

	after := testfactory.DeadLetter(t, r.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "doc-1",
		Headers: map[string][]string{dlq.HeaderReplayOf: {fmt.Sprint(origin)}}})
	d, err := dlq.NewStore(r.db.Pool).Get(ctx, after)
	require.NoError(t, err)
	assert.NotContains(t, d.Flags, "unlinked:replay_of", "%v", d.MalformedReasons)
	assert.Equal(t, int32(3), d.Generation, "the replay the console sent is still on record; the chain must not restart")
}
