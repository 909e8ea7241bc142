package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOncall20RetentionNoticeIgnoresOpenDraft: a quarantined dead letter
// 95 days old (the terms keep unresolved ones 90 days) sits in an open
// replay draft (the on-call began a replay and has not submitted it yet).
// The keeper keeps it: namedByOpenRequest keeps whatever a request not yet
// closed names, a draft included. Its page tells the on-call the opposite:
// the amber "Retention removes it after <95-90 days ago>" with "Replay,
// resolve or discard it before then", because retentionNotice looks only
// at items that are Held, and QueueItemOf leaves drafts out altogether
// (and an item left out of a submitted request is not Held either). The
// page's promise and the keeper's rule disagree.
//
// Expected: a dead letter the keeper will not remove is not announced as
// being removed (e.g. "Retention keeps it while replay request #N names
// it"), the same rule as namedByOpenRequest.
func TestRevOncall20RetentionNoticeIgnoresOpenDraft(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	// The console's own keeper runs a pass as it starts, and would remove
	// both dead letters before the draft names one: the keepers' advisory
	// lock (dlq's keeperLockKey, "QDLKEEP") is held until the draft is
	// made, so that pass has ended before (pg_advisory_lock waits for it)
	// or skips.
	lock, err := b.Pool.Acquire(context.Background())
	require.NoError(t, err)
	_, err = lock.Exec(context.Background(), `SELECT pg_advisory_lock($1)`, int64(0x51444c4b45455000))
	require.NoError(t, err)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "rev20d-drafted",
		Error: "index shard 20d unavailable", At: time.Now().Add(-95 * 24 * time.Hour)})
	control := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "rev20d-control",
		Error: "index shard 20d unavailable", At: time.Now().Add(-95 * 24 * time.Hour)})
	_, err = dlq.FoldCounters(context.Background(), b.Pool)
	require.NoError(t, err)
	_, drafts := testfactory.Draft(t, b.Replays, quarantine.Actor{Subject: "someone-oncall"}, id)
	require.Len(t, drafts, 1)
	require.Equal(t, "draft", string(drafts[0].Status))
	_, err = lock.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, int64(0x51444c4b45455000))
	require.NoError(t, err)
	lock.Release()

	// The keeper, as the console runs it, with the active terms.
	keeper := b.Keeper()
	// A pass that finds the console's own keeper passing (its first pass
	// may start only now) skips: passes are run until one was this one's.
	wait.Until(t, "a keeper pass of the test's own", time.Minute, func() bool {
		pass, err := keeper.Pass(context.Background())
		require.NoError(t, err)
		return !pass.Skipped
	})
	var left int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE id = $1`, control).Scan(&left))
	require.Zero(t, left, "the same dead letter in no request is removed by that pass")
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE id = $1`, id).Scan(&left))
	require.Equal(t, 1, left, "the keeper keeps a dead letter an open draft names")

	page := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, 200, page.Status)
	notice := byID(page.Doc(t), "dl-retention")
	assert.NotContains(t, text(notice), "Retention removes it after",
		"the keeper just kept this dead letter (an open replay draft names it), yet its page says: %q", text(notice))
}
