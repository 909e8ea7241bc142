package web_test

import (
	"fmt"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRev43GroupsOfferAFixOnlyWhereItHelps: the groups page offered
// "Record a fix of <item type>" on every group, terminated and
// max_deliveries ones too, whose dead letters a fix lets go no sooner: only
// an error class the policy replays after a fix (schema_invalid,
// permanent) is offered one. The dead letter's own page still has it.
func TestRev43GroupsOfferAFixOnlyWhereItHelps(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	ids := testfactory.DeadLetters(t, b.Pool,
		testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "rev43-fix-schema", Class: "schema_invalid", Error: "decode: unknown field"},
		testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "rev43-fix-term", Class: "terminated", Error: "consumer terminated it"},
		testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "rev43-fix-max", Class: "max_deliveries", Error: "delivered 5 times"})

	d := b.Do(t, oncall, "GET", "/groups", nil, nil).Doc(t)
	require.Equal(t, 3, d.Find(`[data-testid="group-row"]`).Length(), "three groups, one per class")
	var forms []string
	d.Find(`[data-testid="group-row"] [data-testid="fix-form"] form`).Each(func(_ int, f *goquery.Selection) {
		forms = append(forms, f.AttrOr("action", ""))
	})
	assert.Equal(t, []string{fmt.Sprintf("/deadletters/%d/fix", ids[0])}, forms, "only the schema_invalid group is offered a fix")
	assert.Equal(t, 1, b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", ids[1]), nil, nil).Doc(t).Find(`[data-testid="fix-form"]`).Length(),
		"a terminated dead letter's page still has the form")
}
