package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestBulkRefusalOfReadableTenantAudited: an on-call of acme who may only
// read globex selects dead letters of both. The action goes through for
// acme's; globex's are left out, and that refusal is audited as denied
// under globex (its auditors see it), in the same transaction as the
// action's own rows: discard, a discard of globex's alone, and a replay
// selection.
func TestBulkRefusalOfReadableTenantAudited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	client, me := b.SignIn(t, "acme:oncall", "globex:viewer")
	acme := seed(t, b, "acme", "search.index_update", "bulk-acme", nil)
	globex := seed(t, b, "globex", "search.index_update", "bulk-globex", nil)
	status := func(id int64) dlq.Status {
		d, err := dlq.NewStore(b.Pool).Get(ctx, id)
		require.NoError(t, err)
		return d.Status
	}
	// sameTx reports whether the action's row and the refusal's row were
	// written by one transaction.
	sameTx := func(action string) bool {
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM audit_log WHERE action = $1 AND actor_subject = $2`,
			action, me.Subject).Scan(&n))
		return n == 1
	}

	resp := b.Do(t, client, "POST", "/deadletters/discard", url.Values{"id": {fmt.Sprint(acme), fmt.Sprint(globex)}, "reason": {"dup"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	assert.Equal(t, dlq.StatusDiscarded, status(acme))
	assert.Equal(t, dlq.StatusQuarantined, status(globex), "left out")
	assert.Equal(t, 1, b.AuditCount(t, `action = 'deadletter.discard' AND outcome = 'denied' AND tenant = 'globex' AND object_id = $1
        AND reason LIKE '%may not discard in globex%' AND actor_subject = $2`, fmt.Sprint(globex), me.Subject))
	assert.Equal(t, 1, b.AuditCount(t, `action = 'deadletter.discard' AND outcome = 'ok' AND tenant = 'acme' AND object_id = $1`, fmt.Sprint(acme)))
	assert.True(t, sameTx("deadletter.discard"), "the refusal is written with the discard")
	assert.Zero(t, b.AuditCount(t, "action = 'authz.denied' AND actor_subject = $1", me.Subject), "a tenant they may read is not a cross-tenant attempt")

	// Only globex's: nothing to do, refused at once and audited.
	resp = b.Do(t, client, "POST", "/deadletters/resolve", url.Values{"id": {fmt.Sprint(globex)}, "reason": {"fixed"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	assert.Equal(t, dlq.StatusQuarantined, status(globex))
	assert.Equal(t, 1, b.AuditCount(t, `action = 'deadletter.resolve' AND outcome = 'denied' AND tenant = 'globex' AND object_id = $1
        AND reason LIKE '%may not resolve in globex%'`, fmt.Sprint(globex)))

	// A replay selection: globex's is refused under globex, with the draft.
	acme2 := seed(t, b, "acme", "search.index_update", "bulk-acme-2", nil)
	resp = b.Do(t, client, "POST", "/replay", url.Values{"id": {fmt.Sprint(acme2), fmt.Sprint(globex)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	assert.Equal(t, 1, b.AuditCount(t, `action = 'replay.draft' AND outcome = 'denied' AND tenant = 'globex' AND object_id = $1
        AND reason LIKE '%may not request%in globex%'`, fmt.Sprint(globex)))
	assert.Positive(t, b.AuditCount(t, `action = 'replay.draft' AND outcome = 'ok' AND actor_subject = $1`, me.Subject))
	assert.True(t, sameTx("replay.draft"), "the refusal is written with the drafts")
}
