package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFixWeb14ReplaysPageRefusesAParameterItDoesNotKnow: the replays page
// refuses a parameter none of its own (a misspelt "stauts" would list
// every request as if it were the ones asked for): 422 naming it, nothing
// listed; each of its own is taken.
func TestFixWeb14ReplaysPageRefusesAParameterItDoesNotKnow(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	req := testfactory.Request(t, b.Replays, me.Actor, []int64{seed(t, b, "acme", "search.index_update", "doc-fw14", nil)}, replay.SubmitInput{})

	resp := b.Do(t, oncall, http.MethodGet, "/replay/requests?stauts=rejected", nil, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
	d := resp.Doc(t)
	assert.Contains(t, byID(d, "field-error-filter").Text(), `The replays page has no filter "stauts"`)
	assert.Zero(t, row(d, req.ID).Length(), "nothing listed")

	all := "/replay/requests?status=&tenant=acme&class=&mine=1&requester=&from=now-24h&to=&reconcile=&order=newest&before=" +
		"&requester_issuer=&requester_subject="
	ok := b.Do(t, oncall, http.MethodGet, all, nil, nil)
	require.Equal(t, http.StatusOK, ok.Status, ok.Body)
	assert.Equal(t, 1, row(ok.Doc(t), req.ID).Length())
}
