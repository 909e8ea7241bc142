package dlq

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// storeBehindARoute gives b a store on its own pool, named application
// (for pg_terminate_backend to find its connections), whose route to
// PostgreSQL the test cuts: while the returned switch is set, every new
// connection is refused.
func (b *bundle) storeBehindARoute(t *testing.T, application string) *atomic.Bool {
	t.Helper()
	var down atomic.Bool
	cfg := b.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["application_name"] = application
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if down.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		return d.DialContext(ctx, network, addr)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b.store = NewStore(pool)
	return &down
}

// TestIngestCutOffAloneStoresAllOnceBack: a replica alone loses its route
// to PostgreSQL (its connections cut, new ones refused) for longer than
// cutOffAfter. It hands back every dead letter it held and takes none
// while cut off (nothing pending an ack: a replica that could store would
// have them at once); once PostgreSQL answers again it takes them again
// and stores each exactly once.
func TestIngestCutOffAloneStoresAllOnceBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	down := b.storeBehindARoute(t, "cut-off-replica")
	r := b.start(t, IngestConfig{BatchSize: 10, Workers: 1, AckWait: 5 * time.Minute}, nil)
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	defer admin.Close()

	const before, during = 5, 40
	publish := func(from, n int) {
		for i := range n {
			_, err := b.js.Publish(ctx, "dlq.acme.orders.created", fmt.Appendf(nil, `{"n":%d}`, from+i))
			require.NoError(t, err)
		}
	}
	publish(0, before)
	b.waitRows(t, before)
	down.Store(true)
	_, err = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cut-off-replica'")
	require.NoError(t, err)
	publish(before, during)

	wait.Until(t, "the replica cut off", time.Minute, r.cutOff.Load)
	assert.Positive(t, testutil.ToFloat64(r.metrics.StoreErrors))
	assert.Zero(t, testutil.ToFloat64(r.metrics.Unstorable))
	// What it held is handed back, and it asks for nothing: another
	// client of the consumer gets every one at once (not after the
	// 5-minute ack wait), and hands them back in turn.
	cons, err := b.js.Consumer(ctx, "DLQ", "quarantine-ingest")
	require.NoError(t, err)
	got := map[uint64]bool{}
	wait.Until(t, "every dead letter not stored delivered to another client", 30*time.Second, func() bool {
		msgs, err := cons.Fetch(during, jetstream.FetchMaxWait(time.Second))
		require.NoError(t, err)
		for m := range msgs.Messages() {
			md, err := m.Metadata()
			require.NoError(t, err)
			got[md.Sequence.Stream] = true
			require.NoError(t, m.Nak())
		}
		return len(got) == during
	})

	down.Store(false)
	b.waitDrained(t)
	assert.Equal(t, before+during, countRows(t, b.db.Pool, "true"), "every dead letter is exactly one row")
	assert.False(t, r.cutOff.Load())
}
