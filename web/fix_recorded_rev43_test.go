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

// TestRev43FixRecordedSaysItsSecondAndScope: the flash after a fix said
// "Fix recorded: email.send fixed at 2026-12-07 22:06 UTC": cut to the
// minute, where the form, the fix list and the coverage are to the second
// (TestRev41FixRecordedAtTheFormsDefaultCoversItsDeadLetter), and a fix of
// one error group read as a fix of the whole item type. It now says the
// second, and what the fix is for.
func TestRev43FixRecordedSaysItsSecondAndScope(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "email.send", "rev43-fix", nil)
	var fingerprint string
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT fingerprint FROM dead_letters WHERE id = $1`, id).Scan(&fingerprint))
	require.NotEmpty(t, fingerprint)
	path := fmt.Sprintf("/deadletters/%d", id)

	flash := func(scope, ref string) string {
		t.Helper()
		resp := b.Do(t, oncall, http.MethodPost, path+"/fix", url.Values{"scope": {scope}, "fixed_at": {"2026-12-01T22:06:59"}, "ref": {ref}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
		return textOf(b.Do(t, oncall, http.MethodGet, path, nil, nil).Doc(t), `[data-testid="flash"]`)
	}
	assert.Contains(t, flash("item_type", "v1.4.2"), "Fix recorded for email.send in acme (every error group): in place since 2026-12-01 22:06:59 UTC (v1.4.2).")
	assert.Contains(t, flash("group", "v1.4.3"),
		"Fix recorded for error group "+fingerprint+" of email.send in acme only: in place since 2026-12-01 22:06:59 UTC (v1.4.3).")
}
