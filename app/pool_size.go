package app

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/quarantine-console/quarantine/dlq"
)

// The pools' sizes. Every process keeps some connections of a pool for
// good: the listeners (LISTEN waits on its connection until the process
// ends). The rest take turns, and each part that works at once needs one
// to make progress; a pool with no room past its listeners stalls every
// part behind them while /readyz, answered by another pool or by a
// listener-free query, says the process is ready. So a pool has a size
// (its default, room to spare) and a floor (MinConns) below which
// pool_max_conns is refused at start.

// backgroundPool is serve's pool of background work: the counters' and
// the authorization policy's listeners (held for good), the ingest
// workers, the replay workers, and the ingest sweep, which holds its
// watermark's lock in one transaction while it reads and inserts on
// another; the partition keeper, the audit checkpoints, the metrics
// scrapes and the counters' reads take turns with the sweep.
func backgroundPool(cfg Config) PoolConfig {
	ingest := cmp.Or(max(cfg.IngestWorkers, 0), dlq.DefaultIngestWorkers)
	replay := max(cfg.Replay.Workers, 0)
	const listeners, sweep, spare = 2, 2, 4
	parts := []string{"2 held for good (the counters' and the authorization policy's LISTEN)",
		fmt.Sprintf("%d for the ingest workers (INGEST_WORKERS)", ingest)}
	if replay > 0 {
		parts = append(parts, fmt.Sprintf("%d for the replay workers (REPLAY_WORKERS)", replay))
	}
	parts = append(parts, "2 for the ingest sweep (its lock and its insert), which the partition keeper and the audit checkpoints share")
	least := listeners + ingest + replay + sweep
	return PoolConfig{
		Name: "workers", MaxConns: int32(least + spare), MinConns: int32(least), MinOf: listOf(parts),
		StatementTimeout: cfg.WorkerStatementTimeout,
	}
}

// workerPool is `console worker`'s one pool: the authorization policy's
// listener (held for good), the replay workers, and one the draft
// sweeper, the policy check of /readyz and the metrics scrapes take turns
// with.
func workerPool(cfg WorkersConfig) PoolConfig {
	replay := max(cfg.Replay.Workers, 0)
	const listeners, shared, spare = 1, 1, 2
	least := listeners + replay + shared
	return PoolConfig{
		Name: "worker", MaxConns: int32(least + spare), MinConns: int32(least),
		MinOf: listOf([]string{"1 held for good (the authorization policy's LISTEN)",
			fmt.Sprintf("%d for the replay workers (REPLAY_WORKERS)", replay),
			"1 the draft sweeper, /readyz and the metrics share"}),
		StatementTimeout: cmp.Or(cfg.StatementTimeout, time.Minute),
	}
}

// listOf joins parts as a sentence's list: "a, b and c".
func listOf(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
