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

// TestStopPageChoosesNoTenantByDefault: the emergency stop page's tenant
// select starts on "Choose a tenant…", no tenant chosen; a stop sent
// without one is refused with a message at the tenant field (422), the
// reason kept, and stops nothing.
func TestStopPageChoosesNoTenantByDefault(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver", "globex:approver")
	runs := testfactory.Request(t, b.Replays, oncall.Actor, []int64{seed(t, b, "acme", "search.index_update", "doc-1", nil)}, replay.SubmitInput{})

	page := b.Do(t, approver, "GET", "/replay/stop", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	first := page.Doc(t).Find(`select[name="tenant"] option`).First()
	assert.Equal(t, "", first.AttrOr("value", "-"), "the first option chooses no tenant")
	assert.Equal(t, 1, page.Doc(t).Find(`select[name="tenant"] option[selected]`).Length(), "one option is selected")
	_, selected := first.Attr("selected")
	assert.True(t, selected, "no tenant is chosen by default")

	t.Run("NoTenant", func(t *testing.T) {
		resp := b.Do(t, approver, "POST", "/replay/stop", url.Values{"tenant": {""}, "reason": {"shard 4 flapping"}, "confirm": {"STOP"}}, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
		d := resp.Doc(t)
		assert.Contains(t, textOf(d, `[data-testid="field-error-tenant"]`), "Choose the tenant")
		assert.Equal(t, "shard 4 flapping", d.Find(`input[name="reason"]`).AttrOr("value", ""), "the reason is kept")
		r, err := b.Replays.Request(t.Context(), runs.ID)
		require.NoError(t, err)
		assert.Equal(t, runs.Status, r.Status, "nothing is stopped")
	})
	t.Run("TypedWrong", func(t *testing.T) {
		resp := b.Do(t, approver, "POST", "/replay/stop", url.Values{"tenant": {"globex"}, "reason": {"shard 4 flapping"}, "confirm": {"stop"}}, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
		sel := resp.Doc(t).Find(`select[name="tenant"] option[selected]`)
		require.Equal(t, 1, sel.Length(), "one option is selected")
		assert.Equal(t, "globex", sel.AttrOr("value", ""), "the tenant chosen is kept")
	})
}
