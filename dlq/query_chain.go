package dlq

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// ChainLink is one dead letter of a replay chain: a message that came back
// as a dead letter after it was replayed, and the replays of it that came
// back in turn.
type ChainLink struct {
	ID             int64     `db:"id"`
	Generation     int32     `db:"generation"`
	Status         Status    `db:"status"`
	ErrorClass     string    `db:"error_class"`
	DeadLetteredAt time.Time `db:"dead_lettered_at"`
	Error          string    `db:"error"`
}

// MaxChain bounds how far Chain walks a replay chain each way, and
// 2·MaxChain+1 how many links it shows: past those, the page says there
// are more (ReplayChain.More, ReplayChain.Earlier).
const MaxChain = 50

// ReplayChain is the replay chain of a dead letter as its page shows it:
// its links, oldest generation first; More when the walk down found more
// links than are shown, Earlier when the walk up stopped at MaxChain
// origins and the oldest of them names an origin of its own (the first
// failure is not among the links).
type ReplayChain struct {
	Links   []ChainLink
	More    bool
	Earlier bool
}

// ChainUp is the walk up replay chains that every reader of a chain
// shares (selectChain here; dlq/replay's ledger, for the chain exception
// and its cut): the common table expression name(key, id, at,
// tenant, depth), one row per origin, for each dead letter seed gives
// (a query of key, replay_of, dead_lettered_at and tenant; key is the
// caller's, carried up: a job, say). A row is an origin's id as its child
// names it (replay_of), the child's dead_lettered_at and tenant, and how
// far up it is (1: the seed's own origin). Each step is a primary-key
// probe of the origin (ChainOrigin: in the tenant, whatever the column
// holds, in the partitions older than its child). It goes on from an
// origin whose row is kept and names an origin of its own, up to MaxChain
// origins: one retention removed is a row (its child names it), but
// nothing above it is known. The caller writes WITH RECURSIVE.
func ChainUp(name, seed string) string {
	return name + `(key, id, at, tenant, depth) AS (
    SELECT s.key, s.id, s.at, s.tenant, 1 FROM (` + seed + `) AS s(key, id, at, tenant) WHERE s.id IS NOT NULL -- no origin: no probe
    UNION ALL
    SELECT ` + name + `.key, o.replay_of, o.dead_lettered_at, ` + name + `.tenant, ` + name + `.depth + 1
    FROM ` + name + ` JOIN dead_letters o ON ` + ChainOrigin("o", name) + `
    WHERE o.replay_of IS NOT NULL AND ` + name + `.depth < ` + strconv.Itoa(MaxChain) + `)`
}

// ChainOrigin is the condition that o, an alias of dead_letters, is the
// origin a row of step (a ChainUp) names: by its id, in the tenant, and
// only in the partitions older than its child's (an origin was
// dead-lettered before the replay of it came back), with a day of slack
// for the clocks that stamped them. No origin retention removed meets it.
func ChainOrigin(o, step string) string {
	return o + `.id = ` + step + `.id AND ` + o + `.tenant = ` + step + `.tenant AND ` +
		o + `.dead_lettered_at < ` + step + `.at + interval '24 hours'`
}

// ChainChild is the condition that c, an alias of dead_letters, came back
// from a replay of the dead letter id (of tenant, dead-lettered at at):
// linked to it (replay_of: dead_letters_replay_of_idx), in its tenant,
// whatever the column holds, and only in the partitions newer than its
// (a replay's dead letter came back after its origin), with a day of slack
// for the clocks that stamped them. The walk down a chain (selectChain)
// and a request's returns (dlq/replay's came_back) both read so.
func ChainChild(c, id, tenant, at string) string {
	return c + `.replay_of = ` + id + ` AND ` + c + `.tenant = ` + tenant + ` AND ` +
		c + `.dead_lettered_at > ` + at + ` - interval '24 hours'`
}

// The chain of a dead letter, within its tenant: its origins back to the
// first failure, newest first (ChainUp, a primary-key lookup per step),
// then itself, then the dead letters that came back from replays of it,
// each found by dead_letters_replay_of_idx, in the order they came back.
// Every step stays in the tenant, whatever the column holds. The dead
// letter is looked for where its dead_lettered_at is in [$5, $6) (the
// partitions the map names), of tenant $2 (empty: its own).
//
// Downwards the walk reads at most $4 (one more than the links shown) in
// all: each dead letter's first $4 children (dead_letters_replay_of_idx,
// in no order: an order would sort them all first), and the walk, read as
// the page needs it, stops at the $4th link below (PostgreSQL runs a
// recursive query only as far as it is read). A dead letter is a replay's
// child only when ingest links it (Record.replayOf's rules), but a
// producer that can read a replayed subject can copy its identity onto
// many messages, each linked: the page read every one of them
// (TestChainDescendantsReadBounded). A legitimate chain has a few children
// a link (each replay that failed again), all shown. A chain cut so is
// said to be (ReplayChain.More), and its links are those the walk found
// first, generation by generation: in the last generation it reached, not
// necessarily the earliest to come back (those of the first links' first).
//
// Each step carries dead_lettered_at, so no step probes every partition: an
// origin was dead-lettered before the replay of it came back, and a
// replay's dead letter after its origin, so a step looks only at the
// partitions on its side of the link (a day of slack for the clocks that
// stamped them); a dead letter without an origin probes nothing upwards,
// and the links are read back by their primary key.
var selectChain = `
WITH RECURSIVE start AS (
    SELECT d.id, d.replay_of, d.tenant, d.dead_lettered_at FROM dead_letters d
    WHERE d.id = $1 AND d.dead_lettered_at >= $5 AND d.dead_lettered_at < $6 AND ($2 = '' OR d.tenant = $2)
), ` + ChainUp("up", `SELECT 0::bigint, replay_of, dead_lettered_at, tenant FROM start`) + `, down AS (
    SELECT id, tenant, dead_lettered_at, 0 AS depth FROM start
    UNION ALL
    SELECT n.id, n.tenant, n.dead_lettered_at, down.depth + 1 FROM down
    CROSS JOIN LATERAL (
        SELECT c.id, c.tenant, c.dead_lettered_at FROM dead_letters c
        WHERE ` + ChainChild("c", "down.id", "down.tenant", "down.dead_lettered_at") + `
        LIMIT $4
    ) n
    WHERE down.depth < $3
), below AS (
    SELECT id, dead_lettered_at FROM down LIMIT $4
), chain AS (
    SELECT o.id, o.dead_lettered_at FROM up JOIN dead_letters o ON ` + ChainOrigin("o", "up") + ` -- the origins whose rows are kept
    UNION SELECT id, dead_lettered_at FROM below
)
SELECT d.id, d.generation, d.status, d.error_class, d.dead_lettered_at, left(d.error, 200) AS error,
    EXISTS ( -- the walk up stopped at $3 origins, and the oldest names one more
        SELECT FROM up JOIN dead_letters o ON ` + ChainOrigin("o", "up") + `
        WHERE up.depth = $3 AND o.replay_of IS NOT NULL
    ) AS earlier
FROM chain CROSS JOIN LATERAL ( -- a primary-key probe each (LIMIT: not flattened), whatever the estimates
    SELECT d.id, d.generation, d.status, d.error_class, d.dead_lettered_at, d.error FROM dead_letters d
    WHERE d.id = chain.id AND d.dead_lettered_at = chain.dead_lettered_at LIMIT 1
) d
ORDER BY d.generation, d.dead_lettered_at, d.id
LIMIT $4`

// Chain returns the replay chain of dead letter id of tenant, oldest
// generation first, at most 2·MaxChain+1 links; a dead letter outside any
// chain gives itself alone.
func (s *Store) Chain(ctx context.Context, id int64, tenant string) (ReplayChain, error) {
	var c ReplayChain
	b := &pgx.Batch{}
	QueueChain(b, id, tenant, minTime, maxTime, &c)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return ReplayChain{}, fmt.Errorf("read replay chain of dead letter %d: %w", id, err)
	}
	return c, nil
}

// shownLinks is how many links of a chain a page shows.
const shownLinks = 2*MaxChain + 1

// QueueChain queues the read of Chain into b (a page's round trip), for a
// dead letter whose dead_lettered_at is in [lo, hi), of tenant ("": its
// own); *out holds the chain once b has run. One link more than shown is
// read, to tell whether there are more.
func QueueChain(b *pgx.Batch, id int64, tenant string, lo, hi time.Time, out *ReplayChain) {
	b.Queue(selectChain, id, tenant, MaxChain, shownLinks+1, lo, hi).Query(func(rows pgx.Rows) error {
		type row struct {
			ChainLink
			Earlier bool `db:"earlier"`
		}
		read, err := pgx.CollectRows(rows, pgx.RowToStructByName[row])
		if err != nil {
			return err
		}
		c := ReplayChain{More: len(read) > shownLinks}
		for _, r := range read[:min(len(read), shownLinks)] {
			c.Links = append(c.Links, r.ChainLink)
			c.Earlier = c.Earlier || r.Earlier
		}
		*out = c
		return nil
	})
}
