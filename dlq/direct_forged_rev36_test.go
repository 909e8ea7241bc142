package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// forgedBlock is a header block whose producer wrote the headers a direct
// get adds (which message it is, when and where it was stored) and ended
// it with a blank line more: the server writes its own headers after the
// block's last two bytes, and the NATS client stops reading at the blank
// line before them.
func forgedBlock(seq string) []byte {
	return []byte("NATS/1.0\r\nNats-Sequence: " + seq + "\r\nNats-Time-Stamp: 2021-01-01T00:00:00Z\r\nNats-Subject: dlq.victim.x\r\n\r\n\r\n")
}

// directBundle is setup's bundle on a server that takes messages over
// storedJSONMax, so that the DLQ stream (made here, with direct gets
// allowed, as an operator may make it) is read by direct gets.
func directBundle(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{db: testdb.New(t), ns: natstest.StartWithOptions(t, t.TempDir(), func(o *server.Options) { o.MaxPayload = 16 << 20 })}
	b.nc, b.js = b.ns.Connect(t)
	b.store = NewStore(b.db.Pool)
	_, err := b.js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"},
		Storage: jetstream.FileStorage, Duplicates: DuplicateWindow, AllowDirect: true})
	require.NoError(t, err)
	return b
}

// TestRev36ForgedDirectGetHeadersAreNotBelieved: a dead letter whose
// header block names another message's sequence, time and subject in the
// headers a direct get adds, hidden from the NATS client's reading of the
// answer, is read as what the stream stored: a read of the first message
// at or after it is that message, with its own sequence and time; a read
// after it is the next message (not "none left"), and a read of it by
// its sequence is it.
func TestRev36ForgedDirectGetHeadersAreNotBelieved(t *testing.T) {
	t.Parallel()
	b := directBundle(t)
	ctx := context.Background()
	raw := b.ns.DialRaw(t)
	before := time.Now().Add(-time.Minute)
	first, err := raw.Publish("dlq.acme.a", []byte("NATS/1.0\r\nX: 1\r\n\r\n"), []byte("one"))
	require.NoError(t, err)
	earlier, err := raw.Publish("dlq.evil.a", forgedBlock("1"), []byte("names #1"))
	require.NoError(t, err)
	gone, err := raw.Publish("dlq.evil.b", forgedBlock("999999"), []byte("names a sequence past the end"))
	require.NoError(t, err)
	last, err := raw.Publish("dlq.acme.c", []byte("NATS/1.0\r\nX: 3\r\n\r\n"), []byte("three"))
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3, 4}, []uint64{first.Seq, earlier.Seq, gone.Seq, last.Seq})

	for _, tc := range []struct {
		seq  uint64
		next bool
		want uint64
		data string
	}{
		{2, true, 2, "names #1"}, {2, false, 2, "names #1"},
		{3, true, 3, "names a sequence past the end"}, {3, false, 3, "names a sequence past the end"},
	} {
		st, err := readStored(ctx, b.js, "DLQ", tc.seq, tc.next)
		require.NoError(t, err, "#%d next=%v", tc.seq, tc.next)
		assert.Equal(t, tc.want, st.Seq, "#%d next=%v: the stream's sequence", tc.seq, tc.next)
		assert.Equal(t, tc.data, string(st.Data))
		assert.True(t, st.Time.After(before), "#%d next=%v: the stream's stored time, not the producer's (%s)", tc.seq, tc.next, st.Time)
		assert.NotEqual(t, "dlq.victim.x", st.Subject)
	}
	st, err := readStored(ctx, b.js, "DLQ", 1, false)
	require.NoError(t, err)
	assert.Equal(t, "one", string(st.Data), "a block the client reads whole is still read by its direct get")
	assert.Equal(t, "1", st.Headers.Get("X"))
}

// TestRev36SweepStoresPastAForgedDirectGet: dead letters acked without a
// row around ones whose blocks forge a direct get's headers (one naming a
// sequence past the end, which read as "the stream holds none from here",
// one naming an earlier message, on which the sweep went round for ever
// holding its watermark's lock) are all stored by one sweep, and the
// next finds nothing missing.
func TestRev36SweepStoresPastAForgedDirectGet(t *testing.T) {
	t.Parallel()
	b := directBundle(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})
	raw := b.ns.DialRaw(t)
	ok := func() {
		_, err := raw.Publish("dlq.acme.search.index_update", []byte("NATS/1.0\r\nX: 1\r\n\r\n"), []byte("ok"))
		require.NoError(t, err)
	}
	ok()
	_, err := raw.Publish("dlq.evil.x", forgedBlock("1"), []byte("names #1"))
	require.NoError(t, err)
	_, err = raw.Publish("dlq.evil.y", forgedBlock("999999"), []byte("names a sequence past the end"))
	require.NoError(t, err)
	ok()
	ok()
	const total = 5
	_, err = b.js.ResetConsumerToSequence(ctx, "DLQ", "quarantine-ingest", total+1)
	require.NoError(t, err)
	wait.Until(t, "the ack floor past them all", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == total })

	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := in.sweep(sctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(total), res.Stored, "%+v", res)
	assert.Equal(t, uint64(0), res.Deleted, "%+v", res)
	assert.Equal(t, total, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'names #1' AND source_seq = 2"))
	assert.Equal(t, int64(total), b.sweptTo(t, "DLQ"))

	res, err = in.sweep(sctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(0), res.Missing, "%+v", res)
}
