package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestFixAudit12BlockedItemIsDenied: an item the rules leave out of a
// request is recorded as the policy's refusal (replay.item.blocked, outcome
// denied: "authorisation or policy refused it"), so the audit page's
// Outcome filter finds it among the refusals; the request's own row and
// its requested items stay ok.
func TestFixAudit12BlockedItemIsDenied(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	fine := b.seedItem(t, "search.index_update", "fa12-fine", nil, "{}")
	bad := b.seedItem(t, "search.index_update", "fa12-\xff-id", nil, "{}")
	req := b.request(t, []int64{fine, bad}, replay.SubmitInput{})

	outcome := func(action string, id int64) string {
		var o string
		require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT outcome FROM audit_log
            WHERE action = $1 AND object_type = 'dead_letter' AND object_id = $2`, action, fmt.Sprint(id)).Scan(&o))
		return o
	}
	assert.Equal(t, "denied", outcome("replay.item.blocked", bad), "the rules refused the item")
	assert.Equal(t, "ok", outcome("replay.item.requested", fine))
	var requestOutcome string
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT outcome FROM audit_log
        WHERE action = 'replay.request' AND object_id = $1`, fmt.Sprint(req.ID)).Scan(&requestOutcome))
	assert.Equal(t, "ok", requestOutcome, "the request itself was made")
}
