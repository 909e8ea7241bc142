package dlq_test

// Review (rev-fixes): neighbouring paths of this session's fixes.

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
)

// TestDashboardCountsEveryRunOfTheLastPass: 9996b33 makes a pass split
// its runs so that each audit row names every tenant it removed, because
// "the dashboard told their viewers retention removed 0 of theirs
// (scanLastPurge)". The dashboard still reads only the newest purge row
// (selectLastPurge, LIMIT 1): a tenant whose dead letters went in an
// earlier run of the same pass (any pass of more than one run: more than
// 200 tenant/status pairs, more than BatchRows rows, a day emptied whole
// and rows) is told "last purge: just now, 0 of yours".
func TestDashboardCountsEveryRunOfTheLastPass(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	const tenants = 201
	ls := make([]testfactory.Letter, tenants)
	for i := range ls {
		ls[i] = testfactory.Letter{Tenant: fmt.Sprintf("t%03d", i), ItemType: "orders.refund", At: r.daysAgo(40),
			OperationID: fmt.Sprintf("op-%d", i)}
	}
	ids := testfactory.DeadLetters(t, r.db.Pool, ls...)
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusDiscarded, ids...)
	pass := r.pass(t)
	require.Equal(t, int64(tenants), pass.Removed())
	require.Greater(t, len(pass.Runs), 1, "precondition: the pass took more than one run")

	st := dlq.NewStore(r.db.Pool)
	zero := 0
	for i := range tenants {
		tenant := fmt.Sprintf("t%03d", i)
		d, err := st.Dashboard(context.Background(), dlq.DashboardQuery{Tenants: []string{tenant}, Now: time.Now()})
		require.NoError(t, err)
		if d.LastPurge.Rows != 1 {
			zero++
		}
	}
	assert.Zero(t, zero, "tenants told the last purge removed none of theirs, though the last pass removed one of each")
}

// TestHeldRedeliveryAfterKeyTrimIsNotReplayedUnseen: c1ba016..9996b33
// answer a held redelivery of a dead letter retention removed (after the
// keeper trimmed its kept key) with a flag, after_retention_key_trim. The
// review's effect was "a discarded message back in the inbox, a replayed
// manual/revalidate one replayable again"; the flag is the only change:
// the row is stored quarantined, and nothing in the replay rules reads the
// flag (replaypolicy, dlq/replay: no mention), so the dead letter an
// operator discarded drafts into a replay like any new one, its request
// saying nothing of what it may be.
func TestHeldRedeliveryAfterKeyTrimIsNotReplayedUnseen(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	st, rec := heldPastKeyTrim(t, r, "HELD2", "search.index_update")
	_, err := st.Insert(ctx, []dlq.Record{rec})
	require.NoError(t, err)
	again, err := st.BySource(ctx, "HELD2", 1, "")
	require.NoError(t, err)
	require.Contains(t, again.Flags, "after_retention_key_trim")

	_, drafts := testfactory.Draft(t, r.replays, quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}, again.ID)
	taken := 0
	for _, dr := range drafts {
		taken += dr.ItemCount
	}
	assert.Zero(t, taken, "the discarded dead letter, stored again after its kept key was trimmed, drafts into a replay like a new one (status %s)", again.Status)
}
