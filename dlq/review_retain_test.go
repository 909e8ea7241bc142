package dlq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestPurgeAuditNamesEveryTenant (review rev-retain): a retention run's
// audit row is the only record of "how many, of which tenants and
// statuses" it removed (docs/architecture.md). A batch of rows that takes
// dead letters of more than 200 tenant/status pairs (41 tenants with all
// five statuses, or 201 tenants with one) had its breakdown cut to 200
// lines with nothing saying so: the row said N dead letters went, but the
// tenants sorted after the cut were not named, and the dashboard told their
// viewers retention removed 0 of theirs (scanLastPurge). Now a run takes
// at most maxPurgeBreakdown pairs, and its row names them all.
func TestPurgeAuditNamesEveryTenant(t *testing.T) {
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
	entries := r.purgeRows(t)
	require.Len(t, entries, len(pass.Runs), "one audit row per run")
	require.Greater(t, len(entries), 1, "more tenants than one row names go in more than one run")
	seen := map[string]bool{}
	for _, e := range entries {
		var after struct {
			Rows int64 `json:"rows"`
			By   []struct {
				Tenant string `json:"tenant"`
				N      int64  `json:"n"`
			} `json:"by"`
		}
		require.NoError(t, json.Unmarshal(e.After, &after))
		var named int64
		for _, b := range after.By {
			named += b.N
			seen[b.Tenant] = true
		}
		assert.Equal(t, after.Rows, named, "the audit row's breakdown accounts for every dead letter it says went")
	}
	for i := range tenants {
		assert.True(t, seen[fmt.Sprintf("t%03d", i)], "tenant t%03d's removal is in an audit row", i)
	}
}

// heldPastKeyTrim stores the dead letter of stream's sequence 1 (of
// itemType, 40 days old), discards it and lets retention remove it (its
// source key kept); then a consumer made again delivers seq 1 again to an
// ingester, which holds it (rec) while its store fails and is retried;
// meanwhile the stream lets seq 1 go (its age limit), and another
// console's keeper looks, and looks again once the look is max(Every,
// AckWait) old, and removes the key. It returns the store and the held
// record, not yet stored again.
func heldPastKeyTrim(t *testing.T, r *retention, stream, itemType string) (*dlq.Store, dlq.Record) {
	t.Helper()
	ctx := context.Background()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	subject := strings.ToLower(stream)
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject + ".>"}})
	require.NoError(t, err)
	for seq := 1; seq <= 2; seq++ {
		_, err := js.Publish(ctx, fmt.Sprintf("%s.%d", subject, seq), []byte("dead letter"))
		require.NoError(t, err)
	}
	st := dlq.NewStore(r.db.Pool)
	rec := dlqMessage(stream, 1, itemType, subject+"-1", r.daysAgo(40))
	_, err = st.Insert(ctx, []dlq.Record{rec})
	require.NoError(t, err)
	testfactory.RecordsArrived(t, r.db.Pool, rec)
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	d, err := st.BySource(ctx, stream, 1, "")
	require.NoError(t, err)
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusDiscarded, d.ID)
	require.Len(t, r.pass(t).Runs, 1, "retention removes the discarded dead letter and keeps its key")
	require.Equal(t, []int64{1}, purgedKeys(t, r, stream))

	require.NoError(t, s.Purge(ctx, jetstream.WithPurgeSequence(2)))
	clock := time.Now()
	k := dlq.NewKeeper(st, dlq.KeeperConfig{JetStream: js, Every: time.Minute, AckWait: time.Minute,
		Now: func() time.Time { return clock }}, nil, quiet)
	for _, step := range []time.Duration{0, time.Minute} {
		clock = clock.Add(step)
		_, err := k.Pass(ctx)
		require.NoError(t, err)
	}
	require.Empty(t, purgedKeys(t, r, stream), "the key went: the stream no longer holds seq 1")
	return st, rec
}

// TestHeldRedeliveryAfterKeyTrimIsStoredFlagged (review rev-retain): the keeper
// removes a purged dead letter's kept source key once a look at least
// max(Every, AckWait) old saw its message gone from the stream
// (retention_keys.go firstSeq), on the premise that no ingester holds a
// message longer than that. It can: storeBatch (ingest_store.go) retries a
// batch for as long as PostgreSQL keeps failing for that console (an
// outage of one replica's connections, statement timeouts), sending
// InProgress each time, so JetStream never takes the messages back. A
// redelivery of a purged dead letter (a consumer made again) fetched
// just before the stream let the message go, held past the margin while
// another console's keeper trims its key, was then stored again as a new
// quarantined dead letter, saying nothing: a discarded message back in the
// inbox, a replayed manual/revalidate one replayable again. It cannot be
// told from a message held since its first delivery (which must not be
// lost), so it is stored flagged after_retention_key_trim.
func TestHeldRedeliveryAfterKeyTrimIsStoredFlagged(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	st, rec := heldPastKeyTrim(t, r, "HELD", "orders.refund")

	// PostgreSQL answers the held batch again. Nothing says any more
	// whether this message was stored and removed, or never stored (held
	// from its first delivery): it is stored, and says that retention may
	// have removed it before.
	res, err := st.Insert(ctx, []dlq.Record{rec})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 1, "a held record is not dropped: it may never have been stored")
	again, err := st.BySource(ctx, "HELD", 1, "")
	require.NoError(t, err)
	assert.Contains(t, again.Flags, "after_retention_key_trim")
	assert.Contains(t, strings.Join(again.MalformedReasons, " "), "may be a dead letter retention removed earlier")

	// One held past a trim of another stream, or above what was trimmed,
	// says nothing of the kind.
	other := dlqMessage("HELD", 2, "orders.refund", "held-2", r.daysAgo(40))
	_, err = st.Insert(ctx, []dlq.Record{other})
	require.NoError(t, err)
	d2, err := st.BySource(ctx, "HELD", 2, "")
	require.NoError(t, err)
	assert.NotContains(t, d2.Flags, "after_retention_key_trim")
}

// TestRetentionJudgesOnTheDatabaseClock (review rev-retain): what a
// keeper pass removes is judged on the clock of the console that happens
// to win the keepers' lock (KeeperConfig.Now, time.Now), not on the
// database's: mayGo and purgeRows' cutoffs compare dead_lettered_at with
// it, and the day path's only clock check is the partition functions'
// "not today or later" by the database's clock. One replica whose clock
// jumped ahead (a VM restored from a snapshot, NTP gone wrong) removes,
// irreversibly and audited as retention, dead letters every other clock
// says are well within their period: here closed ones 10 days old (kept
// 30) and unresolved ones 20 days old (kept 90), their days emptied whole.
func TestRetentionJudgesOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	closed10 := r.letters(t, 2, "acme", "orders.refund", r.daysAgo(10), dlq.StatusDiscarded)
	open20 := r.letters(t, 2, "acme", "orders.refund", r.daysAgo(20), dlq.StatusQuarantined)
	ahead := time.Now().Add(100 * 24 * time.Hour) // one console's clock, 100 days fast
	table, err := replaypolicy.Parse("retention.toml", []byte(retentionPolicy))
	require.NoError(t, err)
	k := dlq.NewKeeper(dlq.NewStore(r.db.Pool), dlq.KeeperConfig{
		Policy: func() dlq.RetentionPolicy { return app.RetentionOf(table.Retention()) }, Now: func() time.Time { return ahead },
	}, nil, quiet)
	// The pass ends in an error only after retention ran: dropping today's
	// partition (empty, "past" by that clock) is refused by the database.
	pass, err := k.Pass(context.Background())
	t.Logf("pass: %d runs, %d removed, err %v", len(pass.Runs), pass.Removed(), err)
	all := append(append([]int64{}, closed10...), open20...)
	assert.Equal(t, all, r.remaining(t, all), "dead letters within their period stay")
}
