package audit_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
)

// TestRevFixes4bStubCarriesContent: a stub (left_out) is refused only when
// it holds an action or an at; any other content key (tenant, actor,
// reason, outcome, object) is read and ignored, its hash re-computed from
// the digest alone. So a doctored stub can say whatever its editor wants
// ("tenant":"acme","actor_email":"bob@…","reason":"…") beside a digest
// that proves nothing of it, and the export verifies.
func TestRevFixes4bStubCarriesContent(t *testing.T) {
	t.Parallel()
	export, keys := v3Export(t)
	lines := parseExport(t, export)
	require.True(t, lines[2].stub())
	lines[2].set(t, "tenant", "acme")
	lines[2].set(t, "actor_email", "bob@example.com")
	lines[2].set(t, "reason", "bob approved his own request")
	lines[2].set(t, "outcome", "ok")
	res, err := audit.VerifyExport(strings.NewReader(joinExport(t, lines)), keys)
	require.NoError(t, err)
	assert.False(t, res.OK(), "a stub showing a tenant, an actor and a reason its digest does not prove verified: %s", res)
}
