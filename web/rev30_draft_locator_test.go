package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/web"
)

// TestRevLocate30ColleaguesDraftIsNotFoundOnEveryRequestRoute walks the
// route table's routes of one replay request: a colleague's draft does
// not exist for a person (docs/access.md), so every such route answers a
// reader of acme who holds every role in globex, but only viewer in acme,
// 404 for it, audited as an attempt on acme's object, with nothing done.
// A 403 naming the route's right (which the locator gave first, review
// round 30) told them a request of that id and class was there. The same
// route on the colleague's submitted request, which they may see, does not
// answer 404: the path reaches the locator, and what hides the draft is
// that it is a draft.
func TestRevLocate30ColleaguesDraftIsNotFoundOnEveryRequestRoute(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	_, colleague := b.SignIn(t, "acme:oncall")
	client, u := b.SignIn(t, "acme:viewer", "globex:oncall", "globex:approver", "globex:auditor", "globex:admin")
	letter := func(t *testing.T) int64 {
		return testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund",
			MsgID: fmt.Sprintf("rev30-%d", rev29bLetters.Add(1)), Error: "boom", Payload: []byte(`{"rev30":1}`)})
	}
	path := func(r web.Route, id, dl int64) string {
		p := strings.Replace(r.Path, ":id", fmt.Sprint(id), 1)
		return strings.Replace(p, ":dl", fmt.Sprint(dl), 1)
	}
	form := func(r web.Route) url.Values {
		if r.Method == http.MethodGet {
			return nil
		}
		return url.Values{"reason": {"rev30"}, "confirmed": {"1"}, "confirm": {"STOP"}, "payload": {`{"rev30":2}`},
			"choice": {"applied"}, "note": {"rev30"}}
	}
	n := 0
	for _, r := range (&web.Server{}).Routes() {
		if r.Locate == nil || r.Locate.Object != "replay_request" {
			continue
		}
		n++
		t.Run(routeKey(r), func(t *testing.T) {
			dl := letter(t)
			_, drafts := testfactory.Draft(t, b.Replays, colleague.Actor, dl)
			require.Len(t, drafts, 1)
			draft := drafts[0]
			require.Equal(t, replay.StatusDraft, draft.Status)

			before, mark := acmeState(t, b), auditMark(t, b)
			resp := b.Do(t, client, r.Method, path(r, draft.ID, dl), form(r), nil)
			assert.Equal(t, http.StatusNotFound, resp.Status, "%s on a colleague's draft: %.300s", routeKey(r), resp.Body)
			assert.NotContains(t, resp.Body, string(draft.Class), "the answer names nothing of the draft")
			assert.Positive(t, b.AuditCount(t, `seq > $1 AND actor_subject = $2 AND tenant = 'acme' AND action = 'authz.denied'
                AND object_type = 'replay_request' AND object_id = $3`, mark, u.Subject, fmt.Sprint(draft.ID)),
				"%s: the attempt is audited for acme", routeKey(r))
			assert.Zero(t, b.AuditCount(t, "seq > $1 AND actor_subject = $2 AND outcome = 'ok'", mark, u.Subject), "nothing was done")
			assert.Equal(t, before, acmeState(t, b), "what acme holds is unchanged")

			submitted := testfactory.Request(t, b.Replays, colleague.Actor, []int64{letter(t)}, replay.SubmitInput{})
			require.Equal(t, replay.StatusPendingApproval, submitted.Status)
			var dl2 int64
			require.NoError(t, b.Pool.QueryRow(ctx, `SELECT dead_letter_id FROM replay_items WHERE request_id = $1`, submitted.ID).Scan(&dl2))
			resp = b.Do(t, client, r.Method, path(r, submitted.ID, dl2), form(r), nil)
			assert.NotEqual(t, http.StatusNotFound, resp.Status, "%s on a colleague's submitted request, in a tenant the person reads: %.300s", routeKey(r), resp.Body)
		})
	}
	require.Equal(t, 10, n, "the routes of one replay request")
	require.True(t, b.Access.Can(u, "acme", authz.ObjDeadLetter, authz.ActRead))
}
