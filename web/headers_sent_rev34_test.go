package web_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev34DeadLetterPageMarksTheHeadersAReplayLeavesOut: the approve
// page's intent binds the headers a replay sends, and the pages pointed
// the approver to the dead letter's page for them, which listed every
// header received: which of them a replay drops (Nats-*, Dlq-*, an
// earlier hop's) and which it adds, nobody could tell. Each header a
// replay leaves out is marked "not replayed", and the page names the
// headers a replay sets of its own.
func TestRev34DeadLetterPageMarksTheHeadersAReplayLeavesOut(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "r34-headers",
		Headers: map[string][]string{"X-Trace": {"t-1"}, "Nats-Expected-Stream": {"ORDERS"}, "Upstream-Dlq-Principal": {"svc-a"}}})
	resp := b.Do(t, oncall, http.MethodGet, "/deadletters/"+strconv.FormatInt(id, 10), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status, resp.Body)
	d := resp.Doc(t)
	marked := map[string]bool{}
	d.Find(`[data-testid="dl-header"]`).Each(func(_ int, row *goquery.Selection) {
		name := strings.TrimSpace(row.Find(".headers__name").Text())
		marked[name] = row.Find(`[data-testid="dl-header-not-sent"]`).Length() == 1
	})
	require.Contains(t, marked, "X-Trace", "%v", marked)
	assert.False(t, marked["X-Trace"], "the application's header is sent")
	assert.True(t, marked["Nats-Expected-Stream"], "a Nats-* header is not")
	assert.True(t, marked["Upstream-Dlq-Principal"], "an earlier hop's is not")
	for name, notSent := range marked {
		if strings.HasPrefix(strings.ToLower(name), "dlq-") {
			assert.True(t, notSent, "%s: the console's own Dlq-* headers are not sent", name)
		}
	}
	note := textOf(d, `[data-testid="dl-headers-replay"]`)
	for _, own := range []string{"Nats-Msg-Id", "Dlq-Operation-Id", "Dlq-Replay-Of", "Dlq-Replay-Request"} {
		assert.Contains(t, note, own, "the page names the headers a replay sets")
	}
}
