package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOncall30ReplayLeftOutKeptWhenTheSubmitIsRefused: "Replay all
// matching" drafts acme's dead letters and says, on its confirm page, that
// globex's (where the on-call may only read) are left out. A submit the
// page refuses (no reason typed) rendered the page again without that
// notice: the on-call who fixed the reason and submitted never saw again
// what the batch leaves out. It stays on the page the refusal renders.
func TestRevOncall30ReplayLeftOutKeptWhenTheSubmitIsRefused(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:viewer")
	var letters []testfactory.Letter
	for i, tenant := range []string{"acme", "acme", "globex", "globex"} {
		letters = append(letters, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update", MsgID: fmt.Sprintf("rev30-left-%d", i),
			Error: "index shard rev30 unavailable"})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)
	var action string
	wait.Until(t, "all matching offered", 30*time.Second, func() bool {
		d := b.Do(t, oncall, "GET", "/deadletters?type=search.index_update", nil, nil).Doc(t)
		action = d.Find(`form[action^="/replay/filter"]`).AttrOr("action", "")
		return action != "" && d.Find(`[data-testid="deadletter-row"]`).Length() > 0
	})
	resp := b.Do(t, oncall, "POST", action, nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	leftOut := func(r testfactory.Response) string {
		return strings.Join(strings.Fields(r.Doc(t).Find(`[data-testid="confirm-left-out"]`).Text()), " ")
	}
	page := b.Do(t, oncall, "GET", confirm, nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	require.Contains(t, leftOut(page), "in globex", "the confirm page names globex's two")

	refused := b.Do(t, oncall, "POST", confirm, url.Values{"reason": {""}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, refused.Status, "%.300s", refused.Body)
	assert.Contains(t, leftOut(refused), "in globex", "the page a refused submit renders still says what the batch leaves out")
}
