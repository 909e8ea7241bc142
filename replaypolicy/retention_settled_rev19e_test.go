package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevRetention19SettledOverlapStillRefused: the new overlap refusal
// (db7d31a) tells the operator to "say which you mean in a rule for the
// dead letters both match, put first", and settledBefore accepts a file
// that does. But the older check beside it ("an earlier rule that matches
// some of the same dead letters sets no period for a status this one
// does") does not ask settledBefore: rule 2 (acme's hold, unresolved only)
// is said to match "some of this rule's dead letters first" although rule
// 1 takes every one of them, and the file is refused. Acme's search dead
// letters are rule 1's, acme's other ones rule 2's (closed: [retention]'s),
// everyone else's search ones rule 3's: nothing is ambiguous, and the
// message states something false.
func TestRevRetention19SettledOverlapStillRefused(t *testing.T) {
	t.Parallel()
	table, err := Parse("retention.toml", []byte(`
[[rule]]
item_type = "search.*"
class = "rebuildable"

[retention]
closed = "30d"
unresolved = "90d"

# acme's search dead letters: held like the rest of acme's, closed as search's
[[retention.rule]]
tenant = "acme"
item_type = "search.>"
unresolved = "never"
closed = "1d"

# acme's legal hold
[[retention.rule]]
tenant = "acme"
unresolved = "never"

# search is rebuildable: short
[[retention.rule]]
item_type = "search.>"
unresolved = "7d"
closed = "1d"
`))
	require.NoError(t, err, "every dead letter two rules match is settled by rule 1, put first as the refusal asks")
	r := table.Retention()
	k, _ := r.For("acme", "search.index", "discarded")
	assert.Equal(t, 24*time.Hour, k.For)
	k, _ = r.For("acme", "billing.invoice", "quarantined")
	assert.True(t, k.Forever)
	k, _ = r.For("globex", "search.index", "quarantined")
	assert.Equal(t, 7*24*time.Hour, k.For)
}
