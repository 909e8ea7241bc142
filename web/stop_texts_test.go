package web_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestStopHintSaysWhatReconcileDoesUnderTheRaisedPolicy: a rebuildable
// request done with problems, its item waiting for a person, is offered
// the emergency stop (by what it recorded, a republish of it may come
// under some policy). Under the policy it ran under, the stop card and
// the stop page say a republish may publish it again, and the reconcile
// form offers one. Once a new version asks two approvers of rebuildable
// replays, Reconcile refuses to republish it: the stop is still offered,
// but neither text says it "may" be republished; they say what happens
// now (applied or not applied only) and that a later, lower policy could
// let one person republish it again, which a stop ends for good.
func TestStopHintSaysWhatReconcileDoesUnderTheRaisedPolicy(t *testing.T) {
	t.Parallel()
	shipped, err := os.ReadFile(testfactory.PolicyFile())
	require.NoError(t, err)
	b, file := startWithPolicy(t, shipped)
	ctx := t.Context()
	_, requester := b.SignIn(t, "acme:oncall")
	approver, who := b.SignIn(t, "acme:approver")
	dl := seed(t, b, "acme", "search.index_update", "stop-texts-raised", nil)
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{dl}, replay.SubmitInput{Reason: "reindex"})
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	stopRow := func() *goquery.Selection {
		page := b.Do(t, approver, "GET", "/replay/stop", nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		return page.Doc(t).Find(`[data-testid="stop-request"]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
			return s.Find("td").First().Text() == fmt.Sprintf("#%d", req.ID)
		})
	}
	text := func(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

	page := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	require.Equal(t, 1, page.Find(`[data-testid="stop-form"]`).Length())
	assert.Contains(t, text(page.Find(`[data-testid="stop-republish-hint"]`)), "settling an item that needs reconciliation may publish it again")
	assert.Equal(t, 1, page.Find(`[data-testid="reconcile-republish"]`).Length(), "and the form offers it")
	assert.Equal(t, "may still republish items that need reconciliation", text(stopRow().Find(`[data-testid="stop-request-republish"]`)))

	// A new version asks two approvers of rebuildable replays; the
	// console reads it (as at its next look at the active version).
	raised := strings.Replace(string(shipped), "[class.rebuildable]\napprovals = 0", "[class.rebuildable]\napprovals = 2", 1)
	require.NotEqual(t, string(shipped), raised)
	require.NoError(t, os.WriteFile(file, []byte(raised), 0o600))
	table, err := replaypolicy.Parse("raised.toml", []byte(raised))
	require.NoError(t, err)
	require.NoError(t, replay.New(b.DB.Pool, replay.Config{Policy: func() *replaypolicy.Table { return table }}).ActivatePolicy(ctx, "deploy-raised"))
	st, err := b.Replays.PolicyStanding(ctx)
	require.NoError(t, err)
	require.Equal(t, table.Version(), st.Table.Version(), "the console judges by the raised version")
	r, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	require.Equal(t, replaypolicy.CheckRepublishTwoApprovers, b.Replays.MayRepublish(r).Check, "Reconcile refuses to republish it now")

	page = b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	require.Equal(t, 1, page.Find(`[data-testid="stop-form"]`).Length(), "still offered: a later policy could let it be republished")
	assert.Zero(t, page.Find(`[data-testid="reconcile-republish"]`).Length())
	hint := text(page.Find(`[data-testid="stop-republish-hint"]`))
	assert.NotContains(t, hint, "may publish it again")
	assert.Contains(t, hint, "under the policy now its items that need reconciliation cannot be republished")
	assert.Contains(t, hint, "they can only be marked applied or not applied")
	assert.Contains(t, hint, "A later policy that asks fewer approvers would let one person republish them again; a stop ends that for good.")
	line := text(stopRow().Find(`[data-testid="stop-request-republish"]`))
	assert.NotContains(t, line, "may still republish")
	assert.Contains(t, line, "cannot be republished under the policy now")

	// What the card says is what Reconcile does.
	err = b.Replays.Reconcile(ctx, req.ID, dl, who.Actor, replay.ReconcileInput{Choice: replaypolicy.Republish, Note: "the index has no entry"},
		quarantine.RequestMeta{})
	require.Error(t, err)
	assert.Contains(t, quarantine.ErrorMessage(err), "two approvers")
}
