package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestDeadLetterTrailKeepsHistoryUnderProbes: a person of another tenant
// who probes a dead letter's page writes a refusal under it each time
// (authz.denied, in the dead letter's tenant). The dead letter's trail
// shows the newest audit.TrailDenied of them beside its history, however
// many there are; the audit log keeps them all.
func TestDeadLetterTrailKeepsHistoryUnderProbes(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	viewer, _ := b.SignIn(t, "acme:approver")
	outsider, _ := b.SignIn(t, "globex:oncall")
	id := seed(t, b, "acme", "search.index_update", "trail-probed", nil)
	testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{})
	require.Equal(t, http.StatusOK, b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d/payload", id), nil, nil).Status)

	const probes = audit.DefaultLimit + 10
	for range probes {
		require.Equal(t, http.StatusNotFound, b.Do(t, outsider, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil).Status)
	}
	require.Equal(t, probes, b.AuditCount(t, "action = 'authz.denied' AND object_type = 'dead_letter' AND object_id = $1", fmt.Sprint(id)))

	page := b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	var actions []string
	denied := 0
	page.Doc(t).Find(`[data-testid="dl-audit-row"]`).Each(func(_ int, tr *goquery.Selection) {
		text := strings.Join(strings.Fields(tr.Text()), " ")
		if strings.Contains(text, "authz.denied") {
			denied++
			return
		}
		actions = append(actions, text)
	})
	assert.Equal(t, audit.TrailDenied, denied, "the trail shows the newest refusals, and no more")
	joined := strings.Join(actions, "\n")
	for _, want := range []string{"replay.item.requested", "deadletter.download"} {
		assert.Contains(t, joined, want, "the dead letter's history is in its trail")
	}
}
