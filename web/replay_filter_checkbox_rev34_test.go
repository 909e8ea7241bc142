package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev34ReplaysPageRefusesACheckBoxValueItDoesNotTake: "Only mine" and
// "Items waiting for reconciliation" read only "1"; a scripted or
// hand-typed ?reconcile=true listed every request in the viewer's
// tenants as if they were the ones waiting for reconciliation (200, no
// word). Any other value is refused at its box (422, nothing listed), as
// every other filter of the page is.
func TestRev34ReplaysPageRefusesACheckBoxValueItDoesNotTake(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	req := testfactory.Request(t, b.Replays, me.Actor, []int64{seed(t, b, "acme", "search.index_update", "doc-r34", nil)}, replay.SubmitInput{})

	for _, name := range []string{"mine", "reconcile"} {
		for _, v := range []string{"true", "on", "0"} {
			resp := b.Do(t, oncall, http.MethodGet, "/replay/requests?"+name+"="+v, nil, nil)
			assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "?%s=%s", name, v)
			d := resp.Doc(t)
			assert.Contains(t, byID(d, "field-error-"+name).Text(), "tick the box, or leave it out", "?%s=%s", name, v)
			assert.Zero(t, row(d, req.ID).Length(), "?%s=%s lists nothing", name, v)
		}
	}
	mine := b.Do(t, oncall, http.MethodGet, "/replay/requests?mine=1", nil, nil)
	require.Equal(t, http.StatusOK, mine.Status, mine.Body)
	assert.Equal(t, 1, row(mine.Doc(t), req.ID).Length(), "the box's own value is taken")
	waiting := b.Do(t, oncall, http.MethodGet, "/replay/requests?reconcile=1", nil, nil)
	require.Equal(t, http.StatusOK, waiting.Status, waiting.Body)
	assert.Zero(t, row(waiting.Doc(t), req.ID).Length(), "a request with nothing to reconcile is not listed as waiting")
}
