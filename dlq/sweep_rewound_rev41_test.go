package dlq

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// rewindBed is a DLQ stream on a NATS server whose store a test copies
// (save) and puts back (restore) between restarts on the same port: what
// the server holds after a crash that lost what it had not written, or a
// volume restored from a snapshot. in sweeps it; nothing ingests.
type rewindBed struct {
	*bundle
	in        *Ingester
	dir, snap string
	port      int
}

func newRewindBed(t *testing.T) *rewindBed {
	t.Helper()
	dir := t.TempDir()
	ns := natstest.StartWithStore(t, dir)
	r := &rewindBed{bundle: &bundle{db: testdb.New(t), ns: ns}, dir: dir, snap: t.TempDir(), port: ns.Addr().(*net.TCPAddr).Port}
	r.nc, r.js = ns.Connect(t)
	r.store = NewStore(r.db.Pool)
	r.in, _ = r.idle(t, IngestConfig{})
	return r
}

// restart stops the server, saves its store (restore: puts the saved one
// back), and starts it again on the same port.
func (r *rewindBed) restart(t *testing.T, restore bool) {
	t.Helper()
	r.ns.Shutdown()
	r.ns.WaitForShutdown()
	if restore {
		require.NoError(t, os.RemoveAll(r.dir))
		require.NoError(t, os.CopyFS(r.dir, os.DirFS(r.snap)))
	} else {
		require.NoError(t, os.CopyFS(r.snap, os.DirFS(r.dir)))
	}
	r.ns = natstest.StartWithOptions(t, r.dir, func(o *server.Options) { o.Port = r.port })
	wait.Until(t, "the client connected again", time.Minute, r.nc.IsConnected)
}

// send publishes a dead letter of each payload to the DLQ stream.
func (r *rewindBed) send(t *testing.T, payloads ...string) {
	t.Helper()
	for _, p := range payloads {
		publish(t, r.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p), Header: nats.Header{
			HeaderOriginalSubject: {"app.acme.search.index_update"}, HeaderOriginalMsgID: {p}}})
	}
}

// sweep sweeps the DLQ stream once.
func (r *rewindBed) sweep(t *testing.T) {
	t.Helper()
	_, err := r.in.sweep(context.Background(), "DLQ")
	require.NoError(t, err)
}

// rows counts the rows of payload.
func (r *rewindBed) rows(t *testing.T, payload string) int {
	t.Helper()
	return countRows(t, r.db.Pool, "payload = $1", []byte(payload))
}

// storedOnce asserts that each payload has one row (why: what a row less
// would mean).
func (r *rewindBed) storedOnce(t *testing.T, why string, payloads ...string) {
	t.Helper()
	for _, p := range payloads {
		assert.Equal(t, 1, r.rows(t, p), "%s: %s", p, why)
	}
}

// deadLetters sends a dead letter of each payload, takes them off the
// ingest consumer as a peek does (acked without a row), and sweeps.
func (r *rewindBed) deadLetters(t *testing.T, payloads ...string) sweepResult {
	t.Helper()
	r.send(t, payloads...)
	r.peek(t, "DLQ", len(payloads))
	res, err := r.in.sweep(context.Background(), "DLQ")
	require.NoError(t, err)
	return res
}

// strictFrom is the first sequence stream's sweep proves by key (nil:
// none).
func (r *rewindBed) strictFrom(t *testing.T, stream string) *int64 {
	t.Helper()
	var from *int64
	require.NoError(t, r.db.Pool.QueryRow(context.Background(), `SELECT strict_from FROM ingest_sweep_watermark WHERE stream = $1`, stream).Scan(&from))
	return from
}

// TestRev41SweepAfterTheStreamLostItsLastMessages: the DLQ stream's
// server comes back without the last messages it stored (it crashed before
// writing them, or its volume was restored from a copy), the stream's name
// and creation time unchanged, and numbers the next dead letters with the
// lost ones' sequences. The sweep had proven those sequences, by the lost
// messages' rows, and never looked at them again: new dead letters acked
// there without a row (an on-call's peek) were never stored. The sweep
// now finds the stream rewound (the last message it saw is gone) and
// proves the sequences the loss may have reused by each message's own
// source key.
func TestRev41SweepAfterTheStreamLostItsLastMessages(t *testing.T) {
	t.Parallel()
	r := newRewindBed(t)

	r.deadLetters(t, "old 1", "old 2", "old 3")
	r.restart(t, false) // the copy holds #1-#3
	r.deadLetters(t, "lost 4", "lost 5", "lost 6")
	r.storedOnce(t, "stored before the loss", "old 1", "old 3", "lost 4", "lost 6")
	r.restart(t, true) // #4-#6 lost; the same stream, its ack floor at #3
	st, err := r.js.Stream(context.Background(), "DLQ")
	require.NoError(t, err)
	require.Equal(t, uint64(3), st.CachedInfo().State.LastSeq)

	r.deadLetters(t, "new 4", "new 5") // #4, #5 again
	r.storedOnce(t, "a dead letter acked without a row at a lost message's sequence is stored", "new 4", "new 5")
	r.deadLetters(t, "new 6", "new 7") // past the stream's end the sweep had seen
	r.storedOnce(t, "stored", "new 6", "new 7")
	r.storedOnce(t, "stored once, kept", "old 1", "old 2", "old 3", "lost 4", "lost 5", "lost 6")
	assert.Equal(t, int64(7), r.sweptTo(t, "DLQ"))
}

// TestRev41SweepAfterTheStreamLostMessagesItHadNotProven: the same when
// the loss begins past what the sweep had proven: the console had stored
// the dead letters there (the ingester's rows; their acks never applied)
// and the sweep had seen the stream's last one. The new dead letters at
// the lost ones' sequences were proven by the lost ones' rows, stored
// after the first message the sweep had still to prove. Those sequences
// are proven by each message's own source key now.
func TestRev41SweepAfterTheStreamLostMessagesItHadNotProven(t *testing.T) {
	t.Parallel()
	r := newRewindBed(t)
	r.deadLetters(t, "old 1", "old 2", "old 3", "old 4") // proven to #4
	r.send(t, "kept 5", "kept 6")
	r.restart(t, false) // the copy holds #1-#6, #5 and #6 not yet delivered

	r.send(t, "lost 7", "lost 8")
	ingest := r.start(t, IngestConfig{}, func(int) bool { return false }) // stored, never acked
	wait.Until(t, "the ingester stored #5-#8", time.Minute, func() bool { return r.rows(t, "kept 5") == 1 && r.rows(t, "lost 8") == 1 })
	ingest.stop()
	r.sweep(t) // nothing to prove (the ack floor at #4); it sees the stream's last, #8

	r.restart(t, true) // #7 and #8 lost
	r.send(t, "new 7", "new 8")
	r.peek(t, "DLQ", 4) // #5-#8, acked without a row
	r.sweep(t)
	r.storedOnce(t, "a dead letter acked without a row at a lost message's sequence is stored", "new 7", "new 8")
	r.storedOnce(t, "stored once, kept", "old 1", "old 4", "kept 5", "kept 6", "lost 7", "lost 8")
	assert.Equal(t, int64(8), r.sweptTo(t, "DLQ"))
}

// TestRev41SweepAfterALossFindsNewMessagesByAClockBehind: the server
// that lost the messages ran ahead of the one storing the new ones (a
// replaced node, a VM reverted to a snapshot whose clock resumes behind):
// the new dead letters were stored "before" the lost probe by the clocks,
// and the sweep took them for kept ones, proven by nothing. The search for
// where the loss begins looks an hour before the lost probe's time, never
// past its sequence; the kept ones within that hour are found stored by
// their keys, no more are read, and no row is stored twice.
func TestRev41SweepAfterALossFindsNewMessagesByAClockBehind(t *testing.T) {
	t.Parallel()
	r := newRewindBed(t)
	ctx := context.Background()

	r.deadLetters(t, "old 1", "old 2", "old 3")
	r.restart(t, false)
	r.deadLetters(t, "lost 4", "lost 5", "lost 6")
	// The server that stored #4-#6 ran half an hour ahead.
	_, err := r.db.Pool.Exec(ctx, `UPDATE ingest_sweep_watermark SET probe_at = probe_at + interval '30 minutes' WHERE stream = 'DLQ'`)
	require.NoError(t, err)
	_, err = r.db.Pool.Exec(ctx, `UPDATE dead_letters SET dead_lettered_at = dead_lettered_at + interval '30 minutes' WHERE payload IN ('lost 4', 'lost 5', 'lost 6')`)
	require.NoError(t, err)
	r.restart(t, true)

	res := r.deadLetters(t, "new 4", "new 5")
	r.storedOnce(t, "a new dead letter stored 'before' the lost one by the clocks is stored", "new 4", "new 5")
	assert.Equal(t, uint64(2), res.Stored, "%+v", res)
	assert.LessOrEqual(t, res.AlreadyStored, uint64(3), "the kept ones within the margin are read again, no more: %+v", res)
	assert.NotNil(t, r.strictFrom(t, "DLQ"), "proven by key up to the lost probe (#6) until the sweep is past it")

	r.deadLetters(t, "new 6", "new 7")
	r.storedOnce(t, "stored once", "new 6", "new 7", "old 1", "old 2", "old 3", "lost 4", "lost 5", "lost 6")
	assert.Nil(t, r.strictFrom(t, "DLQ"), "past the sequences the loss may have reused")
	assert.Equal(t, int64(7), r.sweptTo(t, "DLQ"))
}

// TestRev41SweepAfterALossProvesByKeyPastTheProbe: messages lost after the
// sweep last saw the stream (its probe) had rows all the same, stored by
// their deliveries; the new messages at their sequences were proven by
// sweepRange's time window, which those rows fall in when the lost
// server's clock ran ahead of the new one's. Every sequence a row stored
// since names is proven by each message's own source key.
func TestRev41SweepAfterALossProvesByKeyPastTheProbe(t *testing.T) {
	t.Parallel()
	r := newRewindBed(t)
	ctx := context.Background()
	r.deadLetters(t, "old 1", "old 2", "old 3")
	r.restart(t, false)                            // the copy holds #1-#3
	r.deadLetters(t, "lost 4", "lost 5", "lost 6") // the probe at #6
	r.send(t, "lost 7", "lost 8")
	ingest := r.start(t, IngestConfig{}, func(int) bool { return false })
	wait.Until(t, "the ingester stored #7 and #8", time.Minute, func() bool { return r.rows(t, "lost 7") == 1 && r.rows(t, "lost 8") == 1 })
	ingest.stop()
	r.restart(t, true) // #4-#8 lost

	r.send(t, "new 4", "new 5", "new 6", "new 7", "new 8", "new 9", "new 10")
	r.peek(t, "DLQ", 7)
	// The lost server's clock ran ahead of the new one's by about the
	// restart's length: the lost rows' stored times lie among the new ones'.
	for seq, payload := range map[uint64]string{7: "lost 7", 8: "lost 8"} {
		m, err := readStored(ctx, r.js, "DLQ", seq, false)
		require.NoError(t, err)
		_, err = r.db.Pool.Exec(ctx, `UPDATE dead_letters SET dead_lettered_at = $2 WHERE payload = $1`, []byte(payload), m.Time.Add(time.Millisecond))
		require.NoError(t, err)
	}
	r.sweep(t)
	r.storedOnce(t, "stored once", "new 4", "new 5", "new 6", "new 7", "new 8", "new 9", "new 10", "lost 7", "lost 8")
	assert.Equal(t, int64(10), r.sweptTo(t, "DLQ"))
}
