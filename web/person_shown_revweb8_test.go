package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevWeb8RequestPageNamesPeopleWithoutEmail: the email claim is
// optional in OIDC (a service identity, a provider asked without the
// email scope); quarantine.Actor.Display falls back to the name, else the
// subject, and the replays list and the approvals page use it. The
// request page — where an approver reviews the intent — and the dead
// letter's replay panel use personLabel(email) instead, which is "" for
// such a person: "Requested by" is blank, and the approvals list shows an
// empty line per approval. The approver cannot see who asked (separation
// of duties is judged by the person looking too), and nobody can see who
// approved.
//
// Severity: medium. Expected: the request page and the dead letter's
// replay panel name requester and approvers as Display does (name, email,
// else subject), never blank.
func TestRevWeb8RequestPageNamesPeopleWithoutEmail(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignInAs(t, testidp.Person{ID: "svc-deployer-7"}, "acme:oncall")
	approver, approverUser := b.SignInAs(t, testidp.Person{ID: "approver-no-mail-3"}, "acme:approver")
	require.Empty(t, requester.Email)
	require.Empty(t, approverUser.Email)

	id := seed(t, b, "acme", "email.send", "rw8-nomail", opHeader("op-rw8-nomail"))
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusPendingApproval, req.Status)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	// The approvals page names the requester (Display).
	list := b.Do(t, approver, "GET", "/approvals", nil, nil)
	require.Equal(t, http.StatusOK, list.Status)
	require.Contains(t, list.Body, requester.Subject, "the approvals page names the requester by subject")

	page := b.Do(t, approver, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	assert.Equal(t, requester.Subject, kvValue(page.Doc(t), "Requested by"),
		"the request page, where the approver reviews the intent, names no requester")

	resp := b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	viewer, _ := b.SignIn(t, "acme:viewer")
	shown := b.Do(t, viewer, "GET", path, nil, nil).Doc(t)
	var approvers []string
	shown.Find(`[data-testid="replay-approvals"] li`).Each(func(_ int, li *goquery.Selection) {
		approvers = append(approvers, strings.TrimSpace(li.Text()))
	})
	require.Len(t, approvers, 1)
	assert.Contains(t, approvers[0], approverUser.Subject, "the approval is listed without its approver")

	dl := b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, http.StatusOK, dl.Status)
	assert.Contains(t, dl.Doc(t).Find(`[data-testid="deadletter-replay"]`).First().Text(), requester.Subject,
		"the dead letter's replay panel names no requester")
}

// kvValue is the value beside key in the page's key-value lists.
func kvValue(d *goquery.Document, key string) string {
	var out string
	d.Find("dl.kv dt").Each(func(_ int, dt *goquery.Selection) {
		if strings.TrimSpace(dt.Text()) == key {
			out = strings.TrimSpace(dt.Next().Text())
		}
	})
	return out
}
