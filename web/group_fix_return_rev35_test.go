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

// TestRev35GroupFixComesBackToTheGroupsPage: "Record a fix" on the groups
// page came back to a bare /groups: the on-call's filter, sort and page
// were lost after every fix, as group actions' were before
// TestRev34GroupActionsComeBackToTheGroupsPage. The form now names the
// groups page it is on; a return_to that is not the groups page is not
// taken (the fix goes back to the dead letter).
func TestRev35GroupFixComesBackToTheGroupsPage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	// schema_invalid: the groups page offers a fix where one helps (TestRev43GroupsOfferAFixOnlyWhereItHelps).
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "rev35-fix", Class: "schema_invalid",
		Error: "boom", Payload: []byte(`{"x":1}`)})
	const page = "/groups?sort=count&state=unresolved"

	d := b.Do(t, oncall, http.MethodGet, page, nil, nil).Doc(t)
	action := fmt.Sprintf("/deadletters/%d/fix", id)
	form := d.Find(fmt.Sprintf(`form[action=%q]`, action))
	require.Equal(t, 1, form.Length(), "the groups page offers a fix of the group")
	assert.Equal(t, page, form.Find(`input[name="return_to"]`).AttrOr("value", ""), "the form names the page it is on")

	fix := func(returnTo, ref string) testfactory.Response {
		return b.Do(t, oncall, http.MethodPost, action, url.Values{"return_to": {returnTo}, "scope": {"item_type"},
			"fixed_at": {"2026-12-01T08:00"}, "ref": {ref}}, nil)
	}
	refused := fix(page, "")
	require.Equal(t, http.StatusUnprocessableEntity, refused.Status, refused.Body)
	assert.Equal(t, page, refused.Doc(t).Find(`details[data-testid="fix-form"] input[name="return_to"]`).AttrOr("value", ""),
		"the refused form still names the groups page")

	done := fix(page, "v1.4.2")
	require.Equal(t, http.StatusSeeOther, done.Status, done.Body)
	assert.Equal(t, page, done.Header.Get("Location"), "the fix ends on the groups page it was recorded from")

	elsewhere := fix("/audit/export.csv", "v1.4.3")
	require.Equal(t, http.StatusSeeOther, elsewhere.Status, elsewhere.Body)
	assert.Equal(t, fmt.Sprintf("/deadletters/%d", id), elsewhere.Header.Get("Location"), "a return_to that is not the groups page is not taken")
}
