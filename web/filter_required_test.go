package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestFiltersMarkNothingRequired: no filter form marks a field required
// or makes one so. The error groups' Show and Sort by carried the "*" of
// a field a form cannot be sent without, though every choice of theirs is
// a filter's.
func TestFiltersMarkNothingRequired(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	testfactory.DeadLetters(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", Error: "refund failed"})
	oncall, _ := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	for _, tc := range []struct {
		path   string
		client *http.Client
	}{{"/groups", oncall}, {"/deadletters", oncall}, {"/replay/requests", oncall}, {"/audit", auditor}} {
		resp := b.Do(t, tc.client, "GET", tc.path, nil, nil)
		require.Equal(t, http.StatusOK, resp.Status, tc.path)
		forms := resp.Doc(t).Find(`form[role="search"]`)
		require.Equal(t, 1, forms.Length(), "%s has one filter form", tc.path)
		assert.Zero(t, forms.Find(".req").Length(), "%s: a filter marked required", tc.path)
		assert.Zero(t, forms.Find("[required]").Length(), "%s: a filter made required", tc.path)
	}
}
