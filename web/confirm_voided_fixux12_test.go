package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixUx12SecondTabVoidsTheDraft: the second tab's submit of a
// selection the first tab requested voids its draft, and its summary's
// title says "you already requested this in request N", linked to N; the
// draft is void (a reload lands on it, not on a form).
func TestFixUx12SecondTabVoidsTheDraft(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "fixux12-two-tabs"})
	var tabs []string
	for range 2 {
		resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {strconv.FormatInt(id, 10)}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		tabs = append(tabs, strings.SplitN(resp.Header.Get("Location"), "?", 2)[0])
	}
	first := b.Do(t, oncall, "POST", tabs[0], url.Values{"reason": {"shard 4 back"}}, nil)
	require.Equal(t, http.StatusSeeOther, first.Status, first.Body)
	held := strings.TrimPrefix(first.Header.Get("Location"), "/replay/requests/")

	second := b.Do(t, oncall, "POST", tabs[1], url.Values{"reason": {"shard 4 back"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, second.Status, second.Body)
	d := second.Doc(t)
	title := d.Find(`[data-testid="replay-voided-title"]`)
	assert.Equal(t, "Nothing was requested: you already requested this in request "+held+".", strings.Join(strings.Fields(title.Text()), " "))
	assert.Equal(t, "/replay/requests/"+held, title.Find("a").AttrOr("href", ""))
	assert.Zero(t, d.Find(`[data-testid="replay-submit"]`).Length())

	var status string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT r.status FROM replay_requests r JOIN replay_items i ON i.request_id = r.id
        WHERE i.dead_letter_id = $1 AND r.id <> $2`, id, held).Scan(&status))
	assert.Equal(t, "void", status, "the second tab's draft")
	reload := b.Do(t, oncall, "GET", tabs[1], nil, nil)
	assert.Equal(t, http.StatusSeeOther, reload.Status, fmt.Sprint("a reload lands on the void request: ", reload.Body))
}
