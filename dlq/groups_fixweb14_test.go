package dlq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// TestFixWeb14GroupsPastTheLastPageCountWhatMatches: a page past the last
// has no row to carry the window count; the groups the filter matches are
// counted anyway, with its conditions (unresolved only here), while a
// filter that matches nothing counts 0.
func TestFixWeb14GroupsPastTheLastPageCountWhatMatches(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	ids := l.insert(t, letter{err: "boom one"}, letter{err: "boom two two"}, letter{err: "boom three three three"})
	l.setStatus(t, StatusResolved, ids[2])

	page, err := l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}, Limit: 2, Offset: 10})
	require.NoError(t, err)
	assert.Empty(t, page.Groups)
	assert.Equal(t, 3, page.Total, "every group")

	page, err = l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}, Unresolved: true, Limit: 2, Offset: 2})
	require.NoError(t, err)
	assert.Empty(t, page.Groups)
	assert.Equal(t, 2, page.Total, "the groups with unresolved dead letters")

	page, err = l.store.Groups(ctx, GroupFilter{Tenants: []string{"acme"}, ErrorClass: ClassTerminated, Offset: 100})
	require.NoError(t, err)
	assert.Zero(t, page.Total)
}

// TestFixWeb14CloseOfADeadLetterNamedTwiceClosesItOnce: Close takes a
// selection naming a dead letter twice as naming it once.
func TestFixWeb14CloseOfADeadLetterNamedTwiceClosesItOnce(t *testing.T) {
	t.Parallel()
	l := newLetters(t)
	ctx := context.Background()
	ids := l.insert(t, letter{err: "boom"}, letter{err: "boom"})
	n, err := l.store.Close(ctx, CloseInput{IDs: []int64{ids[0], ids[1], ids[0]}, To: StatusDiscarded, Reason: "dup", Tenants: []string{"acme"}},
		quarantine.Actor{Issuer: "https://idp.example", Subject: "oncall"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []int64{3, 1, 2}, UniqueIDs([]int64{3, 1, 3, 2, 1}), "each once, in the order first named")
}
