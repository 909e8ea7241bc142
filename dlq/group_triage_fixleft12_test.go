package dlq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// TestFixLeft12TriageGroupAllOrNothing: one save of a group's panel
// (owner, note and a snooze or a wake) lands whole, one audit row per
// part, or not at all: a wake of a group that is not snoozed refuses the
// owner and note sent with it too, and writes no audit row.
func TestFixLeft12TriageGroupAllOrNothing(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	oncall := quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall", Email: "oncall@example.com", EmailVerified: true}
	l.insert(t, letter{err: "boom 12", stack: "main.boom()"})
	g := GroupRef{Tenant: "acme", Fingerprint: Fingerprint(ClassPermanent, "boom 12", "main.boom()")}
	audited := func() int {
		var n int
		require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE object_id = $1`, g.Fingerprint).Scan(&n))
		return n
	}
	owner, other := "search-team", "payments-team"

	t.Run("Conflict", func(t *testing.T) {
		err := l.store.TriageGroup(ctx, g, GroupChange{Owner: &owner, Note: ptr("typed"), Wake: true}, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "not snoozed: %v", err)
		tr, err := l.store.GroupTriage(ctx, []string{"acme"}, []string{g.Fingerprint})
		require.NoError(t, err)
		assert.Empty(t, tr, "neither the owner nor the note was written")
		assert.Zero(t, audited())
	})
	t.Run("Invalid", func(t *testing.T) {
		err := l.store.TriageGroup(ctx, g, GroupChange{Owner: &owner, Snooze: &SnoozeInput{}}, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "a snooze without an end: %v", err)
		err = l.store.TriageGroup(ctx, g, GroupChange{Snooze: &SnoozeInput{GrowBy: 1}, Wake: true}, oncall, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "snooze and wake: %v", err)
		assert.Zero(t, audited())
	})
	t.Run("Success", func(t *testing.T) {
		require.NoError(t, l.store.TriageGroup(ctx, g, GroupChange{Owner: &owner, Note: ptr("typed"), Ticket: ptr("https://t.example/1"),
			Snooze: &SnoozeInput{For: time.Hour}}, oncall, quarantine.RequestMeta{}))
		tr, err := l.store.GroupTriage(ctx, []string{"acme"}, []string{g.Fingerprint})
		require.NoError(t, err)
		require.Len(t, tr, 1)
		assert.Equal(t, []any{owner, "typed", "https://t.example/1", true}, []any{tr[0].Owner, tr[0].Note, tr[0].TicketURL, tr[0].Snoozed})
		var actions []string
		rows, err := l.db.Pool.Query(ctx, `SELECT action FROM audit_log WHERE object_id = $1 ORDER BY seq`, g.Fingerprint)
		require.NoError(t, err)
		for rows.Next() {
			var a string
			require.NoError(t, rows.Scan(&a))
			actions = append(actions, a)
		}
		require.NoError(t, rows.Err())
		assert.Equal(t, []string{"group.assign", "group.note", "group.snooze"}, actions)

		// Wake with a new owner: both, or (below) neither.
		require.NoError(t, l.store.TriageGroup(ctx, g, GroupChange{Owner: &other, Wake: true}, oncall, quarantine.RequestMeta{}))
		tr, err = l.store.GroupTriage(ctx, []string{"acme"}, []string{g.Fingerprint})
		require.NoError(t, err)
		assert.Equal(t, other, tr[0].Owner)
		assert.False(t, tr[0].Snoozed)
		assert.Equal(t, 5, audited())
	})
}
