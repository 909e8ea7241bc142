package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevWeb20LeftOutTenantShowsHiddenCharacters: a producer that may
// publish to the DLQ stream names the tenant "acme\u200b" (a zero-width
// space after acme: the subject's tenant token, kept as it came) and files
// two dead letters of a poison item type there, beside acme's own two. An
// on-call of acme who may read every tenant filters by the type and uses
// "Discard all matching…" and "Replay all matching…". Both confirmations
// (this round's left-out block, views.leftOutWhy) write the tenant raw:
// "2 dead letters in acme​, where you may not discard." reads as acme's
// own two being left out, while every other page writes that tenant
// "acme<U+200B>" (views.Untrusted) so that a person can tell it from acme.
//
// Expected: the tenant of a left-out group is written as every value from
// a message is (Untrusted: the marker, isolated), never as raw text.
func TestRevWeb20LeftOutTenantShowsHiddenCharacters(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall", "*:viewer")
	var letters []testfactory.Letter
	for i, tenant := range []string{"acme", "acme", hiddenTenant, hiddenTenant} {
		letters = append(letters, testfactory.Letter{Tenant: tenant, ItemType: "search.index_update", MsgID: fmt.Sprintf("rev20h-lo-%d", i),
			Error: "index shard 20h unavailable"})
	}
	testfactory.DeadLetters(t, b.Pool, letters...)
	var list testfactory.Response
	wait.Until(t, "the 4 on the list", 30*time.Second, func() bool {
		list = b.Do(t, oncall, "GET", "/deadletters?type=search.index_update", nil, nil)
		return list.Doc(t).Find(`[data-testid="deadletter-row"]`).Length() == 4
	})
	d := list.Doc(t)

	for _, tc := range []struct{ name, form string }{
		{"Discard", `form[action^="/deadletters/discard/filter"]`},
		{"Replay", `form[action^="/replay/filter"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			action, ok := d.Find(tc.form).Attr("action")
			require.True(t, ok, "all matching is offered")
			resp := b.Do(t, oncall, "POST", action, nil, nil)
			for resp.Status == http.StatusSeeOther {
				resp = b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil)
			}
			require.Equal(t, http.StatusOK, resp.Status, resp.Body)
			group := resp.Doc(t).Find(`[data-testid="left-out-group"]`)
			require.Equal(t, 1, group.Length(), "the 2 in acme\\u200b are named as left out")
			text := strings.Join(strings.Fields(group.Text()), " ")
			assert.Contains(t, text, "in acme<U+200B>,",
				"the left-out block writes the producer's tenant raw, so it reads as acme: %q", text)
		})
	}
}

// TestRevWeb20GroupFormLeadShowsHiddenCharacters: an error group of the
// tenant "acme\u200b" (a producer's subject token). A triage form sent with
// a mistake (a note over the bound, a snooze that is no choice, an owner
// too long) comes back on a page of its own (renderGroupForm, 422) whose
// lead says which group it is about: "Error group <fp> in acme​." with the
// tenant raw, so the person correcting the form believes they are
// triaging acme's group, where every other page writes "acme<U+200B>".
func TestRevWeb20GroupFormLeadShowsHiddenCharacters(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "*:oncall")
	testfactory.DeadLetters(t, b.Pool, testfactory.Letter{Tenant: hiddenTenant, ItemType: "search.index_update", MsgID: "rev20h-lead-1",
		Error: "index shard 20h-lead unavailable"})
	var fp string
	wait.Until(t, "the group on the groups page", 30*time.Second, func() bool {
		fp = getPage(t, b, oncall, "/groups").Find(`[data-testid="group-row"]`).AttrOr("data-fingerprint", "")
		return fp != ""
	})
	resp := b.Do(t, oncall, "POST", "/groups/note", url.Values{"tenant": {hiddenTenant}, "group": {fp}, "note": {strings.Repeat("n", 5000)}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	lead := strings.TrimSpace(resp.Doc(t).Find(`main p.page-sub`).First().Text())
	assert.Contains(t, lead, "in acme<U+200B>.",
		"the triage form's page writes the producer's tenant raw, so it reads as acme: %q", lead)
}

// TestRevWeb20HeldLeftOutTenantShowsHiddenCharacters: the other half of
// the left-out block. A dead letter of tenant "acme\u200b" held by a replay
// request waiting for approval is selected for a discard; the confirmation
// says what frees it (LeftOutGroup.FreedBy, from
// replaypolicy.HeldFreedBy): "an approver of acme​ rejects it, ..." with
// the tenant raw, written by the view as plain text ({ g.FreedBy }).
func TestRevWeb20HeldLeftOutTenantShowsHiddenCharacters(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "*:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: hiddenTenant, ItemType: "email.send", MsgID: "rev20h-held-1",
		OperationID: "op-rev20h-held-1", Error: "smtp 20h-held unavailable"})
	req := testfactory.Request(t, b.Replays, me.Actor, []int64{id}, replay.SubmitInput{})
	require.Equal(t, "pending_approval", string(req.Status), "the request holds the dead letter while it waits")

	resp := b.Do(t, oncall, "POST", "/deadletters/discard", url.Values{"id": {fmt.Sprint(id)}}, nil)
	require.Contains(t, []int{http.StatusOK, http.StatusConflict}, resp.Status, resp.Body)
	group := resp.Doc(t).Find(`[data-testid="left-out-group"]`)
	require.Equal(t, 1, group.Length(), "the held dead letter is named as left out")
	text := strings.Join(strings.Fields(group.Text()), " ")
	require.Contains(t, text, "rejects it", "the group says what frees it")
	assert.Contains(t, text, "approver of acme<U+200B>",
		"what frees it names the producer's tenant raw, so it reads as acme: %q", text)
}
