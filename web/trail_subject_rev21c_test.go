package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestRevAudit21TrailShowsAnotherSubjectsMessageAsThisOne: round 20 made a
// message's identity its message id ON ITS SUBJECT (replaypolicy.Identity
// takes the subject): two dead letters with one message id on two subjects
// are two messages, and the ledger and the publish gate keep them apart. A
// dead letter's page still takes every entry of its tenant naming its
// message id (audit.Trail, messageTrail: message_id and tenant only) and
// shows each without saying which dead letter it is about. So the discard
// of the orders service's message shows on the billing service's dead
// letter, which nobody touched, as its own: the trail says it was discarded,
// by whom and why. Producers choose message ids (Dlq-Original-Msg-Id), and
// per-service counters ("1", "2", ...) or a hostile producer's copied id
// make them meet.
func TestRevAudit21TrailShowsAnotherSubjectsMessageAsThisOne(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	viewer, _ := b.SignIn(t, "acme:viewer")

	orders := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "evt-1001",
		Subject: "app.acme.orders.index"})
	billing := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "evt-1001",
		Subject: "app.acme.billing.index"})

	resp := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/discard", orders),
		url.Values{"reason": {"order cancelled upstream"}, views.ConfirmedField: {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	page := b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d", billing), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	doc := page.Doc(t)
	var shown []string
	for _, row := range trailActions(doc) {
		if strings.HasPrefix(row, "deadletter.discard") {
			shown = append(shown, row)
		}
	}
	names := doc.Find(`[data-testid="dl-audit"]`).Text()
	assert.False(t, len(shown) > 0 && !strings.Contains(names, fmt.Sprintf("#%d", orders)),
		"dead letter #%d (subject app.acme.billing.index), which nobody touched, shows the discard of dead letter #%d "+
			"(another message: subject app.acme.orders.index) as its own: %v", billing, orders, shown)
}
