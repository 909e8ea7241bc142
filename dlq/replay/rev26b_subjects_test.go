package replay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRevRequest26AllowlistWildcardNeedsAToken: a replay subject pattern
// ending in ">" covers one or more tokens after its prefix, as NATS reads
// it, never the prefix alone. So a producer's Dlq-Original-Subject
// "app.acme" (or "billing.acme"), which is no subject of the tenant's
// application streams, is refused for app.{tenant}.> (and
// acme=billing.acme.>), with the allowlist named, while every subject
// under them is allowed. No test aimed a replay at the bare prefix: with
// ">" matching zero tokens every test passed.
func TestRevRequest26AllowlistWildcardNeedsAToken(t *testing.T) {
	t.Parallel()
	allow, err := replay.ParseSubjectAllowlist("app.{tenant}.>, acme=billing.acme.>")
	require.NoError(t, err)
	for _, subject := range []string{"app.acme", "billing.acme"} {
		assert.ErrorContains(t, allow.For("acme", subject), "is not in the replay allowlist of tenant \"acme\"", subject)
	}
	for _, subject := range []string{"app.acme.search.index_update", "app.acme.x", "billing.acme.charge.refund"} {
		assert.NoError(t, allow.For("acme", subject), subject)
	}
}
