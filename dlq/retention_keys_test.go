package dlq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// purgedKeys are the sequences of the kept source keys of stream, in order.
func purgedKeys(t *testing.T, r *retention, stream string) []int64 {
	t.Helper()
	rows, err := r.db.Pool.Query(context.Background(), `SELECT stream_seq FROM dead_letters_purged WHERE stream = $1 ORDER BY stream_seq`, stream)
	require.NoError(t, err)
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	return seqs
}

// TestRetentionTrimsKeysOfMessagesGone removes dead letters of a real DLQ
// stream by retention (their source keys are kept, each with its stream
// and sequence), then the stream lets its first messages go (a purge, then
// MaxMsgs): the keeper removes the keys below the stream's first sequence
// (as it found it at its previous pass and finds it still), in bounded
// batches, each with an audit row saying how many of which stream, and
// keeps those at or above it. A keeper that cannot read the stream, and
// the keys of a stream that does not exist, remove nothing. A message
// still in the stream is still not stored again.
func TestRetentionTrimsKeysOfMessagesGone(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	st := dlq.NewStore(r.db.Pool)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEYS", Subjects: []string{"keys.>"}})
	require.NoError(t, err)
	var recs []dlq.Record
	for seq := uint64(1); seq <= 6; seq++ {
		_, err := js.Publish(ctx, fmt.Sprintf("keys.%d", seq), []byte("dead letter"))
		require.NoError(t, err)
		recs = append(recs, dlqMessage("KEYS", seq, "orders.refund", fmt.Sprintf("keys-%d", seq), r.daysAgo(40)))
	}
	for seq := uint64(1); seq <= 2; seq++ { // of a stream that does not exist
		recs = append(recs, dlqMessage("GONE", seq, "orders.refund", fmt.Sprintf("gone-%d", seq), r.daysAgo(120)))
	}
	_, err = st.Insert(ctx, recs)
	require.NoError(t, err)
	testfactory.RecordsArrived(t, r.db.Pool, recs...)
	_, err = r.db.Pool.Exec(ctx, dlq.StatusMove(`SELECT d.id, d.dead_lettered_at, d.status FROM dead_letters d FOR UPDATE OF d`, "$1", "id"),
		string(dlq.StatusDiscarded))
	require.NoError(t, err)
	_, err = dlq.FoldCounters(ctx, r.db.Pool)
	require.NoError(t, err)
	pass := r.pass(t) // no JetStream: every key kept
	require.Equal(t, int64(8), pass.Removed())
	assert.Empty(t, pass.KeyRuns)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, purgedKeys(t, r, "KEYS"))
	require.Equal(t, []int64{1, 2}, purgedKeys(t, r, "GONE"))

	require.NoError(t, stream.Purge(ctx, jetstream.WithPurgeSequence(4))) // 1 to 3 gone
	// Each pass a minute after the one before: a look is trusted once it
	// is max(Every, AckWait) old (TestKeeperTrustsOnlyALookOldEnough).
	clock := time.Now()
	keeper := func(js jetstream.JetStream) *dlq.Keeper {
		table, err := replaypolicy.Parse("retention.toml", []byte(retentionPolicy))
		require.NoError(t, err)
		return dlq.NewKeeper(st, dlq.KeeperConfig{Policy: func() dlq.RetentionPolicy { return app.RetentionOf(table.Retention()) }, BatchRows: 2, JetStream: js,
			Every: time.Minute, AckWait: 30 * time.Second, Now: func() time.Time { return clock }}, nil, quiet)
	}
	passOf := func(k *dlq.Keeper) dlq.KeeperPass {
		t.Helper()
		clock = clock.Add(time.Minute)
		pass, err := k.Pass(ctx)
		require.NoError(t, err)
		require.False(t, pass.Skipped)
		return pass
	}

	t.Run("StreamUnreadable", func(t *testing.T) {
		nc, err := nats.Connect(ns.ClientURL())
		require.NoError(t, err)
		closed, err := jetstream.New(nc)
		require.NoError(t, err)
		nc.Close()
		k := keeper(closed)
		for range 2 {
			pass := passOf(k)
			assert.Empty(t, pass.KeyRuns)
			assert.Contains(t, pass.KeysKept, "KEYS")
		}
		assert.Equal(t, []int64{1, 2, 3, 4, 5, 6}, purgedKeys(t, r, "KEYS"), "a stream that cannot be read loses no key")
	})

	k := keeper(js)
	pass = passOf(k)
	assert.Empty(t, pass.KeyRuns, "the first look only notes where the stream begins")
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6}, purgedKeys(t, r, "KEYS"))
	pass = passOf(k)
	require.Len(t, pass.KeyRuns, 2, "batches of BatchRows")
	assert.Equal(t, dlq.TrimRun{Stream: "KEYS", Below: 4, Keys: 2, FromSeq: 1, ToSeq: 2}, pass.KeyRuns[0])
	assert.Equal(t, dlq.TrimRun{Stream: "KEYS", Below: 4, Keys: 1, FromSeq: 3, ToSeq: 3}, pass.KeyRuns[1])
	assert.Equal(t, int64(3), pass.KeysTrimmed())
	assert.Equal(t, []int64{4, 5, 6}, purgedKeys(t, r, "KEYS"), "the keys of messages the stream still holds stay")
	require.Contains(t, pass.KeysKept, "GONE")
	assert.ErrorIs(t, pass.KeysKept["GONE"], jetstream.ErrStreamNotFound)
	assert.Equal(t, []int64{1, 2}, purgedKeys(t, r, "GONE"), "a stream that does not exist loses no key")

	// MaxMsgs lets 4 go too; the next pass notes it, the one after trims.
	cfg := stream.CachedInfo().Config
	cfg.MaxMsgs = 2
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	assert.Empty(t, passOf(k).KeyRuns, "not below where the stream began at the previous pass")
	pass = passOf(k)
	require.Len(t, pass.KeyRuns, 1)
	assert.Equal(t, dlq.TrimRun{Stream: "KEYS", Below: 5, Keys: 1, FromSeq: 4, ToSeq: 4}, pass.KeyRuns[0])
	assert.Equal(t, []int64{5, 6}, purgedKeys(t, r, "KEYS"))
	assert.Empty(t, passOf(k).KeyRuns, "nothing more is below")

	// Each batch wrote its audit row, in its transaction.
	page, err := audit.List(ctx, r.db.Pool, audit.Filter{Action: dlq.ActionTrimKeys, Limit: audit.MaxLimit})
	require.NoError(t, err)
	require.Len(t, page.Entries, 3)
	var keys int64
	for _, e := range page.Entries {
		assert.Equal(t, "KEYS", e.ObjectID)
		assert.Contains(t, e.Reason, "of stream KEYS")
		var after struct {
			Stream string `json:"stream"`
			Keys   int64  `json:"keys"`
		}
		require.NoError(t, json.Unmarshal(e.After, &after))
		assert.Equal(t, "KEYS", after.Stream)
		keys += after.Keys
	}
	assert.Equal(t, int64(4), keys)
	r.verify(t)

	// The messages still in the stream are still not stored again.
	res, err := st.Insert(ctx, recs[4:6])
	require.NoError(t, err)
	assert.Empty(t, res.Inserted)
}

// TestPurgedKeysTrimRecordsItself: quarantine_purged_keys_trim cannot
// check the sequence it is given (the database cannot read the stream), so
// the runtime role may remove with it any kept key that carries a stream,
// and its caller writes the audit row, or not. Each call that removes keys
// now leaves its own record, dead_letters_purged_trims, which the runtime
// role may read and not change: a removal without the keeper's audit row
// stands out. A key without a stream is never removed. Before migration
// 0030 a call left no trace of its own.
func TestPurgedKeysTrimRecordsItself(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	at := r.daysAgo(40)
	for i, stream := range []any{"S", "S", "S", nil} {
		key := make([]byte, 32)
		key[0] = byte(i + 1)
		_, err := r.db.Pool.Exec(ctx, `INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq) VALUES ($1, $2, $3, $4)`,
			at, key, stream, i+1)
		require.NoError(t, err)
	}
	var keys, from, to int64
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT keys, from_seq, to_seq FROM quarantine_purged_keys_trim('S', 9223372036854775807, 10)`).
		Scan(&keys, &from, &to))
	assert.Equal(t, []int64{3, 1, 3}, []int64{keys, from, to}, "the sequence given is trusted")
	var left int
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters_purged WHERE stream IS NULL`).Scan(&left))
	assert.Equal(t, 1, left, "a key without a stream stays")

	var stream, byRole, login string
	var below, n, lo, hi int64
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT stream, below, keys, from_seq, to_seq, by_role, session_user FROM dead_letters_purged_trims`).
		Scan(&stream, &below, &n, &lo, &hi, &byRole, &login))
	assert.Equal(t, "S", stream)
	assert.Equal(t, int64(9223372036854775807), below)
	assert.Equal(t, []int64{3, 1, 3}, []int64{n, lo, hi})
	assert.Equal(t, login, byRole)

	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT keys FROM quarantine_purged_keys_trim('S', 100, 10)`).Scan(&keys))
	assert.Zero(t, keys)
	var records int
	require.NoError(t, r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters_purged_trims`).Scan(&records))
	assert.Equal(t, 1, records, "a call that removed nothing records nothing")
	for _, stmt := range []string{`DELETE FROM dead_letters_purged_trims`, `UPDATE dead_letters_purged_trims SET keys = 0`,
		`INSERT INTO dead_letters_purged_trims (stream, below, keys, from_seq, to_seq) VALUES ('S', 1, 1, 1, 1)`} {
		_, err := r.db.Pool.Exec(ctx, stmt)
		assert.ErrorContains(t, err, "permission denied", "%s: the runtime role may only read the record", stmt)
	}
}

// TestKeeperTrustsOnlyALookOldEnough: the keys below where a stream began
// go only once a look that saw it is max(Every, AckWait) old, by when it
// happened, not by how many passes came since: a ticker that fell behind
// fires passes back to back, and a message the stream delivered just
// before it let it go may still be in an ingester's batch, not yet stored,
// whose key must be there when the batch asks. It used to trust the
// previous pass, however recent.
func TestKeeperTrustsOnlyALookOldEnough(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOOKS", Subjects: []string{"looks.>"}})
	require.NoError(t, err)
	for seq := int64(1); seq <= 4; seq++ {
		_, err := js.Publish(ctx, fmt.Sprintf("looks.%d", seq), []byte("dead letter"))
		require.NoError(t, err)
		key := make([]byte, 32)
		key[0] = byte(seq)
		_, err = r.db.Pool.Exec(ctx, `INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq) VALUES ($1, $2, 'LOOKS', $3)`,
			r.daysAgo(40), key, seq)
		require.NoError(t, err)
	}
	require.NoError(t, stream.Purge(ctx, jetstream.WithPurgeSequence(3))) // 1 and 2 gone

	clock := time.Now()
	k := dlq.NewKeeper(dlq.NewStore(r.db.Pool), dlq.KeeperConfig{JetStream: js, Every: time.Minute, AckWait: 5 * time.Minute,
		Now: func() time.Time { return clock }}, nil, quiet)
	passAt := func(d time.Duration) []dlq.TrimRun {
		t.Helper()
		clock = clock.Add(d)
		pass, err := k.Pass(ctx)
		require.NoError(t, err)
		require.False(t, pass.Skipped)
		return pass.KeyRuns
	}
	assert.Empty(t, passAt(0), "the first look only notes where the stream begins")
	assert.Empty(t, passAt(0), "a pass right after: the look is not old enough")
	assert.Empty(t, passAt(time.Minute), "Every passed, but not the ack wait")
	assert.Equal(t, []int64{1, 2, 3, 4}, purgedKeys(t, r, "LOOKS"))
	runs := passAt(4 * time.Minute) // the first look is now 5 minutes old
	require.Len(t, runs, 1)
	assert.Equal(t, dlq.TrimRun{Stream: "LOOKS", Below: 3, Keys: 2, FromSeq: 1, ToSeq: 2}, runs[0])
	assert.Equal(t, []int64{3, 4}, purgedKeys(t, r, "LOOKS"))

	require.NoError(t, stream.Purge(ctx, jetstream.WithPurgeSequence(4))) // 3 gone
	assert.Empty(t, passAt(0), "the looks old enough saw the stream begin at 3")
	assert.Empty(t, passAt(4*time.Minute+59*time.Second), "the look that saw 4 is not 5 minutes old")
	runs = passAt(time.Second)
	require.Len(t, runs, 1)
	assert.Equal(t, dlq.TrimRun{Stream: "LOOKS", Below: 4, Keys: 1, FromSeq: 3, ToSeq: 3}, runs[0])
	assert.Equal(t, []int64{4}, purgedKeys(t, r, "LOOKS"))
}
