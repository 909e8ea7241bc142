package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/quarantine-console/quarantine/testidp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// These tests are rev-ux's findings: what an on-call engineer, an approver
// or an auditor would call broken or misleading in the console's pages.

// TestRevUxConfirmKeepsTypedRate: an on-call lowers a replay's rate to spare
// a service that is just recovering, forgets the reason, and gets the
// confirm page back (422). The rate they typed must still be in the field:
// today it is reset to the class default, so the next submit (reason now
// filled in) publishes at 50 messages per second instead of the 5 they
// chose, without a word. The same when the rate itself is refused (above
// the class's maximum): the field must show what was typed, next to the
// message about it, not the default.
func TestRevUxConfirmKeepsTypedRate(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	mail := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))
	confirm := draftPage(t, b, oncall, mail)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	name, ok := d.Find(`input[name^="rate-"]`).Attr("name")
	require.True(t, ok, "the confirm page has a rate field")

	t.Run("ReasonMissing", func(t *testing.T) {
		resp := b.Do(t, oncall, "POST", confirm, url.Values{name: {"5"}, "reason": {""}}, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
		got := resp.Doc(t).Find(`input[name="`+name+`"]`).AttrOr("value", "")
		assert.Equal(t, "5", got, "the rate typed is lost when the form comes back for a missing reason")
	})
	t.Run("RateAboveMaximum", func(t *testing.T) {
		resp := b.Do(t, oncall, "POST", confirm, url.Values{name: {"9999"}, "reason": {"smtp relay back"}}, nil)
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
		rd := resp.Doc(t)
		assert.Equal(t, "9999", rd.Find(`input[name="`+name+`"]`).AttrOr("value", ""),
			"the refused rate is replaced by the default in its field")
		_, hidden := rd.Find(`#f-` + name + `-error`).Attr("hidden")
		assert.False(t, hidden, "the rate's own field shows no message about the refused rate")
		msg := textOf(rd, `#f-`+name+`-error`)
		assert.NotContains(t, msg, "same_operation", "the message names the class by its key")
		assert.Contains(t, msg, "9999", "the message names the rate refused")
	})
}

// voidManualRequest has an on-call request two manual dead letters
// (manual allows no bulk) with a reason: nothing can be replayed, the
// request is void. The console's submit refuses such a selection before
// anything changes (TestRevUxNothingToReplayIsNotASuccess); a void request
// still comes of a submit the rules void after its page was read, made
// here through the replay service. It returns the request's page, the
// console and the on-call's client.
func voidManualRequest(t *testing.T) (testfactory.Response, *testfactory.Console, *http.Client) {
	t.Helper()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, me := b.SignIn(t, "acme:oncall")
	r1 := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	r2 := seed(t, b, "acme", "orders.refund", "refund-2", nil)
	req := testfactory.Request(t, b.Replays, me.Actor, []int64{r1, r2}, replay.SubmitInput{Reason: "payments gateway back"})
	require.Equal(t, replay.StatusVoid, req.Status)
	page := b.Do(t, oncall, "GET", "/replay/requests/"+strconv.FormatInt(req.ID, 10), nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	return page, b, oncall
}

// TestRevUxNothingToReplayIsNotASuccess: an on-call selects two manual
// dead letters (manual allows no bulk), types a reason and presses
// "Request replay". Nothing can be replayed. It was greeted with a green
// "Replay requested: …" flash, the success colour (data-kind="ok"), over
// a void request that did not even keep the reason: a tired on-call reads
// green and "Replay requested" and walks away; nothing will ever be
// published. The submit is refused instead (422): nothing is requested or
// audited, the page says why in red and keeps the reason typed.
func TestRevUxNothingToReplayIsNotASuccess(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	r1 := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	r2 := seed(t, b, "acme", "orders.refund", "refund-2", nil)
	confirm := draftPage(t, b, oncall, r1, r2)
	resp := b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"payments gateway back"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "a selection with nothing to replay is submitted: %d", resp.Status)
	d := resp.Doc(t)
	flash := d.Find(`[data-testid="flash"]`)
	require.Equal(t, 1, flash.Length())
	assert.NotEqual(t, "ok", flash.AttrOr("data-kind", ""),
		"a request that replays nothing is announced as a success: %q", flash.Text())
	assert.False(t, strings.HasPrefix(strings.TrimSpace(flash.Text()), "Replay requested"),
		"the flash of a void request starts with \"Replay requested\": %q", flash.Text())
	assert.Contains(t, flash.Text(), "Nothing was requested")
	assert.Contains(t, textOf(d, `[data-testid="replay-group-error"]`), "Nothing of this can be replayed")
	assert.Equal(t, "payments gateway back", textOf(d, `[data-testid="replay-reason"]`), "the reason typed is kept")

	batch := strings.TrimPrefix(confirm, "/replay/batches/")
	drafts, err := b.Replays.Batch(context.Background(), batch)
	require.NoError(t, err)
	for _, r := range drafts {
		assert.Equal(t, replay.StatusDraft, r.Status, "request %d changed though nothing was requested", r.ID)
	}
	var submitted int
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM audit_log WHERE action IN ('replay.request', 'replay.void')`).Scan(&submitted))
	assert.Zero(t, submitted, "a refused submit is audited as a request")
}

// TestRevUxVoidRequestPageTellsTheTruth: the page of that void manual
// request says "Not needed: manual replays run without an approver",
// which is false (manual needs two distinct approvers: its own Policy row
// on the same page says so), and its banner says every item "was skipped"
// when each item is "blocked" by the bulk rule, whose own text says what
// to do (request them one at a time). The replays page's Approvals column
// says "not needed" of it too.
func TestRevUxVoidRequestPageTellsTheTruth(t *testing.T) {
	t.Parallel()
	page, b, oncall := voidManualRequest(t)
	d := page.Doc(t)
	approvals := textOf(d, `[data-testid="replay-approvals-not-needed"]`)
	assert.NotContains(t, approvals, "run without an approver",
		"the page of a void manual request says manual replays need no approver")
	banner := textOf(d, `[data-testid="replay-status-reason"]`)
	assert.NotContains(t, banner, "skipped",
		"the items are blocked (manual allows no bulk), the banner says skipped: %q", banner)

	// The replays page says the same of it: "not needed".
	list := b.Do(t, oncall, "GET", "/replay/requests", nil, nil).Doc(t)
	cell := strings.TrimSpace(list.Find(`[data-testid="replay-row-approvals"]`).First().Text())
	assert.NotEqual(t, "not needed", cell, "the replays page says a manual request needs no approval")
}

// TestRevUxAuditActorFilterIgnoresEmailCase: an auditor asks "what did
// jane.doe@example.com do?" and types the address as the role bindings
// page shows it (bindings keep emails lower-cased, and match them in any
// case; the replays page's requester filter ignores case too). Jane's
// identity provider spells her address Jane.Doe@Example.com, and the
// audit log's actor filter matches it byte for byte: "No audit events
// match", as if she had never signed in. Email addresses are not
// case-sensitive in practice; an auditor's empty result must not depend
// on how the IdP capitalised a name.
func TestRevUxAuditActorFilterIgnoresEmailCase(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	b.SignInAs(t, testidp.Person{ID: "jane", Email: "Jane.Doe@Example.com", EmailVerified: true}, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")

	exact := b.Do(t, auditor, "GET", "/audit?actor="+url.QueryEscape("Jane.Doe@Example.com"), nil, nil)
	require.Equal(t, http.StatusOK, exact.Status, exact.Body)
	require.Positive(t, exact.Doc(t).Find(`[data-testid="audit-row"]`).Length(), "her sign-in is audited under her email as the IdP spells it")

	lower := b.Do(t, auditor, "GET", "/audit?actor="+url.QueryEscape("jane.doe@example.com"), nil, nil)
	require.Equal(t, http.StatusOK, lower.Status, lower.Body)
	assert.Positive(t, lower.Doc(t).Find(`[data-testid="audit-row"]`).Length(),
		"the same address in lower case (as the bindings page shows it) finds nothing: %q", textOf(lower.Doc(t), `[data-testid="audit-count"]`))
}

// TestRevUxTimeZoneSaveReturnsToAPage: the user menu's "Show times in"
// form is on every page and sends the person back to "the page they were
// on" (return_to is the request's path). On a page a POST rendered (the
// discard confirmation, the audit chain check, a form's 422) that path
// only answers POST: saving the setting there lands on "405 Method Not
// Allowed", and whatever was typed (the discard reason) is gone.
func TestRevUxTimeZoneSaveReturnsToAPage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "orders.refund", "refund-1", nil)

	confirm := b.Do(t, oncall, "POST", "/deadletters/"+strconv.FormatInt(id, 10)+"/discard", url.Values{"reason": {"duplicate of ord-1"}}, nil)
	require.Equal(t, http.StatusOK, confirm.Status, confirm.Body)
	back, ok := confirm.Doc(t).Find(`[data-testid="time-zone-form"] input[name="return_to"]`).Attr("value")
	require.True(t, ok, "the discard confirmation has the time zone form")

	saved := b.Do(t, oncall, "POST", "/settings/time", url.Values{"time_zone": {"local"}, "return_to": {back}}, nil)
	require.Equal(t, http.StatusSeeOther, saved.Status, saved.Body)
	landed := b.Do(t, oncall, "GET", saved.Header.Get("Location"), nil, nil)
	assert.Equal(t, http.StatusOK, landed.Status,
		"saving the time zone on the discard confirmation lands on %s, which answers %d", saved.Header.Get("Location"), landed.Status)
}

// TestRevUxApprovalsPageSaysWhoAlreadyApproved: the first of a manual
// request's two approvers signs off and goes back to the Approvals page.
// The request is still listed ("1 of 2"), exactly like one they have not
// looked at: nothing says they already approved it, and opening it finds
// no approve button. (The navigation's count, "waiting for your
// approval", already leaves it out; the page it links to does not say
// why.) At 3 a.m. the approver re-reads the intent of a request they
// cannot act on, or thinks their approval was lost.
func TestRevUxApprovalsPageSaysWhoAlreadyApproved(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "orders.refund", "refund-1", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "gateway back"})
	path := "/replay/requests/" + strconv.FormatInt(req.ID, 10)

	page := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	intent, ok := page.Find(`[data-testid="approve-form"] input[name="intent"]`).Attr("value")
	version := page.Find(`[data-testid="approve-form"] input[name="version"]`).AttrOr("value", "")
	require.True(t, ok, "the approver sees the approve form")
	phrase, err := b.Replays.ConfirmationFor(context.Background(), req.ID)
	require.NoError(t, err)
	resp := b.Do(t, approver, "POST", path+"/approve", url.Values{"intent": {intent}, "version": {version}, "confirmation": {phrase}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

	list := b.Do(t, approver, "GET", "/approvals", nil, nil).Doc(t)
	rows := list.Find(`[data-testid="approval-row"]`)
	require.Positive(t, rows.Length(), "listed while it waits for another approver")
	assert.Contains(t, strings.ToLower(rows.First().Text()), "you",
		"the approvals page lists a request its viewer already approved, with nothing saying so: %q",
		strings.Join(strings.Fields(rows.First().Text()), " "))
}

// TestRevUxPayloadEditKeepsTheEditOnError: an on-call hand-fixes a
// payload on the confirm page ("Edit payloads before approval") and
// presses "Save payload" without the required "Why this change". The page
// comes back (422) with the message, and the payload box holds the
// ORIGINAL payload again: the edit they typed is gone, and they must redo
// it from memory.
func TestRevUxPayloadEditKeepsTheEditOnError(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "globex:oncall")
	id := seed(t, b, "globex", "search.index_update", "doc-1", nil)
	confirm := draftPage(t, b, oncall, id)
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	action, ok := d.Find(`[data-testid="payload-edit-form"]`).Attr("action")
	require.True(t, ok, "the confirm page offers to edit the payload")

	edited := `{"x":2,"fixed":"by hand at 3am"}`
	resp := b.Do(t, oncall, "POST", action, url.Values{"payload": {edited}, "reason": {""}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	box := strings.TrimSpace(resp.Doc(t).Find(`[data-testid="payload-edit-form"] textarea[name="payload"]`).Text())
	assert.Equal(t, edited, box, "the payload typed is replaced by the original when the form comes back for a missing reason")
}

// TestRevUxAuditObjectFilterSaysWhenItCannotRead: the console names a
// replay request "#4" (the replays and approvals pages) and a dead letter
// "Dead letter #138"; an auditor types what they read into the audit
// log's Object filter, "replay_request #4", and is told "No audit events
// match", with no word about the "#": the filter quietly looked for an
// object whose id is "replay_request #4". An auditor must not conclude
// that nothing happened to the request: either the filter reads the way
// the console writes ids, or it says it cannot.
func TestRevUxAuditObjectFilterSaysWhenItCannotRead(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, oncall := b.SignIn(t, "acme:oncall")
	auditor, _ := b.SignIn(t, "*:auditor")
	id := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "relay back"})

	plain := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape("replay_request "+strconv.FormatInt(req.ID, 10)), nil, nil)
	require.Equal(t, http.StatusOK, plain.Status, plain.Body)
	require.Positive(t, plain.Doc(t).Find(`[data-testid="audit-row"]`).Length(), "the request's entries, as the placeholder spells an object")

	hashed := b.Do(t, auditor, "GET", "/audit?object="+url.QueryEscape("replay_request #"+strconv.FormatInt(req.ID, 10)), nil, nil)
	d := hashed.Doc(t)
	_, hidden := d.Find(`#f-object-error`).Attr("hidden")
	found := d.Find(`[data-testid="audit-row"]`).Length()
	assert.True(t, found > 0 || (hashed.Status == http.StatusUnprocessableEntity && !hidden),
		"\"replay_request #%d\" finds %d entries (%q) and says nothing about the filter", req.ID, found, textOf(d, `[data-testid="audit-count"]`))
}

// TestRevUxEmergencyStopKeepsTheChosenTenant: an approver of acme and
// globex opens "Stop replays", picks globex, says why, and types "stop"
// (lower case). The form comes back (422) with the reason kept and the
// tenant select back on its first option, acme: no option is selected.
// They type STOP as told and press "Emergency stop": acme's replays are
// stopped and its drafts dropped, and globex's keep publishing.
func TestRevUxEmergencyStopKeepsTheChosenTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	approver, _ := b.SignIn(t, "acme:approver", "globex:approver")
	page := b.Do(t, approver, "GET", "/replay/stop", nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	opts := page.Doc(t).Find(`select[name="tenant"] option:not([value=""])`) // past "Choose a tenant…"
	require.GreaterOrEqual(t, opts.Length(), 2, "both tenants are offered")
	require.Equal(t, "acme", opts.First().AttrOr("value", ""), "acme is the first tenant offered")

	resp := b.Do(t, approver, "POST", "/replay/stop", url.Values{"tenant": {"globex"}, "reason": {"shard 4 flapping"}, "confirm": {"stop"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, resp.Body)
	sel := resp.Doc(t).Find(`select[name="tenant"]`)
	chosen := sel.Find(`option[selected]`).AttrOr("value", "")
	if chosen == "" {
		chosen = sel.Find(`option`).First().AttrOr("value", "") // what a browser submits with none selected
	}
	assert.Equal(t, "globex", chosen, "the form comes back set to stop %s, not the tenant the approver chose", chosen)
}

// TestRevUxNeedsReconciliationIsNotNothingToDo: a replay's publish got no
// PubAck and its duplicate window passed: the dead letter "needs
// reconciliation", and stays held until a person settles it (an approver,
// with replay:<class> reconcile). The on-call who opens it reads, in its
// Actions card, "Nothing to do here: its status is needs reconciliation",
// beside "no PubAck, and the window no longer covers the publish". It is
// the one state where something must be done by someone; the card should
// say so (and by whom), not send the on-call away.
func TestRevUxNeedsReconciliationIsNotNothingToDo(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncallC, oncall := b.SignIn(t, "globex:oncall")
	id := seed(t, b, "globex", "search.index_update", "doc-1", nil)
	req := testfactory.Request(t, b.Replays, oncall.Actor, []int64{id}, replay.SubmitInput{Reason: "shard back"})
	testfactory.NeedsPerson(t, b.Pool, req.ID)

	page := b.Do(t, oncallC, "GET", "/deadletters/"+strconv.FormatInt(id, 10), nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	actions := strings.Join(strings.Fields(textOf(page.Doc(t), `[data-testid="deadletter-actions"]`)), " ")
	require.Contains(t, actions, "needs reconciliation")
	assert.NotContains(t, actions, "Nothing to do here",
		"a dead letter waiting for a person to settle its replay tells the on-call there is nothing to do: %q", actions)
}

// TestRevUxDraftSubmittedLineReads: a draft's request page says, under
// Submitted, "not yet (a draft, frozen2026-12-02 12:32:15 UTC)": the
// words and the time run together.
func TestRevUxDraftSubmittedLineReads(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncallC, oncall := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "email.send", "mail-1", opHeader("op-1"))
	_, drafts := testfactory.Draft(t, b.Replays, oncall.Actor, id)
	require.Len(t, drafts, 1)
	page := b.Do(t, oncallC, "GET", "/replay/requests/"+strconv.FormatInt(drafts[0].ID, 10), nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	line := textOf(page.Doc(t), `[data-testid="replay-submitted"]`)
	assert.NotRegexp(t, `frozen\d`, line, "the draft's Submitted line runs words and time together: %q", line)
}
