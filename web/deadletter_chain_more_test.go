package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestDeadLetterPageSaysChainHasMore: a replay chain with more dead letters
// than the page shows (2·MaxChain+1: a producer copying a replay's identity
// onto its messages) was shown cut with nothing to say so; the page now says
// the chain goes on, and a chain shown whole says nothing.
func TestDeadLetterPageSaysChainHasMore(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	letters := []testfactory.Letter{{Tenant: "acme", ItemType: "orders.refund", At: now.Add(-2 * time.Hour)}}
	for i := range 2*dlq.MaxChain + 1 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: now.Add(-time.Duration(i) * time.Second)})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	origin, wide := ids[0], ids[1:]
	_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $1, generation = 1 WHERE id = ANY($2)`, origin, wide)
	require.NoError(t, err)
	c, _ := b.SignIn(t, "acme:oncall")

	resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", origin), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	assert.Equal(t, 2*dlq.MaxChain+1, byID(d, "replay-chain-link").Length(), "the links shown")
	more := byID(d, "replay-chain-more")
	require.Equal(t, 1, more.Length(), "the page says the chain has more than it shows")
	assert.Contains(t, text(more), "more dead letters than the 101 shown")

	// One child fewer: the chain is shown whole, and nothing more is said.
	_, err = b.DB.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = NULL, generation = 0 WHERE id = $1`, wide[0])
	require.NoError(t, err)
	resp = b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", origin), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d = resp.Doc(t)
	assert.Equal(t, 2*dlq.MaxChain+1, byID(d, "replay-chain-link").Length(), "the origin and its 100 replays that came back")
	assert.Zero(t, byID(d, "replay-chain-more").Length())
}
