package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevTriage32RefusedGroupNamesNoFreeText: a triage form naming a
// tenant where the person holds no role is refused (404) and audited in
// that tenant's log; the refusal named the form's group as posted, so
// anyone with triage somewhere wrote up to 4 KiB of their own text into
// any other tenant's audit log, as often as they liked. A group that is no
// fingerprint is named "a malformed error group" now; a fingerprint is
// still named.
func TestRevTriage32RefusedGroupNamesNoFreeText(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	page := map[string]string{"Accept": "text/html", "Sec-Fetch-Site": "same-origin"}
	oncall, _ := b.SignIn(t, "acme:oncall")
	reasons := func() []string {
		rows, err := b.Pool.Query(context.Background(),
			"SELECT reason FROM audit_log WHERE tenant = 'globex' AND action = 'authz.denied' ORDER BY seq")
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var r string
			require.NoError(t, rows.Scan(&r))
			out = append(out, r)
		}
		require.NoError(t, rows.Err())
		return out
	}

	spam := "Call +1-555-0100 to restore your account " + strings.Repeat("x", 3000)
	for i, group := range []string{spam, "0123456789abcdef"} {
		resp := b.Do(t, oncall, http.MethodPost, "/groups/triage",
			url.Values{"tenant": {"globex"}, "group": {group}, "for": {"1h"}}, page)
		require.Equal(t, http.StatusNotFound, resp.Status, "group %d", i)
	}
	got := reasons()
	require.Len(t, got, 2, "each probe of globex is audited there")
	assert.NotContains(t, got[0], "555-0100", "the posted text is not written into globex's log")
	assert.Contains(t, got[0], "a malformed error group in tenant globex")
	assert.Contains(t, got[1], "error group 0123456789abcdef in tenant globex", "a fingerprint is named")
}
