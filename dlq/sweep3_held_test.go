package dlq

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// heldOf is what the sweep holds of stream, as kept with its watermark.
func (b *bundle) heldOf(t *testing.T, stream string) []int64 {
	t.Helper()
	var held []int64
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT held FROM ingest_sweep_watermark WHERE stream = $1`, stream).Scan(&held))
	return held
}

// sweepUntil sweeps stream until done says so, at most n times, each
// sweep without an error; it returns how many it took.
func sweepUntil(t *testing.T, in *Ingester, stream string, n int, done func() bool) int {
	t.Helper()
	for i := 1; i <= n; i++ {
		_, err := in.sweep(context.Background(), stream)
		require.NoError(t, err, "sweep %d", i)
		if done() {
			return i
		}
	}
	return n + 1
}

// refuseHostile has PostgreSQL refuse, in every form, the dead letters
// whose payload is "hostile" (and only those: refusePayloads refuses an
// empty payload too).
func refuseHostile(t *testing.T, b *bundle) {
	t.Helper()
	_, err := b.db.OwnerPool.Exec(context.Background(), `
        CREATE FUNCTION test_refuses_hostile() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'hostile'::bytea THEN RAISE EXCEPTION 'test refuses hostile'; END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_refuses_hostile BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refuses_hostile();`)
	require.NoError(t, err)
}

// TestSweep3HostileHeldPastTheCapStopNothing: more dead letters than
// sweepHeldMax that PostgreSQL refuses for their content (in parsed and
// raw form), acked without a row. Dead letters acked after them are
// stored within sweepHeldTries sweeps: each hostile one is held at most
// that many sweeps, then stored without its content, flagged
// content_refused (its payload's SHA-256 kept, where it lies in the
// reason), and the watermark reaches the ack floor. Before, the hundred
// held ones stopped the sweep from going on past them for good.
func TestSweep3HostileHeldPastTheCapStopNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})
	const hostile = sweepHeldMax + 1
	payloads := map[int]string{}
	for seq := 1; seq <= hostile; seq++ {
		payloads[seq] = "hostile"
	}
	publishAcked(t, b, hostile, payloads)
	refuseHostile(t, b)
	_, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	require.Len(t, b.heldOf(t, "DLQ"), sweepHeldMax, "as many held as the sweep holds")

	// Dead letters acked after them, as a peek acks them.
	const later = 5
	for range later {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("later")})
	}
	_, err = b.js.ResetConsumerToSequence(ctx, "DLQ", "quarantine-ingest", hostile+later+1)
	require.NoError(t, err)
	wait.Until(t, "the ack floor past them all", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == hostile+later })

	took := sweepUntil(t, in, "DLQ", sweepHeldTries, func() bool { return countRows(t, b.db.Pool, "payload = 'later'") == later })
	assert.LessOrEqual(t, took, sweepHeldTries-1, "the later ones stored once the hostile ones were held %d sweeps", sweepHeldTries)
	sweepUntil(t, in, "DLQ", 2*sweepHeldTries, func() bool { return b.sweptTo(t, "DLQ") == hostile+later })
	assert.Equal(t, int64(hostile+later), b.sweptTo(t, "DLQ"), "the watermark at the ack floor")
	assert.Empty(t, b.heldOf(t, "DLQ"))
	assert.Equal(t, hostile, countRows(t, b.db.Pool, "'content_refused' = ANY(flags)"), "every hostile one stored, flagged")

	d := b.row(t, "source_seq = 1")
	sum := sha256.Sum256([]byte("hostile"))
	assert.Equal(t, "acme", d.Tenant)
	assert.Equal(t, "search.index_update", d.ItemType)
	assert.Empty(t, d.Payload, "not the content PostgreSQL refuses")
	assert.True(t, d.PayloadUnavailable, "never replayed")
	assert.Equal(t, sum[:], d.PayloadSHA256, "the payload's hash kept, to tell it from the message read by hand")
	assert.Empty(t, d.OriginalSubject)
	assert.Equal(t, []string{"content_refused"}, d.Flags)
	require.Len(t, d.MalformedReasons, 1)
	assert.Contains(t, d.MalformedReasons[0], "test refuses hostile")
	assert.Contains(t, d.MalformedReasons[0], "nats stream get DLQ 1")
	assert.True(t, strings.HasPrefix(d.Delivery, "DLQ #1 stored "), "under the key its delivery has: %s", d.Delivery)
}

// TestSweep3HoldsWhatPostgresRefusesWhole: PostgreSQL refuses every row
// (here a trigger; a broken grant or constraint does the same), so the
// position form too: nothing is stored and every dead letter stays held,
// however many sweeps go by; once PostgreSQL takes rows again, each is
// stored whole, not in its position form.
func TestSweep3HoldsWhatPostgresRefusesWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})
	publishAcked(t, b, 3, nil)
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_refuses_all() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'test refuses every row'; END $$;
        CREATE TRIGGER test_refuses_all BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refuses_all();`)
	require.NoError(t, err)

	for range 2 * sweepHeldTries {
		_, err := in.sweep(ctx, "DLQ")
		require.NoError(t, err)
	}
	assert.Zero(t, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, []int64{1, 2, 3}, b.heldOf(t, "DLQ"))
	assert.Equal(t, int64(0), b.sweptTo(t, "DLQ"))

	b.dropTrigger(t, "test_refuses_all")
	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), res.Stored)
	assert.Equal(t, 3, countRows(t, b.db.Pool, "payload = 'ok' AND NOT 'content_refused' = ANY(flags)"))
	assert.Equal(t, int64(3), b.sweptTo(t, "DLQ"))
}

// TestSweep3UnreadableOriginalsDoNotEndTheStep: more than three captured
// advisories whose originals cannot be read (JetStream answers the read
// with something that is not the message), acked without a row, and
// advisories after them. The sweep stores those after them in the same
// step, without an error, and holds each unreadable one; after
// maxHeaderRereads sweeps each is stored flagged original_unreadable, as
// ingest stores it after as many deliveries, and the watermark reaches
// the ack floor. Before, the fourth unreadable one ended every step with
// an error: nothing after it was ever stored.
func TestSweep3UnreadableOriginalsDoNotEndTheStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	// The reads of ORDERS' messages get the stream's info: an answer,
	// not the message.
	require.NoError(t, b.ns.GlobalAccount().AddMapping("$JS.API.STREAM.MSG.GET.ORDERS", "$JS.API.STREAM.INFO.ORDERS"))
	const unreadable = 5
	for seq := 1; seq <= unreadable; seq++ {
		publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("order")})
		adv := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
			`","stream":"ORDERS","consumer":"c1","stream_seq":` + strconv.Itoa(seq) + `,"deliveries":2}`
		publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + ".ORDERS.c1", Data: []byte(adv)})
	}
	for range 2 { // read without reading any original
		publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + ".ORDERS.c1", Data: []byte("not an advisory")})
	}
	b.peek(t, "DLQ_ADVISORIES", unreadable+2)

	res, err := in.sweep(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err, "unreadable originals do not end the step")
	assert.Equal(t, uint64(2), res.Stored)
	assert.Equal(t, 2, countRows(t, b.db.Pool, "'advisory_unreadable' = ANY(flags)"))
	assert.Equal(t, []int64{1, 2, 3, 4, 5}, b.heldOf(t, "DLQ_ADVISORIES"))
	assert.Equal(t, int64(0), b.sweptTo(t, "DLQ_ADVISORIES"))

	took := sweepUntil(t, in, "DLQ_ADVISORIES", maxHeaderRereads, func() bool { return b.sweptTo(t, "DLQ_ADVISORIES") == unreadable+2 })
	assert.Equal(t, maxHeaderRereads-1, took, "stored at the %d-th sweep that could not read them", maxHeaderRereads)
	assert.Equal(t, unreadable, countRows(t, b.db.Pool, "'original_unreadable' = ANY(flags) AND source_stream = 'ORDERS'"))
	assert.Empty(t, b.heldOf(t, "DLQ_ADVISORIES"))
}

// TestSweep3HoldsWhenNATSDoesNotAnswer: the reads of an advisory's
// original get no answer at all (no responders: JetStream does not serve
// that stream), while the advisory stream answers. Each advisory is held
// (the step goes on past it: another watched stream's advisory after it
// is stored, TestRev37UnservedWatchedStreamHoldsOnlyItsAdvisories), for as
// many sweeps as a delivery waits NATS out rather than the few an
// unreadable original gets, and once the reads are answered each is
// stored with its original. (Before round 37 the step stopped at the
// first, with no bound.)
func TestSweep3HoldsWhenNATSDoesNotAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	acc := b.ns.GlobalAccount()
	require.NoError(t, acc.AddMapping("$JS.API.STREAM.MSG.GET.ORDERS", "test.nobody.answers"))
	for seq := 1; seq <= 2; seq++ {
		publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("order")})
		adv := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
			`","stream":"ORDERS","consumer":"c1","stream_seq":` + strconv.Itoa(seq) + `,"deliveries":2}`
		publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + ".ORDERS.c1", Data: []byte(adv)})
	}
	b.peek(t, "DLQ_ADVISORIES", 2)

	for range maxHeaderRereads + 1 {
		_, err := in.sweep(ctx, "DLQ_ADVISORIES")
		require.NoError(t, err)
	}
	assert.Zero(t, countRows(t, b.db.Pool, "true"), "past an unreadable original's few sweeps, still held")
	assert.Equal(t, []int64{1, 2}, b.heldOf(t, "DLQ_ADVISORIES"))

	acc.RemoveMapping("$JS.API.STREAM.MSG.GET.ORDERS")
	res, err := in.sweep(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Stored)
	assert.Equal(t, 2, countRows(t, b.db.Pool, "payload = 'order' AND NOT 'original_unreadable' = ANY(flags)"), "each with its original")
}

// TestSweep3StopsWhenNATSDoesNotAnswer: the reads of the advisory
// stream itself get no answer at all (no responders), which is no
// advisory's fault: the step stops with the error, nothing is held or
// counted against the advisories, and however many sweeps go so, once
// the reads are answered each is stored with its original. (Until round
// 37 this name pinned the same stop for reads of an advisory's original;
// that case now holds only its own advisories:
// TestSweep3HoldsWhenNATSDoesNotAnswer.)
func TestSweep3StopsWhenNATSDoesNotAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{Watch: b.watchOrders(t)})
	for seq := 1; seq <= 2; seq++ {
		publish(t, b.js, &nats.Msg{Subject: "app.acme.orders.refund", Data: []byte("order")})
		adv := `{"type":"io.nats.jetstream.advisory.v1.terminated","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
			`","stream":"ORDERS","consumer":"c1","stream_seq":` + strconv.Itoa(seq) + `,"deliveries":2}`
		publish(t, b.js, &nats.Msg{Subject: AdvisoryTerminated + ".ORDERS.c1", Data: []byte(adv)})
	}
	b.peek(t, "DLQ_ADVISORIES", 2)
	acc := b.ns.GlobalAccount()
	require.NoError(t, acc.AddMapping("$JS.API.STREAM.MSG.GET.DLQ_ADVISORIES", "test.nobody.answers"))

	for range maxHeaderRereads + 1 {
		_, err := in.sweep(ctx, "DLQ_ADVISORIES")
		require.ErrorIs(t, err, nats.ErrNoResponders)
	}
	assert.Zero(t, countRows(t, b.db.Pool, "true"))
	assert.Empty(t, b.heldOf(t, "DLQ_ADVISORIES"), "stopped at, not held")

	acc.RemoveMapping("$JS.API.STREAM.MSG.GET.DLQ_ADVISORIES")
	res, err := in.sweep(ctx, "DLQ_ADVISORIES")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Stored)
	assert.Equal(t, 2, countRows(t, b.db.Pool, "payload = 'order' AND NOT 'original_unreadable' = ANY(flags)"), "each with its original")
}

// oneUnreadable has the reads of stream's messages by sequence
// ($JS.API.STREAM.MSG.GET) answered, by a subject mapping, by a stand-in
// that serves them from a mirror of the stream's n messages, but answers
// the read of #bad with an API error: a stream that gives every message
// but that one. JetStream itself answers a message it cannot load "no
// message found" (nats-server's jsMsgGetRequest, for any load error):
// only something other than JetStream answers so for one message alone.
func (b *bundle) oneUnreadable(t *testing.T, stream string, n int, bad uint64) {
	t.Helper()
	ctx := context.Background()
	mirror := stream + "_MIRROR"
	_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{Name: mirror, Mirror: &jetstream.StreamSource{Name: stream}})
	require.NoError(t, err)
	wait.Until(t, "the mirror holds the stream's messages", time.Minute, func() bool {
		s, err := b.js.Stream(ctx, mirror)
		return err == nil && s.CachedInfo().State.Msgs == uint64(n)
	})
	nc, _ := b.ns.Connect(t)
	sub, err := nc.Subscribe("test.msg_get."+stream, func(m *nats.Msg) {
		r, err := nc.Request("$JS.API.STREAM.MSG.GET."+mirror, m.Data, 10*time.Second)
		if err != nil {
			return // not answered: the read times out
		}
		var resp storedMsgResponse
		if json.Unmarshal(r.Data, &resp) == nil && resp.Message != nil && resp.Message.Seq == bad {
			_ = m.Respond([]byte(`{"type":"io.nats.jetstream.api.v1.stream_msg_get_response","error":{"code":500,"err_code":10999,"description":"test: this one message is not given"}}`))
			return
		}
		_ = m.Respond(r.Data)
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, b.ns.GlobalAccount().AddMapping("$JS.API.STREAM.MSG.GET."+stream, "test.msg_get."+stream))
}

// TestSweep3UnreadableDeadLettersStoredWhereTheyLie: the read of one dead
// letter acked without a row is answered with something that is not the
// message, while the stream gives the others (oneUnreadable: JetStream
// itself never answers so; a responder other than it may). The sweep
// does not stop at it: it looks for the rows from when the stream was
// made, stores the others, holds it, and after sweepHeldTries sweeps
// stores it where it lies, in tenant unknown, flagged message_unreadable,
// the watermark at the ack floor. Before, the first read's failure ended
// every sweep there. (It used to have every read answered so, by a
// mapping to the stream's info: that is no message's own failure, and
// the sweep now stops on it, counting nothing:
// TestRevFixes7aWrongAnswerForEveryReadIsNotEachMessagesOwn.)
func TestSweep3UnreadableDeadLettersStoredWhereTheyLie(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})
	publishAcked(t, b, 3, nil)
	b.oneUnreadable(t, "DLQ", 3, 1)

	_, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, b.heldOf(t, "DLQ"))
	assert.Equal(t, 2, countRows(t, b.db.Pool, "payload = 'ok' AND tenant = 'acme'"), "the others stored whole")
	took := sweepUntil(t, in, "DLQ", sweepHeldTries, func() bool { return b.sweptTo(t, "DLQ") == 3 })
	assert.Equal(t, sweepHeldTries-1, took, "stored at the %d-th sweep that could not read it", sweepHeldTries)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "'message_unreadable' = ANY(flags) AND tenant = 'unknown' AND payload_unavailable"))
	d := b.row(t, "source_seq = 1 AND 'message_unreadable' = ANY(flags)")
	assert.Equal(t, "DLQ", d.SourceStream)
	assert.Equal(t, "DLQ #1 unread", d.Delivery)
	require.Len(t, d.MalformedReasons, 1)
	assert.Contains(t, d.MalformedReasons[0], "nats stream get DLQ 1")
	assert.Contains(t, d.MalformedReasons[0], "this one message is not given")
	assert.Empty(t, b.heldOf(t, "DLQ"))
}
