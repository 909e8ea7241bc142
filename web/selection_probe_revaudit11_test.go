package web_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevAudit11CrossTenantSelectionProbeNamesEveryID: an on-call of acme,
// who may see nothing of globex, posts a discard naming 300 of globex's
// dead letters (and one of acme's). The route's locator audits the
// refusal as denied under globex (web/locate.go, selectionEvents), so that
// globex's auditors see what was tried on their dead letters. That row
// names the ids only in its object_id, joined with commas, and the audit
// log cuts object_id at 512 bytes (audit/bound.go): past the first 70 or
// so ids, globex's auditors cannot tell which of their dead letters were
// probed, nor how many. dlq.RefusedIDs.Events, the same kind of row for a
// refusal inside the scope, lists up to 1,000 ids and the count in its
// after JSON.
func TestRevAudit11CrossTenantSelectionProbeNamesEveryID(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	client, me := b.SignIn(t, "acme:oncall")
	letters := make([]testfactory.Letter, 300)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: fmt.Sprintf("probe-%d", i)}
	}
	globex := testfactory.DeadLetters(t, b.Pool, letters...)
	acme := seed(t, b, "acme", "search.index_update", "probe-acme", nil)

	form := url.Values{"reason": {"dup"}, "confirmed": {"1"}}
	form.Add("id", fmt.Sprint(acme))
	for _, id := range globex {
		form.Add("id", fmt.Sprint(id))
	}
	resp := b.Do(t, client, "POST", "/deadletters/discard", form, nil)
	require.Less(t, resp.Status, 500, resp.Body)

	// What globex's auditors can read of the attempt: its rows in globex.
	rows, err := b.Pool.Query(ctx, `SELECT object_id || ' ' || coalesce(after::text, '') || ' ' || reason FROM audit_log
        WHERE tenant = 'globex' AND outcome = 'denied' AND actor_subject = $1`, me.Subject)
	require.NoError(t, err)
	named := map[string]bool{}
	var texts []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		texts = append(texts, s)
		for _, n := range regexp.MustCompile(`\d+`).FindAllString(s, -1) {
			named[n] = true
		}
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, texts, "the refusal is audited under globex")

	var unnamed []int64
	for _, id := range globex {
		if !named[fmt.Sprint(id)] {
			unnamed = append(unnamed, id)
		}
	}
	assert.Empty(t, unnamed, "every globex dead letter the selection named is in globex's audit rows; %d are not (rows: %q)", len(unnamed), texts)
}
