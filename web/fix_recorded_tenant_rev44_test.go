package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev44FixRecordedNamesItsTenant: an on-call of two tenants recorded a
// fix from a dead letter of the second, and the flash said "Fix recorded
// for orders.refund (every error group)…", which reads as a fix of the
// item type wherever they work; a fix holds in the dead letter's tenant
// alone. The flash names that tenant.
func TestRev44FixRecordedNamesItsTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "globex:oncall")
	seed(t, b, "acme", "orders.refund", "rev44-fix-acme", nil)
	id := seed(t, b, "globex", "orders.refund", "rev44-fix-globex", nil)
	path := fmt.Sprintf("/deadletters/%d", id)

	resp := b.Do(t, oncall, http.MethodPost, path+"/fix", url.Values{"scope": {"item_type"}, "fixed_at": {"2026-12-01T22:06:59"}, "ref": {"v2.0.1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	flash := textOf(b.Do(t, oncall, http.MethodGet, path, nil, nil).Doc(t), `[data-testid="flash"]`)
	assert.Contains(t, flash, "Fix recorded for orders.refund in globex (every error group): in place since 2026-12-01 22:06:59 UTC (v2.0.1).")
	assert.NotContains(t, flash, "acme")
}
