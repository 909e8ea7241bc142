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

// TestDeadLetterPageSaysChainGoesBackFurther: a dead letter more than
// dlq.MaxChain replays from its first failure shows the MaxChain before it
// and says the chain goes back further, naming the oldest shown, whose
// page has the links before it; one replay nearer, the first failure is
// shown and nothing is said.
func TestDeadLetterPageSaysChainGoesBackFurther(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	var letters []testfactory.Letter
	for i := range dlq.MaxChain + 2 {
		letters = append(letters, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", At: now.Add(time.Duration(i-dlq.MaxChain-2) * time.Minute)})
	}
	ids := testfactory.DeadLetters(t, b.Pool, letters...)
	for i := 1; i < len(ids); i++ {
		_, err := b.DB.OwnerPool.Exec(ctx, `UPDATE dead_letters SET replay_of = $1, generation = $2 WHERE id = $3`, ids[i-1], i, ids[i])
		require.NoError(t, err)
	}
	c, _ := b.SignIn(t, "acme:oncall")

	last := ids[len(ids)-1]
	resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", last), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	assert.Equal(t, dlq.MaxChain+1, byID(d, "replay-chain-link").Length(), "MaxChain origins and itself")
	earlier := byID(d, "replay-chain-earlier")
	require.Equal(t, 1, earlier.Length(), "the page says the chain goes back further")
	assert.Contains(t, text(earlier), "its first failure is not among them")
	assert.Contains(t, text(earlier), fmt.Sprintf("#%d", ids[1]), "the oldest shown is named")
	assert.Equal(t, fmt.Sprintf("/deadletters/%d", ids[1]), earlier.Find("a").AttrOr("href", ""), "and linked")
	assert.Zero(t, byID(d, "replay-chain-more").Length(), "nothing below it")

	resp = b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", ids[len(ids)-2]), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d = resp.Doc(t)
	assert.Equal(t, dlq.MaxChain+2, byID(d, "replay-chain-link").Length(), "the first failure, its replays and the one after")
	assert.Zero(t, byID(d, "replay-chain-earlier").Length(), "the first failure is shown")
}
