package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChainDescendantsReadBounded: a dead letter page's replay chain reads
// at most the links it shows downwards, however many dead letters name the
// dead letter as their origin. Ingest links a dead letter to the replay it
// came back from by the replay's identity, which a producer that can read
// the replayed subject can copy onto any number of messages: the walk
// joined every child of every link, so 3,000 such children were all read
// (and their rows fetched) for a page that shows 2·MaxChain+1 links.
func TestChainDescendantsReadBounded(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	now := planNow()
	xs := []letter{{subject: "app.acme.orders.refund", at: now.Add(-48 * time.Hour)}}
	for i := range 3000 {
		xs = append(xs, letter{subject: "app.acme.orders.refund", at: now.Add(-time.Duration(i) * 30 * time.Second)})
	}
	ids := l.insert(t, xs...)
	origin := ids[0]
	_, err := l.db.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $1, generation = 1 WHERE id = ANY($2)`, origin, ids[1:])
	require.NoError(t, err)
	_, err = l.db.OwnerPool.Exec(ctx, `ANALYZE dead_letters`)
	require.NoError(t, err)

	c, err := l.store.Chain(ctx, origin, "acme")
	require.NoError(t, err)
	require.Len(t, c.Links, 2*MaxChain+1, "the links shown: the origin, then its children up to the bound")
	assert.True(t, c.More, "the page says the chain has more than it shows")
	assert.Equal(t, origin, c.Links[0].ID)
	for _, k := range c.Links[1:] {
		assert.EqualValues(t, 1, k.Generation)
	}

	// A short chain is whole: the first child's own child is found.
	_, err = l.db.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $1, generation = 2 WHERE id = $2`, ids[1], ids[2])
	require.NoError(t, err)
	short, err := l.store.Chain(ctx, ids[1], "acme")
	require.NoError(t, err)
	assert.False(t, short.More, "a chain shown whole")
	var got []int64
	for _, k := range short.Links {
		got = append(got, k.ID)
	}
	assert.Equal(t, []int64{origin, ids[1], ids[2]}, got, "origin, itself, its child")

	rows, err := l.db.Pool.Query(ctx, `EXPLAIN (ANALYZE) `+selectChain, pgx.QueryExecModeSimpleProtocol,
		origin, "acme", MaxChain, shownLinks+1, minTime, maxTime)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	assert.LessOrEqual(t, partitionRowsRead(plan), 4*(2*MaxChain+1), "dead letters read for a chain of %d links; plan:\n%s", shownLinks, plan)
}
