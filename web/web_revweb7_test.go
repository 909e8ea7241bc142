package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
)

// TestRevWeb7PagesShowingPayloadsAreNotStored: a dead letter's page shows
// its payload, headers, error text and stack trace (customer data, tokens
// a producer put in a header), and a replay request's page shows the
// payloads it will send. The downloads of the same bytes are sent with
// "Cache-Control: no-store" (sendDownload: "browsers never ... cache"),
// but the HTML pages that show them carry no Cache-Control at all: a
// browser keeps them in its disk cache and shows them again from the
// history or the Back button after the person signed out (a shared
// jump-host browser, a kiosk), and any shared cache between the console
// and the browser may keep them heuristically.
//
// Severity: low. Expected: every page of a signed-in person, and at least
// every page that shows what a producer sent, is answered with
// "Cache-Control: no-store" as the downloads are.
func TestRevWeb7PagesShowingPayloadsAreNotStored(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	const secret = "card-4111-1111-1111-1111"
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{
		Tenant: "acme", MsgID: "rev-web7-cache", Payload: []byte(`{"card":"` + secret + `"}`),
		Headers: map[string][]string{"Authorization": {"Bearer " + secret}},
	})
	oncall, _ := b.SignIn(t, "acme:oncall")

	// The download of the payload is not stored: the rule the console follows.
	dl := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d/payload", id), nil, nil)
	require.Equal(t, http.StatusOK, dl.Status)
	require.Equal(t, "no-store", dl.Header.Get("Cache-Control"))

	// The page that shows the same payload and the header is.
	page := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
	require.Equal(t, http.StatusOK, page.Status)
	require.Contains(t, page.Body, secret, "the page shows the payload")
	assert.True(t, strings.Contains(page.Header.Get("Cache-Control"), "no-store"),
		"the dead letter's page, which shows its payload and headers, may be stored by the browser: Cache-Control %q",
		page.Header.Get("Cache-Control"))
}

// trailActions are the actions of the audit trail a dead letter's page
// shows, with the actor of each.
func trailActions(d *goquery.Document) []string {
	var out []string
	d.Find(`[data-testid="dl-audit-row"]`).Each(func(_ int, r *goquery.Selection) {
		out = append(out, strings.TrimSpace(r.Find("code.chip").Text())+" by "+strings.TrimSpace(r.Find(`td[data-label="Actor"]`).Text())+
			" ("+strings.TrimSpace(r.Find(`td[data-label="Reason"]`).Text())+")")
	})
	return out
}

// TestRevWeb7DeadLetterTrailShowsOtherObjectsEntries: a dead letter's page
// shows "entries about the object and entries naming its message id in its
// tenant" (deadLetterTrail), to everyone who may read the dead letter. The
// message-id half (audit.messageTrail) is
//
//	WHERE ((message_id = $1 AND message_id <> '') OR object_id = $1) AND tenant = $2
//
// so every entry of the tenant whose object_id, of ANY object type, equals
// the dead letter's message id is shown as this dead letter's history. The
// message id is the producer's (Dlq-Original-Msg-Id), often a number:
//
//   - a dead letter whose message id is "17" shows what was done to dead
//     letter #17 (discarded, with its reason) as its own trail: the page
//     says this one was discarded when nobody touched it (invariant 13:
//     what the console reports is what happened);
//   - a dead letter whose message id is "csv" shows the tenant's
//     audit.export rows (who exported the audit log, with what filter),
//     "POST /admin/bindings" the tenant's refused binding attempts, a
//     role binding's id who granted roles: audit entries that only
//     auditors (audit:read) may read, shown to a viewer who holds nothing
//     but deadletter:read. Whoever can publish to dlq.<tenant>.> picks the
//     message id.
//
// Severity: medium. Expected: the trail holds only entries about this dead
// letter (object dead_letter:<id>) and entries whose message_id is its
// message id; an entry about another object is never shown because its id
// happens to equal the message id.
func TestRevWeb7DeadLetterTrailShowsOtherObjectsEntries(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	viewer, _ := b.SignIn(t, "acme:viewer")
	auditor, _ := b.SignIn(t, "acme:auditor")

	t.Run("AnotherDeadLettersDiscardShownAsThisOnes", func(t *testing.T) {
		first := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", MsgID: "rev-web7-first"})
		// Another message of the same producer, whose ids are numbers.
		second := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", MsgID: strconv.FormatInt(first, 10)})
		resp := b.Do(t, oncall, "POST", fmt.Sprintf("/deadletters/%d/discard", first),
			url.Values{"reason": {"duplicate of an order already refunded"}, views.ConfirmedField: {"1"}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)

		page := b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d", second), nil, nil)
		require.Equal(t, http.StatusOK, page.Status)
		assert.NotContains(t, strings.Join(trailActions(page.Doc(t)), "; "), "deadletter.discard",
			"dead letter #%d, which nobody touched, shows the discard of dead letter #%d as its own", second, first)
	})

	t.Run("ViewerReadsTheTenantsAuditExports", func(t *testing.T) {
		id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", MsgID: "csv"})
		resp := b.Do(t, auditor, "GET", "/audit/export.csv?tenant=acme", nil, nil)
		require.Equal(t, http.StatusOK, resp.Status)
		require.Equal(t, 1, b.AuditCount(t, "action = 'audit.export' AND tenant = 'acme' AND object_id = 'csv'"))

		page := b.Do(t, viewer, "GET", fmt.Sprintf("/deadletters/%d", id), nil, nil)
		require.Equal(t, http.StatusOK, page.Status)
		assert.NotContains(t, strings.Join(trailActions(page.Doc(t)), "; "), "audit.export",
			"a viewer (no audit:read) reads who exported acme's audit log on a dead letter's page")
	})
}

// TestRevWeb7ProbeOfAnotherTenantsObjectEscapesItsTrail: a person who
// tries another tenant's dead letter gets a 404, and the attempt is
// audited in that tenant, naming the dead letter ("every denied attempt
// writes an audit row"; its auditors find it with the Object filter
// "dead_letter 83", and the dead letter's page shows it in its trail).
// The id in the path is read with strconv.ParseInt, which also takes
// "083" and "+83" for dead letter 83, and the denial row records the path
// parameter as typed (notFoundDenied(c, tenant, type, c.Param("id"))), so
// a prober who writes the id with a leading zero or a plus sign is
// answered exactly as for "83" (the dead letter is found, its tenant
// decided) while the row names object "083": the auditor's search for
// dead_letter 83, and dead letter 83's audit trail, never show it. The
// same holds for replay requests, audit entries and role bindings.
//
// Severity: low. Expected: the denial names the object as the console
// names it (the id parsed and written again, "83"), or a path id that is
// not in its canonical form is not found without looking anything up.
//
// The console does the second (canonicalID): a spelling it never writes is
// no id, answered 404 before any lookup, so its answer depends on nothing
// of the dead letter and nothing names the spelling; the probe that does
// reach the dead letter ("83") is in globex's log under its id. One rule
// at the parse keeps every row written from a path id in its object's
// trail, a download's as much as a denial's.
func TestRevWeb7ProbeOfAnotherTenantsObjectEscapesItsTrail(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	theirs := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", MsgID: "rev-web7-probe"})
	prober, u := b.SignIn(t, "acme:oncall")
	id := strconv.FormatInt(theirs, 10)

	// A spelling the console never writes is no id: not found before
	// anything is looked up, as "abc" is, so its answer says nothing of
	// dead letter 83 and there is no attempt on it to record. Nothing is
	// written naming the spelling, in globex's log or any other.
	for _, typed := range []string{"0" + id, "+" + id} {
		resp := b.Do(t, prober, "GET", "/deadletters/"+typed, nil, nil)
		require.Equal(t, http.StatusNotFound, resp.Status, typed)
	}
	assert.Zero(t, b.AuditCount(t, "object_id IN ($1, $2)", "0"+id, "+"+id), "no row names the dead letter as the prober spelled it")
	probes := func() (tried, named int) {
		return b.AuditCount(t, "action = 'authz.denied' AND tenant = 'globex' AND actor_subject = $1", u.Subject),
			b.AuditCount(t, "action = 'authz.denied' AND tenant = 'globex' AND actor_subject = $1 AND object_type = 'dead_letter' AND object_id = $2", u.Subject, id)
	}
	tried, named := probes()
	assert.Equal(t, tried, named, "globex's auditors searching dead_letter %s find every probe in their log", id)

	// The probe that reached the dead letter is in its tenant's log, named
	// as the console names it.
	resp := b.Do(t, prober, "GET", "/deadletters/"+id, nil, nil)
	require.Equal(t, http.StatusNotFound, resp.Status)
	tried, named = probes()
	require.Equal(t, 1, tried, "the probe is in globex's log")
	assert.Equal(t, tried, named, "globex's auditors searching dead_letter %s find every probe", id)

	// What globex's auditor sees searching for the dead letter.
	auditor, _ := b.SignIn(t, "globex:auditor")
	rows := b.Do(t, auditor, "GET", "/audit?"+url.Values{"object": {"dead_letter " + id}}.Encode(), nil, nil).Doc(t).
		Find(`[data-testid="audit-row"]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
		return strings.Contains(s.Text(), "authz.denied")
	}).Length()
	assert.Equal(t, 1, rows, "the auditor's Object filter finds the probe of dead letter %s", id)
}

// TestRevWeb7BatchProbeIsRecordedInOneTenantOnly: a replay selection
// (/replay/batches/<batch>) spans every tenant of its dead letters. Someone
// who may read none of them is answered 404, and the rule is that a
// refusal that touches several tenants is one row in each, naming only that
// tenant's object, so that each tenant's auditors see what was tried on
// theirs (docs/access.md; tried() does so for a route-level refusal).
// locate() for an ObjectTenant route instead returns at the first tenant
// it finds the caller may not see, iterating a map: one row, in whichever
// tenant the map yields first, and the other tenant's auditors never learn
// of the attempt.
//
// Severity: low. Expected: one authz.denied row in each tenant of the
// selection the caller may not see.
func TestRevWeb7BatchProbeIsRecordedInOneTenantOnly(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	acme := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rev-web7-batch-a"})
	globex := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "rev-web7-batch-g"})
	_, requester := b.SignIn(t, "*:oncall")
	batch, drafts := testfactory.Draft(t, b.Replays, requester.Actor, acme, globex)
	require.Len(t, drafts, 2, "one draft per tenant")

	prober, u := b.SignIn(t, "initech:oncall")
	resp := b.Do(t, prober, "GET", "/replay/batches/"+batch, nil, nil)
	require.Equal(t, http.StatusNotFound, resp.Status)
	for _, tenant := range []string{"acme", "globex"} {
		assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND actor_subject = $1 AND tenant = $2 AND object_type = 'replay_batch'", u.Subject, tenant),
			"%s's auditors see the probe of a selection holding %s's dead letters", tenant, tenant)
	}
}
