package dlq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// progressMsg is a message that counts the InProgress it is sent, and
// whether one came after it was settled.
type progressMsg struct {
	jetstream.Msg
	mu          sync.Mutex
	inProgress  int
	settled     bool
	afterSettle bool
}

func (m *progressMsg) InProgress() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inProgress++
	m.afterSettle = m.afterSettle || m.settled
	return nil
}

func (m *progressMsg) Ack() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settled = true
	return nil
}

func (m *progressMsg) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inProgress
}

// TestFixIngest11KeepInProgressStopsBeforeSettle: keepInProgress sends
// InProgress for every message of the batch every AckWait/3 until stop,
// and not once after stop has returned (the caller settles the messages
// then); it ends by itself when ctx ends, and stop still returns.
func TestFixIngest11KeepInProgressStopsBeforeSettle(t *testing.T) {
	t.Parallel()
	in := &Ingester{cfg: IngestConfig{AckWait: 60 * time.Millisecond}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	msgs := []*progressMsg{{}, {}, {}}
	batch := make([]item, len(msgs))
	for i, m := range msgs {
		batch[i] = item{msg: m}
	}

	stop := in.keepInProgress(context.Background(), batch)
	wait.Until(t, "every message kept in progress a few times", 5*time.Second, func() bool {
		for _, m := range msgs {
			if m.count() < 3 {
				return false
			}
		}
		return true
	})
	stop()
	for _, m := range msgs {
		require.NoError(t, m.Ack())
	}
	stop() // a second stop is harmless
	// Five rounds' window in which nothing may be sent.
	time.Sleep(100 * time.Millisecond)
	for _, m := range msgs {
		m.mu.Lock()
		assert.False(t, m.afterSettle, "InProgress sent after stop returned and the message was acked")
		m.mu.Unlock()
	}

	// Stopped by its context: nothing more is sent, and stop returns.
	ctx, cancel := context.WithCancel(context.Background())
	m := &progressMsg{}
	stop = in.keepInProgress(ctx, []item{{msg: m}})
	wait.Until(t, "kept in progress", 5*time.Second, func() bool { return m.count() > 0 })
	cancel()
	sent := m.count()
	// stop waits for the goroutine, which the context ended, to return: a
	// round already past its wait when the context ended may still send
	// once, and nothing after it.
	stop()
	ended := m.count()
	assert.LessOrEqual(t, ended, sent+1, "InProgress sent after the context ended")
	// A window of five rounds (AckWait/3 is 20 ms) in which nothing more
	// may be sent, the goroutine being gone.
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, ended, m.count(), "InProgress sent after stop returned")

	// A batch stored within AckWait/3 of its receipt costs no message.
	quiet := &progressMsg{}
	stop = (&Ingester{cfg: IngestConfig{AckWait: time.Minute}}).keepInProgress(context.Background(), []item{{msg: quiet}})
	stop()
	assert.Zero(t, quiet.count())
}

// TestFixIngest11SlowStatementThatSucceedsKeepsBatch: a statement that
// runs past the AckWait and then succeeds (a lock waited for, a large
// batch on a loaded database) was never kept in progress at all (InProgress
// was sent only after a failed attempt): the batch was delivered again
// while it was being stored. It is delivered once now.
func TestFixIngest11SlowStatementThatSucceedsKeepsBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_slow_ok_fi11() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.payload = 'slow'::bytea THEN
                PERFORM pg_sleep(1.3);
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_slow_ok_fi11 BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_slow_ok_fi11();`)
	require.NoError(t, err)
	cfg := IngestConfig{Workers: 2, MaxWait: 300 * time.Millisecond, AckWait: time.Second}
	b.start(t, cfg, nil).stop()

	const healthy = 3
	for i := range healthy {
		publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte(fmt.Sprintf("healthy-%d", i))})
	}
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("slow")})
	b.start(t, cfg, nil)

	wait.Until(t, "every dead letter stored and acked", time.Minute, func() bool {
		info := b.consumerInfo(t)
		return countRows(t, b.db.Pool, "true") == healthy+1 && info.NumAckPending == 0 && info.NumPending == 0
	})
	assert.Equal(t, uint64(healthy+1), b.consumerInfo(t).Delivered.Consumer,
		"each dead letter delivered once: none redelivered while its slow statement ran")
}

// TestFixIngest11PositionFormKeptInProgress: the position form of a dead
// letter refused in every form on its maxRefusedDeliveries-th delivery is
// stored after the batch (storeContentRefused), a statement of its own
// that may run long too; the batch stays in progress while it does, and
// its messages are settled only after it.
func TestFixIngest11PositionFormKeptInProgress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.db.OwnerPool.Exec(ctx, `
        CREATE FUNCTION test_refused_slow_position_fi11() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF 'content_refused' = ANY(NEW.flags) THEN
                PERFORM pg_sleep(1.3);
            ELSIF NEW.subject LIKE '%.refused' THEN
                RAISE EXCEPTION 'value refused for now' USING ERRCODE = '22023';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER test_refused_slow_position_fi11 BEFORE INSERT ON dead_letters FOR EACH ROW EXECUTE FUNCTION test_refused_slow_position_fi11();`)
	require.NoError(t, err)
	cfg := IngestConfig{Workers: 1, MaxWait: 300 * time.Millisecond, AckWait: time.Second, RetryUnstorable: 10 * time.Minute}
	b.start(t, cfg, nil).stop()

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.refused", Data: []byte("refused")})
	// Its first maxRefusedDeliveries-1 deliveries go to a client that
	// hands it back at once: the ingester gets the one its position form
	// is due on.
	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	for range maxRefusedDeliveries - 1 {
		got, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		n := 0
		for m := range got.Messages() {
			require.NoError(t, m.Nak())
			n++
		}
		require.Equal(t, 1, n)
	}
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("healthy")})
	b.start(t, cfg, nil)

	wait.Until(t, "the position form and the healthy dead letter stored and acked", time.Minute, func() bool {
		info := b.consumerInfo(t)
		return countRows(t, b.db.Pool, "'content_refused' = ANY(flags)") == 1 && countRows(t, b.db.Pool, "payload = 'healthy'::bytea") == 1 &&
			info.NumAckPending == 0 && info.NumPending == 0
	})
	assert.Equal(t, uint64(maxRefusedDeliveries+1), b.consumerInfo(t).Delivered.Consumer,
		"the batch delivered once to the ingester: not again while the position form was stored")
}
