package dlq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory/logs"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// storeRefusingWrites gives b a store on its own pool, named application
// (for pg_terminate_backend to find its connections), whose connections
// made while the returned switch is set start read-only
// (default_transaction_read_only): PostgreSQL answers them, a ping too,
// and refuses every write with 25006, as a standby DATABASE_URL points at
// after a failover does. The test's database and its other pools are
// left as they are.
func (b *bundle) storeRefusingWrites(t *testing.T, application string) *atomic.Bool {
	t.Helper()
	var readOnly atomic.Bool
	cfg := b.db.Pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["application_name"] = application
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		if readOnly.Load() {
			cc.RuntimeParams["default_transaction_read_only"] = "on"
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	b.store = NewStore(pool)
	return &readOnly
}

// TestFixOps44CutOffHoldsWhilePostgresRefusesWrites: PostgreSQL answers
// but refuses every write (DATABASE_URL on a standby after a failover,
// 25006; a full disk, 53100). Ingest takes that for PostgreSQL out of
// reach and cuts the replica off after 10 s; it then waited for a ping,
// which such a server answers at once: the cut-off gauge went back to 0,
// the log said "PostgreSQL answers again", the batch was taken again and
// failed again, every 10 s, each time handed back one delivery more. It
// now waits for PostgreSQL to take a write (a dead letter of its own,
// rolled back): while writes are refused it stays cut off, the gauge at
// 1, the log saying why; once they are taken it stores every dead letter
// that waited, each once.
func TestFixOps44CutOffHoldsWhilePostgresRefusesWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	readOnly := b.storeRefusingWrites(t, "read-only-replica")
	admin, err := pgxpool.New(ctx, testdb.ServerURL(t))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	reconnect := func() {
		_, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'read-only-replica'")
		require.NoError(t, err)
	}

	var logged logs.Buffer
	metrics := NewMetrics(prometheus.NewRegistry())
	in := NewIngester(IngestConfig{BatchSize: 10, Workers: 1, AckWait: 5 * time.Minute}, b.js, b.store, metrics,
		slog.New(slog.NewTextHandler(&logged, nil)))
	var (
		mu        sync.Mutex
		refusals  int   // probes refused 25006 while the replica was cut off and said so
		flipped   bool  // a probe found the replica no longer cut off, or its gauge at 0, while writes were refused
		lastProbe error // the last probe's answer
	)
	in.afterProbe = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		lastProbe = err
		if !readOnly.Load() {
			return
		}
		if !in.cutOff.Load() || testutil.ToFloat64(metrics.CutOff) != 1 {
			flipped = true
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "25006" {
			refusals++
		}
	}
	require.NoError(t, in.Setup(ctx))
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	publish := func(from, n int) {
		for i := range n {
			_, err := b.js.Publish(ctx, "dlq.acme.orders.created", fmt.Appendf(nil, `{"n":%d}`, from+i))
			require.NoError(t, err)
		}
	}

	const before, during = 3, 7
	publish(0, before)
	b.waitRows(t, before)
	readOnly.Store(true)
	reconnect()
	publish(before, during)
	wait.Until(t, "the replica cut off", time.Minute, func() bool {
		return strings.Contains(logged.String(), "PostgreSQL has not taken a batch for a while")
	})
	wait.For(t, "four probes refused while the replica stays cut off", 2*time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(logged.String(), "PostgreSQL answers again"):
			return wait.Stop(errors.New("took dead letters again while PostgreSQL refused every write"))
		case flipped || !in.cutOff.Load() || testutil.ToFloat64(metrics.CutOff) != 1:
			return wait.Stop(errors.New("the cut-off gauge went back to 0 while PostgreSQL refused every write"))
		case refusals < 4:
			return wait.ErrNotYet
		}
		return nil
	})
	assert.Contains(t, logged.String(), `msg="PostgreSQL answers but refuses writes: still cut off, taking no dead letters until it takes one"`)
	assert.Contains(t, logged.String(), "read-only transaction", "the log says why")
	assert.Equal(t, before, countRows(t, b.db.Pool, "true"))

	readOnly.Store(false)
	reconnect()
	b.waitRows(t, before+during)
	b.waitDrained(t)
	wait.Until(t, "the cut-off gauge back at 0", 30*time.Second, func() bool { return testutil.ToFloat64(metrics.CutOff) == 0 })
	assert.Contains(t, logged.String(), "PostgreSQL answers again: taking dead letters again")
	mu.Lock()
	assert.NoError(t, lastProbe, "the last probe is the write that was taken")
	mu.Unlock()
	assert.Equal(t, before+during, countRows(t, b.db.Pool, "true"), "every dead letter stored, each once")
	assert.Zero(t, countRows(t, b.db.Pool, "source_stream = $1", canaryStream), "no probe left a row")
}
