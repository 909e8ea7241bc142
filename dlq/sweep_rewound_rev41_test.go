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

// TestRev41SweepAfterTheStreamLostItsLastMessages: the DLQ stream's
// server comes back without the last messages it stored (it crashed before
// writing them, or its volume was restored from a copy), the stream's name
// and creation time unchanged, and numbers the next dead letters with the
// lost ones' sequences. The sweep had proven those sequences, by the lost
// messages' rows, and never looked at them again: new dead letters acked
// there without a row (an on-call's peek) were never stored. The sweep
// now finds the stream rewound (the last message it saw is gone) and
// proves again from the first message stored since, counting no row
// stored before it.
func TestRev41SweepAfterTheStreamLostItsLastMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, snap := t.TempDir(), t.TempDir()
	ns := natstest.StartWithStore(t, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	b := &bundle{db: testdb.New(t), ns: ns}
	b.nc, b.js = ns.Connect(t)
	b.store = NewStore(b.db.Pool)
	in, _ := b.idle(t, IngestConfig{})

	restart := func(restore bool) {
		t.Helper()
		b.ns.Shutdown()
		b.ns.WaitForShutdown()
		if restore {
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.CopyFS(dir, os.DirFS(snap)))
		} else {
			require.NoError(t, os.CopyFS(snap, os.DirFS(dir)))
		}
		b.ns = natstest.StartWithOptions(t, dir, func(o *server.Options) { o.Port = port })
		wait.Until(t, "the client connected again", time.Minute, b.nc.IsConnected)
	}
	deadLetters := func(payloads ...string) {
		t.Helper()
		for _, p := range payloads {
			publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p), Header: nats.Header{
				HeaderOriginalSubject: {"app.acme.search.index_update"}, HeaderOriginalMsgID: {p}}})
		}
		b.peek(t, "DLQ", len(payloads)) // acked without a row
		_, err := in.sweep(ctx, "DLQ")
		require.NoError(t, err)
	}
	rows := func(payload string) int {
		var n int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE payload = $1`, []byte(payload)).Scan(&n))
		return n
	}

	deadLetters("old 1", "old 2", "old 3")
	restart(false) // the copy holds #1-#3
	deadLetters("lost 4", "lost 5", "lost 6")
	for _, p := range []string{"old 1", "old 3", "lost 4", "lost 6"} {
		require.Equal(t, 1, rows(p), p)
	}
	restart(true) // #4-#6 lost; the same stream, its ack floor at #3
	st, err := b.js.Stream(ctx, "DLQ")
	require.NoError(t, err)
	require.Equal(t, uint64(3), st.CachedInfo().State.LastSeq)

	deadLetters("new 4", "new 5") // #4, #5 again
	assert.Equal(t, 1, rows("new 4"), "a dead letter acked without a row at a lost message's sequence is stored")
	assert.Equal(t, 1, rows("new 5"))
	deadLetters("new 6", "new 7") // past the stream's end the sweep had seen
	assert.Equal(t, 1, rows("new 6"))
	assert.Equal(t, 1, rows("new 7"))
	for _, p := range []string{"old 1", "old 2", "old 3", "lost 4", "lost 5", "lost 6"} {
		assert.Equal(t, 1, rows(p), "%s: stored once, kept", p)
	}
	assert.Equal(t, int64(7), b.sweptTo(t, "DLQ"))
}

// TestRev41SweepAfterTheStreamLostMessagesItHadNotProven: the same when
// the loss begins past what the sweep had proven: the console had stored
// the dead letters there (the ingester's rows; their acks never applied)
// and the sweep had seen the stream's last one. The new dead letters at
// the lost ones' sequences were proven by the lost ones' rows, stored
// after the first message the sweep had still to prove. No row stored
// before the first new message counts for one now.
func TestRev41SweepAfterTheStreamLostMessagesItHadNotProven(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, snap := t.TempDir(), t.TempDir()
	ns := natstest.StartWithStore(t, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	b := &bundle{db: testdb.New(t), ns: ns}
	b.nc, b.js = ns.Connect(t)
	b.store = NewStore(b.db.Pool)
	in, _ := b.idle(t, IngestConfig{})
	send := func(payloads ...string) {
		t.Helper()
		for _, p := range payloads {
			publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p), Header: nats.Header{
				HeaderOriginalSubject: {"app.acme.search.index_update"}, HeaderOriginalMsgID: {p}}})
		}
	}
	rows := func(payload string) int {
		var n int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE payload = $1`, []byte(payload)).Scan(&n))
		return n
	}
	sweep := func() {
		t.Helper()
		_, err := in.sweep(ctx, "DLQ")
		require.NoError(t, err)
	}

	send("old 1", "old 2", "old 3", "old 4")
	b.peek(t, "DLQ", 4)
	sweep() // proven to #4
	send("kept 5", "kept 6")
	b.ns.Shutdown()
	b.ns.WaitForShutdown()
	require.NoError(t, os.CopyFS(snap, os.DirFS(dir))) // #1-#6, #5 and #6 not yet delivered
	b.ns = natstest.StartWithOptions(t, dir, func(o *server.Options) { o.Port = port })
	wait.Until(t, "the client connected again", time.Minute, b.nc.IsConnected)

	send("lost 7", "lost 8")
	r := b.start(t, IngestConfig{}, func(int) bool { return false }) // stored, never acked
	wait.Until(t, "the ingester stored #5-#8", time.Minute, func() bool { return rows("kept 5") == 1 && rows("lost 8") == 1 })
	r.stop()
	sweep() // nothing to prove (the ack floor at #4); it sees the stream's last, #8

	b.ns.Shutdown()
	b.ns.WaitForShutdown()
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.CopyFS(dir, os.DirFS(snap))) // #7 and #8 lost
	b.ns = natstest.StartWithOptions(t, dir, func(o *server.Options) { o.Port = port })
	wait.Until(t, "the client connected again", time.Minute, b.nc.IsConnected)

	send("new 7", "new 8")
	b.peek(t, "DLQ", 4) // #5-#8, acked without a row
	sweep()
	assert.Equal(t, 1, rows("new 7"), "a dead letter acked without a row at a lost message's sequence is stored")
	assert.Equal(t, 1, rows("new 8"))
	for _, p := range []string{"old 1", "old 4", "kept 5", "kept 6", "lost 7", "lost 8"} {
		assert.Equal(t, 1, rows(p), "%s: stored once, kept", p)
	}
	assert.Equal(t, int64(8), b.sweptTo(t, "DLQ"))
}
