package dlq_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev34UnreadTermsLeaveTheStaleGaugeAlone: a pass whose read of the
// active retention terms failed (a timeout) set
// quarantine_retention_terms_stale to 0 and logged that this process's
// terms "are the active ones again", which nothing had read: a read that
// failed every other pass kept RetentionTermsStale (for: 10m) from ever
// firing. A failed read leaves the gauge and the log as the last read
// left them.
func TestRev34UnreadTermsLeaveTheStaleGaugeAlone(t *testing.T) {
	t.Parallel()
	r := setupRetention(t)
	ctx := context.Background()
	old := r.start(t, "old", weekTerms)
	r.start(t, "current", monthTerms)
	require.True(t, old.pass(t).Stale)
	require.Equal(t, 1.0, old.stale(t))

	_, err := r.db.OwnerPool.Exec(ctx, `REVOKE SELECT ON retention_terms_versions FROM quarantine_runtime`)
	require.NoError(t, err)
	_, err = old.keeper.Pass(ctx)
	require.Error(t, err, "the terms cannot be read")
	assert.Equal(t, 1.0, old.stale(t), "a read that failed says nothing of the terms")
	assert.False(t, strings.Contains(old.log.String(), "are the active ones again"), "no recovery is logged: %s", old.log)

	_, err = r.db.OwnerPool.Exec(ctx, `GRANT SELECT ON retention_terms_versions TO quarantine_runtime`)
	require.NoError(t, err)
	assert.True(t, old.pass(t).Stale, "read again, still stale")
	assert.Equal(t, 1.0, old.stale(t))
}
