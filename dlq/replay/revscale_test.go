package replay_test

// Review (rev-scale): what one action costs the others when data is large.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// auditAppendLockKey is audit.appendLockKey ("QAUDIT" then 0001).
const auditAppendLockKey int64 = 0x5141554449540001

// TestIngestNeverWaitsForASubmitsTransaction: invariant 10 says no single
// dead letter (and so no console action) can stall ingest for others. A
// submit moves its items' status with dlq.StatusMove, which UPDATEs the
// tenant's counter row (tenant, item type, class, 'quarantined'); the row
// stays locked until the submit commits, after its jobs, audit rows and
// every other statement. The ingester's statement makes sure each
// combination of its batch has a counter row with INSERT ... ON CONFLICT
// DO NOTHING, and a unique check that meets a row updated by a transaction
// still open waits for that transaction. So while any submit (or cancel,
// or retention subtract) of that combination is open, a new dead letter of
// the same tenant, item type and class cannot be stored — nor anything else
// in the same ingest batch, which is one statement over every tenant.
//
// The submit is kept open here by the audit chain's lock, held by another
// audited action (a global lock every audited transaction takes); a big
// submit holds it open by itself for as long as it takes (see the report:
// 20,000 items).
func TestIngestNeverWaitsForASubmitsTransaction(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	letters := make([]testfactory.Letter, 20)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("idx-stall-%d", i)}
	}
	ids := testfactory.DeadLetters(t, b.db.Pool, letters...)
	batch, _ := testfactory.Draft(t, b.replays, oncall, ids...)

	// Another audited action, still in its transaction.
	holder, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, auditAppendLockKey)
	require.NoError(t, err)

	submitted := make(chan error, 1)
	go func() {
		_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex after the fix"}, quarantine.RequestMeta{})
		submitted <- err
	}()
	var submitPID int32
	wait.For(t, "the submit to wait for the audit lock", 30*time.Second, func() error {
		err := b.db.Pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'
            AND datname = current_database() LIMIT 1`).Scan(&submitPID)
		if err != nil {
			return wait.ErrNotYet
		}
		return nil
	})

	// A new dead letter of the same tenant, item type and class arrives.
	rec := dlq.ParseDLQ(dlq.DefaultSubjectPrefix, dlq.Received{
		Subject: "dlq.acme.search.index_update",
		Header: map[string][]string{dlq.HeaderOriginalSubject: {"app.acme.search.index_update"}, dlq.HeaderOriginalMsgID: {"idx-new-1"},
			dlq.HeaderErrorClass: {string(dlq.ClassTransient)}, dlq.HeaderError: {"index down"}},
		Data: []byte(`{}`), Stream: "REVSCALE", Seq: 1, Time: time.Now(),
	})
	stored := make(chan error, 1)
	go func() {
		_, err := b.store.Insert(ctx, []dlq.Record{rec})
		stored <- err
	}()
	var blocked bool
	err = wait.Poll(30*time.Second, wait.Interval, func() error {
		select {
		case err := <-stored:
			require.NoError(t, err)
			return nil
		default:
		}
		var n int
		if err := b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
            WHERE $1 = ANY(pg_blocking_pids(pid)) AND query ILIKE '%dead_letter_counts%' AND datname = current_database()`, submitPID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			blocked = true
			return nil
		}
		return wait.ErrNotYet
	})
	require.NoError(t, err)
	assert.False(t, blocked, "the ingester's insert of a new dead letter waits for the submit's transaction (pid %d) to commit: "+
		"its INSERT ... ON CONFLICT DO NOTHING into dead_letter_counts meets the counter row the submit's StatusMove updated", submitPID)

	require.NoError(t, holder.Rollback(ctx))
	require.NoError(t, <-submitted)
	if blocked {
		require.NoError(t, <-stored)
	}
	var n int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE msg_id = 'idx-new-1'`).Scan(&n))
	assert.Equal(t, 1, n)
}
