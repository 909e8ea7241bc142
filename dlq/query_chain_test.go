package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/migrations/testdb"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestChainWalksItsTenantBothWays: the chain of a dead letter (dlq.ChainUp
// upwards, replay_of downwards) is the same whole chain from any of its
// links, oldest generation first; a link naming a dead letter of another
// tenant ends the walk there; and the walk up stops after MaxChain
// origins, saying so (Earlier) only when the oldest of them has one more.
func TestChainWalksItsTenantBothWays(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	ctx := context.Background()
	store := dlq.NewStore(db.Pool)
	// link stores a dead letter of tenant, at, whose origin is replayOf (0:
	// none), one generation past it.
	link := func(tenant string, at time.Time, replayOf int64, gen int) int64 {
		id := testfactory.DeadLetter(t, db.Pool, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update",
			MsgID: "chain-" + tenant, At: at})
		if replayOf != 0 {
			_, err := db.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $2, generation = $3 WHERE id = $1`, id, replayOf, gen)
			require.NoError(t, err)
		}
		return id
	}
	ids := func(links []dlq.ChainLink) []int64 {
		var out []int64
		for _, l := range links {
			out = append(out, l.ID)
		}
		return out
	}

	start := time.Now().Add(-72 * time.Hour)
	var chain []int64
	for gen := range 4 {
		var prev int64
		if gen > 0 {
			prev = chain[gen-1]
		}
		chain = append(chain, link("acme", start.Add(time.Duration(gen)*20*time.Hour), prev, gen))
	}
	for _, from := range chain {
		c, err := store.Chain(ctx, from, "acme")
		require.NoError(t, err)
		assert.Equal(t, chain, ids(c.Links), "the whole chain from %d", from)
		assert.False(t, c.More, "nothing more to tell")
		assert.False(t, c.Earlier, "the first failure is shown")
	}

	t.Run("OtherTenant", func(t *testing.T) {
		foreign := link("globex", start, 0, 0)
		claimed := link("acme", start.Add(time.Hour), foreign, 1)
		c, err := store.Chain(ctx, claimed, "acme")
		require.NoError(t, err)
		assert.Equal(t, []int64{claimed}, ids(c.Links), "a link to another tenant's dead letter is not followed")
	})

	t.Run("Bounded", func(t *testing.T) {
		var long []int64
		for gen := range dlq.MaxChain + 5 {
			var prev int64
			if gen > 0 {
				prev = long[gen-1]
			}
			long = append(long, link("long", start.Add(time.Duration(gen)*time.Minute), prev, gen))
		}
		c, err := store.Chain(ctx, long[len(long)-1], "long")
		require.NoError(t, err)
		assert.Equal(t, long[len(long)-1-dlq.MaxChain:], ids(c.Links), "MaxChain origins, then itself")
		assert.True(t, c.Earlier, "the walk up stopped short of the first failure, and says so")

		// MaxChain origins exactly: the first failure is the oldest shown.
		c, err = store.Chain(ctx, long[dlq.MaxChain], "long")
		require.NoError(t, err)
		assert.Equal(t, long, ids(c.Links), "back to the first failure, and the replays after it")
		assert.False(t, c.Earlier, "nothing before the first failure")
	})
}
