package dlq

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// refusePayloads has PostgreSQL refuse, in every form, the dead letters
// whose payload is one of payloads (called again: those instead).
func refusePayloads(t *testing.T, b *bundle, payloads ...string) {
	t.Helper()
	list := "''"
	for _, p := range payloads {
		list += fmt.Sprintf(", '%s'", p)
	}
	_, err := b.db.OwnerPool.Exec(context.Background(), `
        CREATE OR REPLACE FUNCTION test_refuses_payloads() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF convert_from(NEW.payload, 'UTF8') IN (`+list+`) THEN RAISE EXCEPTION 'test refuses %', convert_from(NEW.payload, 'UTF8'); END IF;
            RETURN NEW;
        END $$;
        CREATE OR REPLACE TRIGGER test_refuses_payloads BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refuses_payloads();`)
	require.NoError(t, err)
}

// publishAcked publishes n dead letters to the DLQ stream, the payload of
// #seq payloads[seq] ("ok" when none), and moves the ingest consumer's ack
// floor past them all, as a filter set and taken off by hand does.
func publishAcked(t *testing.T, b *bundle, n int, payloads map[int]string) {
	t.Helper()
	for seq := 1; seq <= n; seq++ {
		data, ok := payloads[seq]
		if !ok {
			data = "ok"
		}
		_, err := b.js.PublishAsync("dlq.acme.search.index_update", []byte(data))
		require.NoError(t, err)
		if seq%1000 == 0 || seq == n {
			select {
			case <-b.js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("publishes not acked within a minute")
			}
		}
	}
	_, err := b.js.ResetConsumerToSequence(context.Background(), "DLQ", "quarantine-ingest", uint64(n)+1)
	require.NoError(t, err)
	wait.Until(t, "the ack floor past them all", time.Minute, func() bool { return b.consumerInfo(t).AckFloor.Stream == uint64(n) })
}

// TestSweep2RetriesEveryHeldDeadLetter: two dead letters PostgreSQL
// refuses, the second more than a step after the first. Once PostgreSQL
// takes the second (not the first), the next sweep stores it: each held
// one is tried again at every sweep, not only once the watermark reaches
// it; the watermark stays before the first until it is stored.
func TestSweep2RetriesEveryHeldDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in, _ := b.idle(t, IngestConfig{})
	const total = sweepStep + 10
	far := total - 2
	publishAcked(t, b, total, map[int]string{2: "new 1", far: "new 2"})
	refusePayloads(t, b, "new 1", "new 2")

	res, err := in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(total-2), res.Stored)
	assert.Equal(t, int64(1), b.sweptTo(t, "DLQ"))

	refusePayloads(t, b, "new 1") // PostgreSQL takes the second now
	res, err = in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.Stored, "the second held one stored while the first still holds the watermark")
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'new 2'"))
	assert.Equal(t, total-1, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, int64(1), b.sweptTo(t, "DLQ"), "still before the first")

	refusePayloads(t, b)
	res, err = in.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.Stored)
	assert.Equal(t, uint64(1), res.Missing, "only the first tried; nothing after it proven twice")
	assert.Equal(t, total, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, int64(total), b.sweptTo(t, "DLQ"))
}

// TestSweep2GoesOnWhereAnotherConsoleStopped: a console sweeps past two
// dead letters PostgreSQL refuses and stops (a restart, or another
// replica takes the stream's turns). The console that sweeps next tries
// only the held ones again, not what the first proved after them, and
// stores each once PostgreSQL takes it.
func TestSweep2GoesOnWhereAnotherConsoleStopped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	first, _ := b.idle(t, IngestConfig{})
	for _, p := range []string{"ok 1", "new 1", "ok 3", "new 2", "ok 5"} {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(p)})
	}
	b.peek(t, "DLQ", 5)
	refusePayloads(t, b, "new 1", "new 2")
	res, err := first.sweep(ctx, "DLQ")
	require.NoError(t, err)
	require.Equal(t, uint64(3), res.Stored)
	require.Equal(t, int64(1), b.sweptTo(t, "DLQ"))

	refusePayloads(t, b, "new 1")
	next, _ := b.idle(t, IngestConfig{})
	res, err = next.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.From)
	assert.Equal(t, uint64(4), res.To, "#5, proven by the first console, not looked at again")
	assert.Equal(t, uint64(2), res.Missing, "the two held ones")
	assert.Equal(t, uint64(1), res.Stored)
	assert.Equal(t, 1, countRows(t, b.db.Pool, "payload = 'new 2'"))
	assert.Equal(t, int64(1), b.sweptTo(t, "DLQ"))

	refusePayloads(t, b)
	res, err = next.sweep(ctx, "DLQ")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.Stored)
	assert.Equal(t, 5, countRows(t, b.db.Pool, "true"))
	assert.Equal(t, int64(5), b.sweptTo(t, "DLQ"))
}
