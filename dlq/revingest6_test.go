package dlq

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest6HostileBlocksAllStored publishes, byte for byte, header
// blocks no well-behaved client writes, and expects a row for every one
// and ingest never to stop.
func TestRevIngest6HostileBlocksAllStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start(t, IngestConfig{}, nil)
	n := revIngest6PublishHostile(t, b)
	ctx := context.Background()
	wait.Until(t, "every dead letter stored", 2*time.Minute, func() bool {
		var c int
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&c))
		return c >= n
	})
	var c int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&c))
	require.Equal(t, n, c)
	b.waitDrained(t)
}

// TestRevIngest6HostileBlocksAllSwept: the same, taken off the consumer
// by a peek: the sweep stores every one.
func TestRevIngest6HostileBlocksAllSwept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in, _ := b.idle(t, IngestConfig{})
	n := revIngest6PublishHostile(t, b)
	b.peek(t, "DLQ", n)
	ctx := context.Background()
	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	t.Logf("%+v", res)
	var c int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters`).Scan(&c))
	require.Equal(t, n, c)
	require.Equal(t, int64(n), b.sweptTo(t, "DLQ"))
}

func revIngest6PublishHostile(t *testing.T, b *bundle) int {
	raw := b.ns.DialRaw(t)
	many := func(n int) string {
		var s strings.Builder
		s.WriteString("NATS/1.0\r\n")
		for i := range n {
			fmt.Fprintf(&s, "X-H%d: v%d\r\n", i, i)
		}
		s.WriteString("\r\n")
		return s.String()
	}
	type msg struct{ subj, hdr, data string }
	msgs := []msg{
		{"dlq.acme.orders", "NATS/1.0\r\n", ""},
		{"dlq.acme.orders", "NATS/1.0\r\n", "x"},
		{"dlq.acme.orders", "NATS/1.0", ""},
		{"dlq.acme.orders", "NATS/1.0 503\r\n\r\n", ""},
		{"dlq.acme.orders", "NATS/1.0 100 Idle Heartbeat\r\n\r\n", ""},
		{"dlq.acme.orders", "NATS/1.0 409 Consumer Deleted\r\n\r\n", ""},
		{"dlq.acme.orders", "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 1\r\nNats-Pending-Bytes: 1\r\n\r\n", ""},
		{"dlq.acme.orders", "NATS/1.0\r\nStatus: 409\r\nDescription: Consumer Deleted\r\n\r\n", ""},
		{"dlq.acme.orders", "NATS/1.0\r\nX\x00A: v\x00w\r\n\r\n", "p\x00q"},
		{"dlq.acme.orders", "NATS/1.0\r\nX-\xff\xfe: \xc3\x28\r\nDlq-Tenant: \xff\r\nDlq-Item-Type: \x00\r\n\r\n", "\xff"},
		{"dlq.acme.orders", "NATS/1.0\r\n: nameless\r\n\r\n", ""},
		{"dlq.acme.orders", "NATS/1.0\r\nX-A: b", ""},
		{"dlq.acme.orders", "NATS/1.0\r\nX-A: b", "data"},
		{"dlq.acme.orders", "NATS/1.0\r\nNats-Msg-Size: 0\r\n\r\n", "data"},
		{"dlq.acme.orders", "NATS/1.0\r\nNats-Msg-Size: 0\r\n\r\n", ""},
		{"dlq.acme.orders", "NATS/1.0\r\nNats-Stream: OTHER\r\nNats-Sequence: 1\r\nNats-Time-Stamp: 2000-01-01T00:00:00Z\r\nNats-Subject: x\r\n\r\n", ""},
		{"dlq.acme.orders", "NATS/1.0\r\nDlq-First-Failed-At: 0001-01-01T00:00:00Z\r\nDlq-Last-Failed-At: 9999-12-31T23:59:59.999999999Z\r\n\r\n", "t"},
		{"dlq.acme.orders", "NATS/1.0\r\nDlq-First-Failed-At: -0001-01-01T00:00:00Z\r\nDlq-Last-Failed-At: 294277-01-01T00:00:00Z\r\nDlq-Attempts: 99999999999999999999999999\r\n\r\n", "t"},
		{"dlq.acme.orders", "NATS/1.0\r\nDlq-Replay-Of: 1\r\nDlq-Replay-Request: 1\r\nDlq-Replay-Of: 2\r\n\r\n", "t"},
		{"dlq.acme.orders", many(3000), ""},
		{"dlq.acme.orders", "NATS/1.0\r\nX-Big: " + strings.Repeat("\xff", 60<<10) + "\r\n\r\n", ""},
		{"dlq.\xff\xfe.orders", "NATS/1.0\r\nX: y\r\n\r\n", "bad subject"},
		{"dlq.acme.orders", "NATS/1.0\r\nDlq-Error: a\r\ndlq-error: b\r\nDLQ-ERROR: \x00\r\n\r\n", "t"},
		{"dlq.acme.orders", "NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.\x00\r\n\r\n", "t"},
		{"dlq.acme.orders", "NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.*\r\nNats-Msg-Id: \x00\xff\r\n\r\n", "t"},
		{"dlq.acme.orders", "NATS/1.0\r\n\r\n\r\n\r\n", "t"},
		{"dlq.acme.orders", "NATS/1.0\r\nX-A:\r\n\tcontinued\r\n\r\n", "t"},
		{"dlq.acme.orders", "NATS/1.0\n X-A: b\n\n", "t"},
		{"dlq.acme.orders", "nats/1.0\r\nX-A: b\r\n\r\n", "t"},
		{"dlq.acme.orders", "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "t"},
		{"dlq.acme.orders", "NATS/1.0\r\nDlq-Tenant: " + strings.Repeat("é", 5000) + "\r\n\r\n", "t"},
	}
	n := 0
	for i, m := range msgs {
		ack, err := raw.Publish(m.subj, []byte(m.hdr), []byte(m.data))
		if err != nil || ack.Error != nil {
			t.Logf("message %d not taken by the server: %v", i, err)
			continue
		}
		n++
	}
	big := make([]byte, 8<<20-4096)
	for i := range big {
		big[i] = byte(i)
	}
	if _, err := raw.Publish("dlq.acme.orders", []byte("NATS/1.0\r\nX: y\r\n\r\n"), big); err == nil {
		n++
	} else {
		t.Logf("big: %v", err)
	}
	// Then an ordinary one.
	_, err := raw.Publish("dlq.acme.orders", []byte("NATS/1.0\r\nDlq-Original-Subject: app.acme.orders.x\r\n\r\n"), []byte("last"))
	require.NoError(t, err)
	n++
	return n
}

// TestRevIngest6ForgedAdvisoryForANonexistentConsumerIsFlagged: anyone who
// may publish on an advisory subject (the console's own docs treat them as
// hostile) sends a max_deliveries advisory naming the watched stream, a
// consumer the stream does not have, and the sequence of another tenant's
// message that nobody ever failed on. The console stores that message,
// payload and all, as a clean dead letter of that tenant, which an
// operator may replay: the order is executed again. A give-up by a
// consumer that does not exist cannot have happened; the row must at
// least say so (a flag naming the consumer), not pass as a real one.
func TestRevIngest6ForgedAdvisoryForANonexistentConsumerIsFlagged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ws := b.watchOrders(t)
	b.start(t, IngestConfig{Watch: ws}, nil)
	_, err := b.js.Publish(ctx, "app.globex.orders.refund", []byte(`{"amount":1000}`))
	require.NoError(t, err)
	forged := `{"type":"io.nats.jetstream.advisory.v1.max_deliver","id":"x","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) +
		`","stream":"ORDERS","consumer":"no-such-consumer","stream_seq":1,"deliveries":5}`
	_, err = b.js.Publish(ctx, AdvisoryMaxDeliveries+".ORDERS.no-such-consumer", []byte(forged))
	require.NoError(t, err)
	b.waitRows(t, 1)
	d, err := b.store.BySource(ctx, "ORDERS", 1, "no-such-consumer")
	require.NoError(t, err)
	t.Logf("tenant %s payload %q flags %v unavailable %v", d.Tenant, d.Payload, d.Flags, d.PayloadUnavailable)
	flagged := false
	for _, f := range d.Flags {
		if strings.Contains(f, "consumer") || strings.Contains(f, "unverified") {
			flagged = true
		}
	}
	require.True(t, flagged || d.PayloadUnavailable,
		"a forged give-up by a consumer the stream does not have is stored as a clean, replayable dead letter of tenant %s", d.Tenant)
}

// TestRevIngest6RollupAllowedByHandWipesTheBacklog: an operator turns on
// rollups on the DLQ stream (nats stream edit DLQ --allow-rollup, say for
// another use of the stream). The console's checks hold the stream to
// what keeps dead letters (subjects, limits, discard, sealed...) but not
// this: it neither puts it back nor reports it. Then, while the console is
// behind (here: down, as during a PostgreSQL outage), one hostile dead
// letter carrying Nats-Rollup: all deletes every dead letter the stream
// holds that was not stored yet: never stored, and the sweep finds them
// deleted.
func TestRevIngest6RollupAllowedByHandWipesTheBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	r, _ := b.watched(t, IngestConfig{})
	b.editStream(t, func(c *jetstream.StreamConfig) { c.AllowRollup = true })
	edited := time.Now()
	wait.Until(t, "a check after the edit", time.Minute, func() bool {
		h := r.Health()
		return len(h.Streams) == 1 && h.Streams[0].CheckedAt.After(edited.Add(100*time.Millisecond))
	})
	h := r.Health()
	t.Logf("allow_rollup after the check: %v; stream drift %q", b.streamConfig(t).AllowRollup, h.Streams[0].StreamDrift)
	r.stop() // the console falls behind

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.orders.refund", Data: []byte("backlog 1")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.globex.orders.refund", Data: []byte("backlog 2")})
	_, rollupErr := b.js.PublishMsg(ctx, &nats.Msg{Subject: "dlq.evil.orders.refund", Data: []byte("rollup"),
		Header: nats.Header{"Nats-Rollup": {"all"}}})
	t.Logf("rollup publish: %v", rollupErr)

	b.start(t, IngestConfig{}, nil)
	b.waitDrained(t)
	require.Equal(t, 2, countRows(t, b.db.Pool, "payload IN ('backlog 1', 'backlog 2')"),
		"dead letters deleted from the stream by a producer's Nats-Rollup before the console stored them")
}
