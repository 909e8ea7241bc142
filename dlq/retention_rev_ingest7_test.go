package dlq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevIngest7StoredTimeAtClockResetPurgedOnArrival: severity medium.
//
// A dead letter's age, for retention, is JetStream's stored time: the NATS
// server's clock. checkStoredAt only distrusts a time before 2000-01-01
// (MinPlausibleTime, inclusive) or a year ahead. A server whose clock was
// reset (2000-01-01 00:00:00 is the reset value of the usual RTC chips, and
// of many boards without one) stores new dead letters at 2000-01-01
// 00:00:xx: taken at face value, a partition is made for that day, the row
// is stored quarantined, and the next keeper pass removes it as 26 years
// past its 90 days, minutes after it arrived, before any operator saw it;
// its source key is kept, so a redelivery is dropped too. The same holds for
// a server clock behind by more than the retention period (here 100 days).
// Nothing received is lost: a dead letter must be seen before retention
// judges it. Expected: a dead letter that arrived a moment ago (by the
// database's clock) and is still quarantined survives the keeper pass
// (e.g. a stored time older than the longest retention is flagged
// implausible and kept under the day it arrived, as checkStoredAt does for
// 1970, or retention judges by when the console stored the row).
func TestRevIngest7StoredTimeAtClockResetPurgedOnArrival(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	st := dlq.NewStore(r.db.Pool)
	cases := []struct {
		seq uint64
		at  time.Time
		why string
	}{
		{1, time.Date(2000, 1, 1, 0, 0, 5, 0, time.UTC), "NATS server clock at its RTC reset value"},
		{2, time.Now().Add(-100 * 24 * time.Hour).UTC(), "NATS server clock 100 days behind"},
	}
	var ids []int64
	for _, c := range cases {
		rec := dlqMessage("DLQ", c.seq, "orders.refund", "refund-clock", c.at)
		t.Logf("%s: stored at %s, flags %v", c.why, rec.DeadLetteredAt.Format(time.RFC3339), rec.Flags)
		res, err := st.Insert(ctx, []dlq.Record{rec})
		require.NoError(t, err)
		require.Len(t, res.Inserted, 1)
		d, err := st.BySource(ctx, "DLQ", c.seq, "")
		require.NoError(t, err)
		require.Equal(t, dlq.StatusQuarantined, d.Status)
		ids = append(ids, d.ID)
	}
	_, err := dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)

	pass := r.pass(t) // the keeper's next pass, seconds after they arrived
	t.Logf("keeper pass: %d runs", len(pass.Runs))
	for i, c := range cases {
		assert.Contains(t, r.remaining(t, ids[i:i+1]), ids[i],
			"%s: a quarantined dead letter that arrived a moment ago, never seen by anyone, is removed by retention", c.why)
	}
	// A redelivery of their messages does not bring them back: their
	// source keys were kept as those of purged dead letters.
	for _, c := range cases {
		res, err := st.Insert(ctx, []dlq.Record{dlqMessage("DLQ", c.seq, "orders.refund", "refund-clock", c.at)})
		require.NoError(t, err)
		t.Logf("%s: a redelivery stored %d rows", c.why, len(res.Inserted))
	}
}

// TestRevIngest7HeldAdvisoryAfterKeyTrimIsNotFlagged: severity low.
//
// The fix for held redeliveries past a key trim (flagTrimmed, store_copy.go;
// TestHeldRedeliveryAfterKeyTrimIsStoredFlagged) looks the trims up by the
// record's SourceStream and SourceSeq. For a DLQ message those are where its
// key says it lives. For a captured advisory they are not: its row names
// the WATCHED stream and the original's sequence, while its kept key (from
// its delivery, quarantine_delivery_position) names the ADVISORY stream and
// the advisory's sequence, and so do the keeper's trims
// (dead_letters_purged_trims). A captured give-up that retention removed
// (discarded, or replayed under manual/revalidate), whose advisory an
// ingester held past the keeper's margin while the advisory stream let it
// go (its 30-day age limit) and the keeper trimmed its key, is stored again
// as a new, clean, quarantined dead letter: replayable again. Expected: it
// is stored flagged after_retention_key_trim, as a DLQ message is.
func TestRevIngest7HeldAdvisoryAfterKeyTrimIsNotFlagged(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	// The advisory capture stream: the advisory is its message #1.
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ADVS", Subjects: []string{"advs.>"}})
	require.NoError(t, err)
	for seq := 1; seq <= 2; seq++ {
		_, err := js.Publish(ctx, fmt.Sprintf("advs.%d", seq), []byte(`{}`))
		require.NoError(t, err)
	}
	at := r.daysAgo(40)
	adv := dlq.Advisory{Type: "io.nats.jetstream.advisory.v1.max_deliver", ID: "a1", Timestamp: at, Stream: "ORDERS",
		Consumer: "billing", StreamSeq: 7, Deliveries: 5}
	raw, err := json.Marshal(adv)
	require.NoError(t, err)
	orig := &dlq.Original{Subject: "orders.acme.refund", Header: map[string][]string{"Nats-Msg-Id": {"refund-7"}}, Data: []byte(`{"n":7}`),
		Time: at.Add(-time.Minute)}
	w := dlq.WatchStream{Name: "ORDERS", Template: []string{"*", "{tenant}", "{item_type}"}}
	via := dlq.Received{Subject: "advs.1", Stream: "ADVS", Seq: 1, Time: at}
	rec := dlq.ParseAdvisory(w, adv, orig, raw, via)

	st := dlq.NewStore(r.db.Pool)
	res, err := st.Insert(ctx, []dlq.Record{rec})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 1)
	testfactory.RecordsArrived(t, r.db.Pool, rec) // captured 40 days ago, not a moment ago
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	var id int64
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT id FROM dead_letters WHERE source_kind = 'advisory'`).Scan(&id))
	testfactory.SetStatus(t, r.db.Pool, dlq.StatusDiscarded, id)
	require.Len(t, r.pass(t).Runs, 1, "retention removes the discarded dead letter and keeps its key")
	require.Equal(t, []int64{1}, purgedKeys(t, r, "ADVS"), "its key names the advisory stream")

	// The advisory stream lets the advisory go; the keeper trims its key.
	require.NoError(t, s.Purge(ctx, jetstream.WithPurgeSequence(2)))
	clock := time.Now()
	k := dlq.NewKeeper(st, dlq.KeeperConfig{JetStream: js, Every: time.Minute, AckWait: time.Minute,
		Now: func() time.Time { return clock }}, nil, quiet)
	for _, step := range []time.Duration{0, time.Minute} {
		clock = clock.Add(step)
		_, err := k.Pass(ctx)
		require.NoError(t, err)
	}
	require.Empty(t, purgedKeys(t, r, "ADVS"), "the key went: the advisory stream no longer holds #1")

	// The held advisory is stored at last.
	res, err = st.Insert(ctx, []dlq.Record{rec})
	require.NoError(t, err)
	require.Len(t, res.Inserted, 1, "a held record is not dropped")
	var flags []string
	var status string
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT flags, status FROM dead_letters WHERE source_kind = 'advisory'`).Scan(&flags, &status))
	t.Logf("stored again: status %s, flags %v", status, flags)
	assert.Contains(t, flags, dlq.FlagAfterKeyTrim,
		"a captured give-up retention removed, held past its key's trim, comes back clean and replayable, unlike a DLQ message")
}
