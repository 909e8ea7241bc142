package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevRetention25OddItemTypeKeptTheLongestOfItsOwnTenantsTerms: a dead
// letter whose item type names none ("billing..charge": ingest keeps it as
// sent, flagged invalid:item_type) matches no rule's item types, and is
// kept the longest of what the section and every rule of ITS tenant keep
// with its status (Retention.For, longestFor): another tenant's legal hold
// does not keep it, and a rule's shorter period does not cut the
// section's "never" short.
func TestRevRetention25OddItemTypeKeptTheLongestOfItsOwnTenantsTerms(t *testing.T) {
	t.Parallel()
	table, err := Parse("retention.toml", []byte(`
[[rule]]
item_type = "search.*"
class = "rebuildable"

[retention]
closed = "never"
unresolved = "90d"

[[retention.rule]]
tenant = "acme"
closed = "7d"

[[retention.rule]]
tenant = "globex"
unresolved = "never"
`))
	require.NoError(t, err)
	r := table.Retention()

	k, ok := r.For("acme", "billing..charge", "discarded")
	require.True(t, ok)
	assert.True(t, k.Forever, "acme's closed odd item type: the section's never is longer than acme's rule's 7d, got %s", k)

	k, ok = r.For("acme", "billing..charge", "quarantined")
	require.True(t, ok)
	assert.False(t, k.Forever, "acme's unresolved odd item type is not kept by globex's legal hold, got %s", k)
	assert.Equal(t, 90*24*time.Hour, k.For, "acme's unresolved: the section's 90d, acme having no rule of its own for it")

	k, ok = r.For("globex", "billing..charge", "quarantined")
	require.True(t, ok)
	assert.True(t, k.Forever, "globex's own rule keeps its unresolved odd item type for good, got %s", k)
}
