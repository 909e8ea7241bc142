package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestDashboardKeepsOldestRedAfter: the "Oldest red after" chosen on the
// dashboard is kept when the person comes back through the nav (no
// query); a value the form would refuse is not kept.
func TestDashboardKeepsOldestRedAfter(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	stale := func(path string) string {
		resp := b.Do(t, oncall, "GET", path, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, resp.Body)
		return resp.Doc(t).Find(`[data-testid="stale-select"] option[selected]`).AttrOr("value", "")
	}
	require.Equal(t, "1h", stale("/"))
	require.Equal(t, "4h", stale("/?stale=4h"))
	assert.Equal(t, "4h", stale("/"), "the dashboard forgets the threshold chosen")
	refused := b.Do(t, oncall, "GET", "/?stale=5h", nil, nil) // refused: 1h is shown, 4h stays chosen
	require.Equal(t, "1h", refused.Doc(t).Find(`[data-testid="stale-select"] option[selected]`).AttrOr("value", ""))
	assert.Equal(t, "4h", stale("/"), "a refused threshold replaced the one chosen")
	require.Equal(t, "15m", stale("/?span=7d&stale=15m"))
	assert.Equal(t, "15m", stale("/"))
}
