package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestEmptyListActions: on a list with no rows the actions on ticked rows
// are disabled in the page itself (app.js only disables them where rows
// exist), and an empty list that no filter narrows says nothing has
// arrived instead of asking to widen a filter.
func TestEmptyListActions(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "m-1"})
	c, _ := b.SignIn(t, "acme:oncall", "initech:oncall")
	actions := []string{"bulk-replay", "bulk-discard", "bulk-resolve"}

	t.Run("EmptyDisabled", func(t *testing.T) {
		d := b.Do(t, c, "GET", "/deadletters?status=discarded", nil, nil).Doc(t)
		for _, a := range actions {
			s := byID(d, a)
			require.Equal(t, 1, s.Length(), a)
			_, disabled := s.Attr("disabled")
			assert.True(t, disabled, "%s is disabled on an empty list", a)
		}
		assert.Equal(t, "Mark resolved…", strings.TrimSpace(byID(d, "bulk-resolve").Text()), "the label the detail page uses")
		assert.Contains(t, byID(d, "empty-state").Text(), "No dead letters match", "a status narrows the list")
	})
	t.Run("RowsEnabled", func(t *testing.T) {
		d := b.Do(t, c, "GET", "/deadletters", nil, nil).Doc(t)
		for _, a := range actions {
			_, disabled := byID(d, a).Attr("disabled")
			assert.False(t, disabled, "%s waits for a tick (app.js), not disabled by the page", a)
		}
	})
	t.Run("NothingArrived", func(t *testing.T) {
		d := b.Do(t, c, "GET", "/deadletters?tenant=initech", nil, nil).Doc(t)
		assert.Contains(t, byID(d, "empty-state").Text(), "No dead letters have arrived for initech yet")
		assert.NotContains(t, byID(d, "empty-state").Text(), "Widen")
	})
}

// TestHeadersDownload: a dead letter with more headers than its page shows
// links a download of all of them, whole; in the caller's tenants only.
func TestHeadersDownload(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	hs := map[string][]string{}
	for i := range 600 {
		hs[fmt.Sprintf("X-Trace-%03d", i)] = []string{fmt.Sprintf("span-%d", i)}
	}
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "many", Headers: hs})
	few := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "few"})
	other := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "orders.refund", MsgID: "theirs", Headers: hs})
	c, _ := b.SignIn(t, "acme:viewer")

	d := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil).Doc(t)
	href, ok := byID(d, "dl-headers-download").Attr("href")
	require.True(t, ok, "the page links the headers it leaves out")
	assert.Equal(t, fmt.Sprintf("/deadletters/%d/headers.json", id), href)
	assert.Zero(t, byID(b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", few), nil, nil).Doc(t), "dl-headers-download").Length(),
		"no link when the page shows every header whole")

	resp := b.Do(t, c, "GET", href, nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	assert.Equal(t, "text/plain; charset=UTF-8", resp.Header.Get("Content-Type"))
	assert.Contains(t, resp.Header.Get("Content-Disposition"), "attachment")
	var got []struct{ Name, Value string }
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &got))
	names := map[string]string{}
	for _, h := range got {
		names[h.Name] = h.Value
	}
	for name, v := range hs {
		assert.Equal(t, v[0], names[name], name)
	}

	before := b.AuditCount(t, "action = 'authz.denied' AND object_id = $1", fmt.Sprint(other))
	assert.Equal(t, http.StatusNotFound, b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d/headers.json", other), nil, nil).Status,
		"another tenant's is not found")
	assert.Equal(t, before+1, b.AuditCount(t, "action = 'authz.denied' AND object_id = $1", fmt.Sprint(other)))
}

// TestForbiddenSaysWhichRight: a 403 page names the right that is missing,
// where, and who grants it, as the audit row of the refusal does.
func TestForbiddenSaysWhichRight(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignIn(t, "acme:oncall")
	mail := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "m-1", OperationID: "op-1"})
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{mail}, replay.SubmitInput{Reason: "relay fixed"})
	path := fmt.Sprintf("/replay/requests/%d/approve", req.ID)

	t.Run("Anywhere", func(t *testing.T) {
		c, _ := b.SignIn(t, "acme:oncall")
		resp := b.Do(t, c, "POST", path, url.Values{}, nil)
		require.Equal(t, http.StatusForbidden, resp.Status)
		text := resp.Doc(t).Find("main").Text()
		assert.Contains(t, text, "This needs the approve right on replays in any of your tenants")
		assert.Contains(t, text, "Role bindings page")
	})
	t.Run("InTenant", func(t *testing.T) {
		c, _ := b.SignIn(t, "acme:oncall", "globex:approver")
		resp := b.Do(t, c, "POST", path, url.Values{}, nil)
		require.Equal(t, http.StatusForbidden, resp.Status)
		text := resp.Doc(t).Find("main").Text()
		assert.Contains(t, text, "This needs the approve right on replays of class same_operation in acme")
		assert.NotContains(t, text, "globex")
	})
}

// TestDeadLetterTimesSayWhatTheyAre: the detail page names each time by
// what happened then and writes all of them alike.
func TestDeadLetterTimesSayWhatTheyAre(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "m-1"})
	c, _ := b.SignIn(t, "acme:viewer")
	resp := b.Do(t, c, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	d := resp.Doc(t)
	assert.Contains(t, d.Find(".page-sub").Text(), "dead-lettered")
	main := d.Find("main").Text()
	for _, label := range []string{"Stream message", "stored in the stream", "Stored by the console", "Last changed"} {
		assert.Contains(t, main, label)
	}
	assert.NotContains(t, main, "Delivered as")
	assert.NotRegexp(t, `\d{2}:\d{2}:\d{2}\.\d+Z`, byID(d, "dl-summary").Text(),
		"no raw RFC 3339 time with nanoseconds among the dead letter's own times (a header's value is shown as sent)")
}

// TestGroupListIsGroupsInTheNav: the dead letters of one error group are
// the group's page, and the navigation says so; the bindings page is named
// as its title names it.
func TestGroupListIsGroupsInTheNav(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "m-1"})
	var fp string
	require.NoError(t, b.Pool.QueryRow(t.Context(), "SELECT fingerprint FROM dead_letters LIMIT 1").Scan(&fp))
	c, _ := b.SignIn(t, "acme:oncall", "*:admin")
	d := b.Do(t, c, "GET", "/deadletters?group="+fp, nil, nil).Doc(t)
	_, current := byID(d, "nav-groups").Attr("aria-current")
	assert.True(t, current, "Groups is the current page")
	_, current = byID(d, "nav-deadletters").Attr("aria-current")
	assert.False(t, current)
	assert.Equal(t, "Role bindings", strings.TrimSpace(byID(d, "nav-admin").Text()))
}

// TestPolicyPageListsErrorClasses: the policy page shows the error-class
// rules that leave items out on the confirmation page, not only the
// classes of item types.
func TestPolicyPageListsErrorClasses(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	resp := b.Do(t, c, "GET", "/policy", nil, nil)
	require.Equal(t, http.StatusOK, resp.Status)
	rules := byID(resp.Doc(t), "policy-error-classes").Text()
	assert.Contains(t, rules, "schema_invalid")
	assert.Contains(t, rules, "Replays only with an edited payload, or after a fix", "a description reads as a sentence")
	assert.Contains(t, rules, "stale_version")
	assert.Contains(t, rules, "at least as revalidate")
}
