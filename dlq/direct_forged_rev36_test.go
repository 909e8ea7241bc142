package dlq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
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

// workQueue makes stream WQ (subjects wq.>) beside b's DLQ: a work queue
// that allows direct gets, which refuses the consumers the console reads
// by (readByConsumer).
func (b *bundle) workQueue(t *testing.T) {
	t.Helper()
	_, err := b.js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "WQ", Subjects: []string{"wq.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, AllowDirect: true})
	require.NoError(t, err)
}

// TestRev36ForgedDirectGetHeadersAreNotBelieved: a dead letter whose
// header block names another message's sequence, time and subject in the
// headers a direct get adds, hidden from the NATS client's reading of the
// answer, is read as what the stream stored, on a stream that allows
// direct gets, a work queue (which refuses the console's consumers) too:
// a read of the first message at or after it is that message, with its
// own sequence and time; a read after it is the next message (not "none
// left"), and a read of it by its sequence is it. On the work queue, one
// too large for JetStream's JSON API is not read: a direct get's answer
// says which message it is in headers its producer wrote.
func TestRev36ForgedDirectGetHeadersAreNotBelieved(t *testing.T) {
	t.Parallel()
	b := directBundle(t)
	ctx := context.Background()
	b.workQueue(t)
	raw := b.ns.DialRaw(t)
	for _, stream := range []string{"DLQ", "WQ"} {
		prefix := strings.ToLower(stream)
		before := time.Now().Add(-time.Minute)
		first, err := raw.Publish(prefix+".acme.a", []byte("NATS/1.0\r\nX: 1\r\n\r\n"), []byte("one"))
		require.NoError(t, err)
		earlier, err := raw.Publish(prefix+".evil.a", forgedBlock("1"), []byte("names #1"))
		require.NoError(t, err)
		gone, err := raw.Publish(prefix+".evil.b", forgedBlock("999999"), []byte("names a sequence past the end"))
		require.NoError(t, err)
		last, err := raw.Publish(prefix+".acme.c", []byte("NATS/1.0\r\nX: 3\r\n\r\n"), []byte("three"))
		require.NoError(t, err)
		require.Equal(t, []uint64{1, 2, 3, 4}, []uint64{first.Seq, earlier.Seq, gone.Seq, last.Seq})

		for _, tc := range []struct {
			seq  uint64
			next bool
			data string
		}{
			{2, true, "names #1"}, {2, false, "names #1"},
			{3, true, "names a sequence past the end"}, {3, false, "names a sequence past the end"},
		} {
			st, err := readStored(ctx, b.js, stream, tc.seq, tc.next)
			require.NoError(t, err, "%s #%d next=%v", stream, tc.seq, tc.next)
			assert.Equal(t, tc.seq, st.Seq, "%s #%d next=%v: the stream's sequence", stream, tc.seq, tc.next)
			assert.Equal(t, tc.data, string(st.Data))
			assert.True(t, st.Time.After(before), "%s #%d next=%v: the stream's stored time, not the producer's (%s)", stream, tc.seq, tc.next, st.Time)
			assert.True(t, strings.HasPrefix(st.Subject, prefix+".evil."), "%s #%d next=%v: the stream's subject, not the producer's (%s)", stream, tc.seq, tc.next, st.Subject)
		}
		st, err := readStored(ctx, b.js, stream, 1, false)
		require.NoError(t, err)
		assert.Equal(t, "one", string(st.Data))
	}

	big, err := raw.Publish("wq.evil.big", forgedBlock("1"), bytes.Repeat([]byte("y"), storedJSONMax+1))
	require.NoError(t, err)
	for _, next := range []bool{false, true} {
		st, err := readStored(ctx, b.js, "WQ", big.Seq, next)
		require.Error(t, err, "next=%v: read as %+v", next, st)
		assert.False(t, errors.Is(err, jetstream.ErrMsgNotFound), "next=%v: %v", next, err)
		assert.Contains(t, err.Error(), "headers its producer can forge")
	}
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

// paddedForged is forgedBlock padded with lines the NATS client reads
// longer than they are sent ("A:1" with a bare LF, read back as
// "A: 1\r\n"), so that the headers the client read, written out again,
// are as long as the whole block with the server's headers (serverLen
// bytes of them) after it: a length no longer tells a block read whole.
func paddedForged(serverLen int, seq string) []byte {
	forged := "Nats-Sequence: " + seq + "\r\nNats-Time-Stamp: 2021-01-01T00:00:00Z\r\nNats-Subject: dlq.victim.x\r\n"
	var pad strings.Builder
	need := serverLen + 2
	for ; need >= 2; need -= 2 {
		pad.WriteString("A:1\n")
	}
	if need == 1 {
		pad.WriteString("B:1\r\n")
	}
	return []byte("NATS/1.0\r\n" + forged + pad.String() + "\r\n\r\n")
}

// TestRev36PaddedDirectGetForgeryIsNotBelieved: dead letters whose forged
// blocks are padded for the length of the server's headers after them
// (one for each length a stored time may print in) are each read as the
// stream stored it, by its sequence and as the first at or after it, on a
// stream that allows direct gets and on a work queue: never under the
// producer's sequence or subject.
func TestRev36PaddedDirectGetForgeryIsNotBelieved(t *testing.T) {
	t.Parallel()
	b := directBundle(t)
	ctx := context.Background()
	b.workQueue(t)
	raw := b.ns.DialRaw(t)
	for _, stream := range []string{"DLQ", "WQ"} {
		subject := strings.ToLower(stream) + ".evil.x"
		for i, forged := range []string{"999999", "1"} {
			for tsLen := 20; tsLen <= 30; tsLen++ {
				seq := uint64(i*11 + tsLen - 19)
				server := len("Nats-Stream: "+stream+"\r\n") + len("Nats-Subject: "+subject+"\r\n") + len(fmt.Sprintf("Nats-Sequence: %d\r\n", seq)) +
					len("Nats-Time-Stamp: \r\n") + tsLen
				ack, err := raw.Publish(subject, paddedForged(server, forged), []byte(fmt.Sprint(seq)))
				require.NoError(t, err)
				require.Equal(t, seq, ack.Seq)
			}
		}
		for seq := uint64(1); seq <= 22; seq++ {
			for _, next := range []bool{false, true} {
				st, err := readStored(ctx, b.js, stream, seq, next)
				require.NoError(t, err, "%s #%d next=%v", stream, seq, next)
				assert.Equal(t, seq, st.Seq, "%s #%d next=%v", stream, seq, next)
				assert.Equal(t, subject, st.Subject, "%s #%d next=%v", stream, seq, next)
				assert.Equal(t, fmt.Sprint(seq), string(st.Data), "%s #%d next=%v", stream, seq, next)
			}
		}
	}
}

// TestRev36MessageAtMaxPayloadIsRead: a message published whole under the
// server's max_payload, too large for JetStream's JSON API, is read by a
// consumer on a stream that allows direct gets: the pull's bytes leave
// room for the delivery's subjects, which the server counts too, or it
// would answer 409 Message Size Exceeds MaxBytes and the message would
// never be read.
func TestRev36MessageAtMaxPayloadIsRead(t *testing.T) {
	t.Parallel()
	b := directBundle(t)
	ctx := context.Background()
	payload := bytes.Repeat([]byte("y"), int(b.nc.MaxPayload())-40) // with its header block, just under max_payload
	m := nats.NewMsg("dlq.acme.search.index_update")
	m.Header.Set("X-A", "b")
	m.Data = payload
	ack, err := b.js.PublishMsg(ctx, m)
	require.NoError(t, err)
	for _, next := range []bool{false, true} {
		st, err := readStored(ctx, b.js, "DLQ", ack.Sequence, next)
		require.NoError(t, err, "next=%v", next)
		assert.Equal(t, ack.Sequence, st.Seq)
		assert.Equal(t, "b", st.Headers.Get("X-A"))
		assert.True(t, bytes.Equal(payload, st.Data), "next=%v: the payload whole", next)
	}
}

// TestRev36StatusHeaderIsNoOutage: a dead letter with no payload and a
// Status header of 503 is read as the message it is, on a stream that
// allows direct gets and on one that does not: the NATS client's request
// took it for "no responders", which the sweep and the rereads wait out
// as NATS not answering (half an hour, or the sweep stopped there).
func TestRev36StatusHeaderIsNoOutage(t *testing.T) {
	t.Parallel()
	b := directBundle(t)
	ctx := context.Background()
	_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: "PLAIN", Subjects: []string{"plain.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	for _, stream := range []string{"DLQ", "PLAIN"} {
		m := nats.NewMsg(strings.ToLower(stream) + ".acme.x")
		m.Header.Set("Status", "503")
		ack, err := b.js.PublishMsg(ctx, m)
		require.NoError(t, err)
		for _, next := range []bool{false, true} {
			st, err := readStored(ctx, b.js, stream, ack.Sequence, next)
			require.NoError(t, err, "%s next=%v", stream, next)
			assert.Equal(t, ack.Sequence, st.Seq)
			assert.Empty(t, st.Data)
		}
	}
}

// TestRev36DirectGetNoneIsNotTheStreamsWord: a mirror that serves direct
// gets for the DLQ stream (mirror_direct) and keeps only its last message
// answers "none" for ones the stream still holds, in turn with the
// stream: every read of those finds them all the same, by the stream's
// leader.
func TestRev36DirectGetNoneIsNotTheStreamsWord(t *testing.T) {
	t.Parallel()
	b := directBundle(t)
	ctx := context.Background()
	for i := range 3 {
		_, err := b.js.Publish(ctx, "dlq.acme.search.index_update", []byte(fmt.Sprint("m", i+1)))
		require.NoError(t, err)
	}
	mirror, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQM", MaxMsgs: 1, MirrorDirect: true, Mirror: &jetstream.StreamSource{Name: "DLQ"}})
	require.NoError(t, err)
	wait.Until(t, "the mirror caught up", time.Minute, func() bool {
		info, err := mirror.Info(ctx)
		return err == nil && info.State.LastSeq == 3
	})
	for range 20 {
		for _, next := range []bool{false, true} {
			st, err := readStored(ctx, b.js, "DLQ", 1, next)
			require.NoError(t, err, "next=%v", next)
			assert.Equal(t, uint64(1), st.Seq)
			assert.Equal(t, "m1", string(st.Data))
		}
	}
}

// TestRev36WorkQueueHoldsNoneBeyondItsEnds: on a work queue that allows
// direct gets (it refuses the consumers the console reads by) and holds
// more than JetStream's JSON API may answer, a sequence before its first
// message or after its last is none, as the stream's info says, not a
// read that failed; and the first at or after one before its first
// message is its first.
func TestRev36WorkQueueHoldsNoneBeyondItsEnds(t *testing.T) {
	t.Parallel()
	b := directBundle(t)
	ctx := context.Background()
	b.workQueue(t)
	big := bytes.Repeat([]byte("y"), storedJSONMax+1)
	for _, data := range [][]byte{big, []byte("small"), big} {
		_, err := b.js.Publish(ctx, "wq.acme.x", data)
		require.NoError(t, err)
	}
	wq, err := b.js.Stream(ctx, "WQ")
	require.NoError(t, err)
	require.NoError(t, wq.DeleteMsg(ctx, 1))

	for _, tc := range []struct {
		seq  uint64
		next bool
	}{{1, false}, {4, false}, {4, true}} {
		_, err := readStored(ctx, b.js, "WQ", tc.seq, tc.next)
		assert.True(t, errors.Is(err, jetstream.ErrMsgNotFound), "#%d next=%v: %v", tc.seq, tc.next, err)
	}
	st, err := readStored(ctx, b.js, "WQ", 1, true)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), st.Seq)
	assert.Equal(t, "small", string(st.Data))
}
