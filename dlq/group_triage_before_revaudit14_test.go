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

// TestRevAudit14GroupAssignBeforeNamesTheOwnerItReplaced: a group.assign
// row's before is "the row as it was" (TriageGroup). It is read with
// SELECT ... FOR UPDATE, which locks nothing when the group has no triage
// row yet; a save that commits one in between (another person's, another
// tab's: an owner set for the first time) then has the upsert of this
// save wait for it and overwrite it, while this save's audit row says
// there was nothing before. The log then shows bob assigning a group that
// had no owner, when he replaced alice: what the row records is not what
// happened. (The other save is played here by its own statement, the one
// upsertOwner runs, held open until this save waits on it.)
func TestRevAudit14GroupAssignBeforeNamesTheOwnerItReplaced(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	boom := letter{err: "boom 14", stack: "main.boom14()"}
	l.insert(t, boom)
	fp := Fingerprint(ClassPermanent, "boom 14", "main.boom14()")
	g := GroupRef{Tenant: "acme", Fingerprint: fp}
	bob := quarantine.Actor{Issuer: "https://idp.example", Subject: "bob", Email: "bob@example.com", EmailVerified: true}

	// Alice's save: her owner row inserted, not yet committed.
	other, err := l.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer other.Rollback(ctx) //nolint:errcheck
	_, err = other.Exec(ctx, upsertOwner, g.Tenant, g.Fingerprint, "alice@example.com", "alice@example.com")
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() { done <- l.store.AssignGroup(ctx, g, "bob@example.com", bob, quarantine.RequestMeta{}) }()
	// Bob's save reads the row (none yet), then waits on alice's insert.
	require.Eventually(t, func() bool {
		var waiting bool
		err := l.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO group_triage%')`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "bob's save waits for alice's row")
	require.NoError(t, other.Commit(ctx))
	require.NoError(t, <-done)

	var owner string
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT owner FROM group_triage WHERE tenant = $1 AND fingerprint = $2`, g.Tenant, fp).Scan(&owner))
	require.Equal(t, "bob@example.com", owner, "bob's save replaced alice as the owner")

	var before *string
	require.NoError(t, l.db.Pool.QueryRow(ctx, `SELECT before::text FROM audit_log WHERE action = $1 AND object_id = $2 AND actor_subject = 'bob'`,
		audit.ActionGroupAssign, fp).Scan(&before))
	require.NotNil(t, before, "bob's group.assign says the group had no triage row before it, but it replaced alice as owner")
	var was map[string]any
	require.NoError(t, json.Unmarshal([]byte(*before), &was))
	assert.Equal(t, "alice@example.com", was["owner"])
}
