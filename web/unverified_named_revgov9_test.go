package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevGov9StopAndReconcileNameAnUnverifiedEmailAsVerified: the
// emergency stop and the reconciliation write who acted into the texts the
// request page shows (replay.Service.stop: before, "emergency stop by <email>";
// each item "stopped by <email>"; Reconcile: "applied, as <email> found:
// ...") from Actor.Email, whether or not the provider verified it. Anyone
// may claim any address at a provider that does not verify, so an approver
// whose account claims a colleague's address stops or settles a replay,
// and the request page says the colleague did, unmarked: the
// "(unverified)" mark Actor.Display gives everywhere else (the "Stopped by"
// line itself) and group triage's who() (verified email, else the subject)
// are walked around.
func TestRevGov9StopAndReconcileNameAnUnverifiedEmailAsVerified(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	const dana = "dana@example.com"
	_, oncall := b.SignIn(t, "acme:oncall")
	mallory, _ := b.SignInAs(t, testidp.Person{ID: "mallory", Email: dana, EmailVerified: false}, "acme:approver")
	reader, _ := b.SignIn(t, "acme:approver")

	// unmarked is the page's text with every marked mention of the claimed
	// address taken out: what is left names it as if it were verified.
	unmarked := func(path string) string {
		t.Helper()
		page := b.Do(t, reader, "GET", path, nil, nil)
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		text := strings.Join(strings.Fields(page.Doc(t).Find("main").Text()), " ")
		return strings.ReplaceAll(text, dana+" (unverified)", "")
	}

	t.Run("Stop", func(t *testing.T) {
		req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "search.index_update", "stop-unverified", nil)}, replay.SubmitInput{})
		require.Equal(t, replay.StatusApproved, req.Status)
		path := fmt.Sprintf("/replay/requests/%d", req.ID)
		resp := b.Do(t, mallory, "POST", path+"/stop", url.Values{"reason": {"wrong index"}, "confirm": {"STOP"}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		assert.NotContains(t, unmarked(path), dana, "the stopped request's page names the unverified claimant as %s, unmarked", dana)
	})

	t.Run("Reconcile", func(t *testing.T) {
		id := seed(t, b, "acme", "search.index_update", "reconcile-unverified", nil)
		req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "reindex"})
		testfactory.NeedsPerson(t, b.Pool, req.ID)
		path := fmt.Sprintf("/replay/requests/%d", req.ID)
		resp := b.Do(t, mallory, "POST", fmt.Sprintf("%s/items/%d/reconcile", path, id), url.Values{"choice": {"applied"}, "note": {"the index holds it"}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		assert.NotContains(t, unmarked(path), dana, "the settled item names the unverified claimant as %s, unmarked", dana)
	})
}
