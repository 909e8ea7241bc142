package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestStopRefusesATenantNoSelectOffers: an emergency stop posted with a
// tenant the page's select never offers (the wildcard "*", or a name no
// tenant has) by someone who may stop replays in every tenant is refused
// at the tenant field (422), the reason kept, and stops nothing: it does
// not report "Emergency stop in *: 0 requests stopped" in green.
func TestStopRefusesATenantNoSelectOffers(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	admin, who := b.SignIn(t, "*:admin")
	runs := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "search.index_update", "stop-wild-1", nil)}, replay.SubmitInput{})

	for _, tenant := range []string{"*", "no-such-tenant"} {
		t.Run(tenant, func(t *testing.T) {
			resp := b.Do(t, admin, http.MethodPost, "/replay/stop", url.Values{"tenant": {tenant}, "reason": {"shard 4 flapping"}, "confirm": {"STOP"}}, nil)
			require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
			d := resp.Doc(t)
			assert.NotEmpty(t, textOf(d, `[data-testid="field-error-tenant"]`), "the tenant field says why")
			assert.Equal(t, "shard 4 flapping", d.Find(`input[name="reason"]`).AttrOr("value", ""), "the reason is kept")
			assert.NotContains(t, resp.Body, "requests stopped")
		})
	}
	r, err := b.Replays.Request(t.Context(), runs.ID)
	require.NoError(t, err)
	assert.Equal(t, runs.Status, r.Status, "nothing is stopped")
	assert.Zero(t, b.AuditCount(t, `action LIKE 'replay.stop%' AND actor_subject = $1`, who.Subject), "no stop is recorded")
}
