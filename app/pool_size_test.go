package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPoolMaxConnsBelowTheLeastIsRefused: pool_max_conns sizes every pool
// of a process; below what the process's background pool needs (its
// listeners held for good, one connection for each part working at once)
// it is refused, naming the setting, its value and the least, and at the
// least it is taken. The least follows what the process runs. (fixdocs10)
func TestPoolMaxConnsBelowTheLeastIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		pc    PoolConfig
		least int32
	}{
		{"ServeWithWorkers", backgroundPool(Config{IngestWorkers: 2, Replay: ReplayConfig{Workers: 2}}), 8},
		{"ServeWithoutWorkers", backgroundPool(Config{IngestWorkers: 3}), 7},
		{"ServeIngestDefault", backgroundPool(Config{}), 6},
		{"Worker", workerPool(WorkersConfig{Replay: ReplayConfig{Workers: 4}}), 6},
		{"WorkerOne", workerPool(WorkersConfig{Replay: ReplayConfig{Workers: 1}}), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.least, tc.pc.MinConns)
			require.Greater(t, tc.pc.MaxConns, tc.pc.MinConns, "the default size leaves room to spare")
			dsn := func(n int32) string { return fmt.Sprintf("postgres://u@127.0.0.1:1/db?pool_max_conns=%d", n) }
			err := checkMaxConns(dsn(tc.least-1), tc.pc)
			require.Error(t, err)
			for _, want := range []string{"DATABASE_URL", fmt.Sprintf("pool_max_conns=%d", tc.least-1), fmt.Sprintf("below %d", tc.least), "LISTEN"} {
				require.Contains(t, err.Error(), want)
			}
			require.NoError(t, checkMaxConns(dsn(tc.least), tc.pc))
			require.NoError(t, checkMaxConns("postgres://u@127.0.0.1:1/db", tc.pc), "no pool_max_conns: the pool's own size")
		})
	}
}

// TestWorkerRefusesSmallPoolMaxConnsBeforeWaiting: console worker refuses
// a pool_max_conns below its least at once, not after DATABASE_WAIT for a
// PostgreSQL it would then starve. (fixdocs10)
func TestWorkerRefusesSmallPoolMaxConnsBeforeWaiting(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := WorkersConfig{
		DatabaseURL: "postgres://nobody@127.0.0.1:1/quarantine?pool_max_conns=2", DBWait: time.Minute,
		NATSURL: "nats://127.0.0.1:1", MetricsAddr: MetricsOff, Replay: ReplayConfig{Workers: 4},
	}
	began := time.Now()
	w, err := NewWorkers(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		w.Close()
		t.Fatal("console worker with 4 replay workers started with pool_max_conns=2")
	}
	require.True(t, strings.Contains(err.Error(), "pool_max_conns=2") && strings.Contains(err.Error(), "below 6"), "%v", err)
	require.Less(t, time.Since(began), 10*time.Second, "refused before waiting for PostgreSQL")
}
