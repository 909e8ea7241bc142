package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixUx12ReplayAllMatchingTakesOnlyWhatCanGo: the list's "All N
// matching → Replay all matching…" of a filter (status unresolved, two
// tenants, one of them only readable) selects what a new request could
// take: the quarantined dead letters of the tenant where the person may
// request replays, not the one an open request holds nor the read-only
// tenant's. Of a filter that selects nothing a request could take, it
// goes back to the list and says so, instead of a draft of nothing.
func TestFixUx12ReplayAllMatchingTakesOnlyWhatCanGo(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, u := b.SignIn(t, "acme:oncall", "globex:viewer")
	var acme []int64
	for i := range 3 {
		acme = append(acme, testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update",
			MsgID: fmt.Sprintf("fixux12-acme-%d", i), Error: "index shard 9 unavailable"}))
		testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update",
			MsgID: fmt.Sprintf("fixux12-globex-%d", i), Error: "index shard 9 unavailable"})
	}
	testfactory.Request(t, b.Replays, u.Actor, acme[:1], replay.SubmitInput{Reason: "one first"})

	t.Run("Success", func(t *testing.T) {
		resp := b.Do(t, c, "POST", "/replay/filter?type=search.index_update&status=unresolved", nil, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		d := b.Do(t, c, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
		summary := strings.Join(strings.Fields(d.Find(`[data-testid="replay-summary"]`).Text()), " ")
		assert.Contains(t, summary, "2 to replay", "the two acme dead letters no request holds")
		assert.NotContains(t, summary, "blocked")
		assert.Equal(t, 1, d.Find(`[data-testid="replay-submit"]`).Length())
	})
	t.Run("NothingCanGo", func(t *testing.T) {
		resp := b.Do(t, c, "POST", "/replay/filter?type=search.index_update&status=replay_requested", nil, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/deadletters"), resp.Header.Get("Location"))
		list := b.Do(t, c, "GET", resp.Header.Get("Location"), nil, nil).Doc(t)
		assert.Contains(t, textOf(list, `[data-testid="flash"]`), "nothing to replay")
	})
}
