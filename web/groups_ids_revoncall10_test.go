package web_test

import (
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevOncall10GroupsPageIdsAreUnique: the groups page renders one
// "Record a fix" form per group it may fix, and every one of them carries
// the same <p id="f-scope-error"> (FixMarkerForm's scope message slot).
// Duplicate ids make the page invalid HTML; getElementById (app.js's
// required-field messages, aria-describedby) finds only the first group's
// slot, so a message meant for one group's form would show under
// another's. The screens server's groups page has it seven times
// (/tmp/rc10/groups-1024.png).
//
// Severity: low. Expected: every id on the page is unique (the slot named
// per form, as its fields are: fix-<id>-…).
func TestRevOncall10GroupsPageIdsAreUnique(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	// schema_invalid: the groups page offers a fix where one helps (TestRev43GroupsOfferAFixOnlyWhereItHelps).
	testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "rvo10-ids-1", Class: "schema_invalid", Error: "smtp 451 try again later"},
		testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "rvo10-ids-2", Class: "schema_invalid", Error: "refund failed: upstream 503"})

	d := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
	require.Equal(t, 2, d.Find(`[data-testid="group-row"] [data-testid="fix-form"]`).Length(), "two groups, each with its fix form")
	seen := map[string]int{}
	d.Find(`[id]`).Each(func(_ int, s *goquery.Selection) { seen[s.AttrOr("id", "")]++ })
	for id, n := range seen {
		assert.Equal(t, 1, n, "id %q is on the groups page %d times", id, n)
	}
}
