package replay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev35UnknownTenantIsNoTenantOfTheAllowlist: REPLAY_SUBJECT_ALLOW's
// entries for every tenant name the dead letter's tenant as {tenant}; for
// tenant "unknown", where ingest puts what names no tenant (from any
// producer, flagged invalid:tenant or missing:tenant), app.{tenant}.>
// became app.unknown.>, a place no service's tenant is. That tenant now
// gets nothing from such an entry; one that names it is still taken.
func TestRev35UnknownTenantIsNoTenantOfTheAllowlist(t *testing.T) {
	t.Parallel()
	a, err := replay.ParseSubjectAllowlist("app.{tenant}.>,unknown=triage.unknown.>")
	require.NoError(t, err)
	assert.Equal(t, []string{"app.acme.>"}, a.Patterns("acme"))
	assert.Equal(t, []string{"triage.unknown.>"}, a.Patterns(dlq.UnknownTenant))
	assert.Error(t, a.For(dlq.UnknownTenant, "app.unknown.orders"))
	assert.NoError(t, a.For(dlq.UnknownTenant, "triage.unknown.orders"))
}
