package dlq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

func TestCloseDiscardAndResolve(t *testing.T) {
	t.Parallel()
	b := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com"}
	ids := b.insert(t, letter{itemType: "search.index_update", msgID: "c-a"}, letter{itemType: "search.index_update", msgID: "c-c"},
		letter{itemType: "search.index_update", msgID: "c-d"})
	a, c, d := ids[0], ids[1], ids[2]
	scope := CloseInput{Tenants: []string{"acme"}}

	t.Run("Success", func(t *testing.T) {
		in := scope
		in.IDs, in.Version, in.To, in.Reason = []int64{a}, 1, StatusDiscarded, "poison: bad schema upstream"
		n, err := b.store.Close(ctx, in, oncall, quarantine.RequestMeta{})
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		dl, err := b.store.Get(ctx, a)
		require.NoError(t, err)
		assert.Equal(t, StatusDiscarded, dl.Status)
		assert.Equal(t, int32(2), dl.Version)
	})
	// A close of a dead letter closed already: the status guard refuses
	// it (a stale version of one still open: TestRevTriage27CloseRefusesAStaleVersion).
	t.Run("AlreadyClosed", func(t *testing.T) {
		in := scope
		in.IDs, in.Version, in.To, in.Reason = []int64{a}, 1, StatusResolved, "x"
		_, err := b.store.Close(ctx, in, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
	})
	t.Run("OtherTenant", func(t *testing.T) {
		in := CloseInput{Tenants: []string{"globex"}, IDs: []int64{c}, To: StatusResolved, Reason: "x"}
		_, err := b.store.Close(ctx, in, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ENOTFOUND, quarantine.ErrorCode(err), "%v", err)
	})
	t.Run("BulkIsAtomic", func(t *testing.T) {
		in := scope
		in.IDs, in.To, in.Reason = []int64{c, d, a}, StatusResolved, "reconciled by hand"
		_, err := b.store.Close(ctx, in, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "a is discarded already")
		dl, err := b.store.Get(ctx, c)
		require.NoError(t, err)
		assert.Equal(t, StatusQuarantined, dl.Status, "nothing changed")
		in.IDs = []int64{c, d}
		n, err := b.store.Close(ctx, in, oncall, quarantine.RequestMeta{})
		require.NoError(t, err)
		assert.Equal(t, 2, n)
	})
	t.Run("NeedsReason", func(t *testing.T) {
		_, err := b.store.Close(ctx, CloseInput{IDs: []int64{c}, To: StatusDiscarded, All: true}, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
	})
	var ok, denied int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE outcome = 'ok'), count(*) FILTER (WHERE outcome = 'denied')
        FROM audit_log WHERE action IN ('deadletter.discard', 'deadletter.resolve')`).Scan(&ok, &denied))
	assert.Equal(t, 3, ok, "one audit row per item changed")
	assert.Equal(t, 2, denied, "one denied row per refused attempt in the scope (the stale version, the bulk with a closed one)")
	var reason string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT reason FROM audit_log WHERE outcome = 'denied' ORDER BY seq DESC LIMIT 1`).Scan(&reason))
	assert.Equal(t, "1 selected dead letters refused: not open (discarded) (1)", reason, "the refused id and why, not the ones it would have taken")
}
