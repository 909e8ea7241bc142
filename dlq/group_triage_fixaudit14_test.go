package dlq

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// TestFixAudit14GroupSnoozeKeepsTheTimeOfASnoozeSavedConcurrently: a
// snooze that keeps the time limit the group's snooze has now
// (SnoozeInput.KeepUntil, a count added to it) reads that time from the
// row it locks. A snooze saved for the first time meanwhile (its row
// inserted, not yet committed) is waited for and read, not overwritten
// with no time limit; the audit row's before names it. A first save with
// no one else's still says there was no row before.
func TestFixAudit14GroupSnoozeKeepsTheTimeOfASnoozeSavedConcurrently(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	for _, m := range []string{"snooze alpha", "assign beta", "wake gamma"} {
		l.insert(t, letter{err: m, stack: "main.boom14()"})
	}
	g := GroupRef{Tenant: "acme", Fingerprint: Fingerprint(ClassPermanent, "snooze alpha", "main.boom14()")}
	bob := quarantine.Actor{Issuer: "https://idp.example", Subject: "bob", Email: "bob@example.com", EmailVerified: true}
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Microsecond)

	other, err := l.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer other.Rollback(ctx) //nolint:errcheck
	_, err = other.Exec(ctx, upsertSnooze, g.Tenant, g.Fingerprint, until, nil, nil, "alice@example.com")
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		done <- l.store.SnoozeGroup(ctx, g, SnoozeInput{GrowBy: 5, KeepUntil: true}, bob, quarantine.RequestMeta{})
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		err := l.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO group_triage%')`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "bob's save waits for alice's row")
	require.NoError(t, other.Commit(ctx))
	require.NoError(t, <-done)

	var got *time.Time
	var grow *int64
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT snoozed_until, snooze_grow_by FROM group_triage WHERE tenant = $1 AND fingerprint = $2`,
		g.Tenant, g.Fingerprint).Scan(&got, &grow))
	require.NotNil(t, got, "bob kept the time limit of the snooze: alice's")
	assert.True(t, until.Equal(*got), "%s, want %s", got, until)
	require.NotNil(t, grow)
	assert.Equal(t, int64(5), *grow)
	var before *string
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT before::text FROM audit_log WHERE action = $1 AND object_id = $2 AND actor_subject = 'bob'`,
		audit.ActionGroupSnooze, g.Fingerprint).Scan(&before))
	require.NotNil(t, before, "bob's snooze replaced alice's")

	t.Run("FirstSaveHasNoBefore", func(t *testing.T) {
		g := GroupRef{Tenant: "acme", Fingerprint: Fingerprint(ClassPermanent, "assign beta", "main.boom14()")}
		require.NoError(t, l.store.AssignGroup(ctx, g, "carol@example.com", bob, quarantine.RequestMeta{}))
		var before, after *string
		require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT before::text, after::text FROM audit_log WHERE action = $1 AND object_id = $2`,
			audit.ActionGroupAssign, g.Fingerprint).Scan(&before, &after))
		assert.Nil(t, before, "no row before the first save")
		var was map[string]any
		require.NoError(t, json.Unmarshal([]byte(*after), &was))
		assert.Equal(t, "carol@example.com", was["owner"])
	})
	t.Run("RefusedWakeLeavesNoRow", func(t *testing.T) {
		g := GroupRef{Tenant: "acme", Fingerprint: Fingerprint(ClassPermanent, "wake gamma", "main.boom14()")}
		err := l.store.WakeGroup(ctx, g, bob, quarantine.RequestMeta{})
		assert.Equal(t, quarantine.ECONFLICT, quarantine.ErrorCode(err), "%v", err)
		var n int
		require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT count(*) FROM group_triage WHERE tenant = $1 AND fingerprint = $2`,
			g.Tenant, g.Fingerprint).Scan(&n))
		assert.Zero(t, n, "the blank row made for the lock goes with the refused save")
	})
}
