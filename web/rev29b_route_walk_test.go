package web_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/web"
)

// rev29bLetters numbers what the builders make, so that no two collide.
var rev29bLetters atomic.Int64

// walkedObject is what a builder made in tenant acme for one route to act
// on: the request that acts on it, and the replay class of what it
// touches ("" when it is no replay's).
type walkedObject struct {
	path  string
	form  url.Values // nil: a GET without a body
	class string
	// tolerated, when not "", is an "ok" audit row of the person's that is
	// not the route acting (a draft of acme's dead letters with every item
	// left out: how POST /replay answers a selection it may not request).
	tolerated string
}

// objectBuilder makes, as the route's acting person who (the requester,
// when the route acts only on the person's own requests) and with others
// of acme where the route acts on someone else's, an object of acme in the
// state the route acts on.
type objectBuilder func(t *testing.T, b *testfactory.Console, who authz.User) walkedObject

// routeWalkBuilders is, for every route that writes to an object of a
// tenant (.of) or to a selection of dead letters (.selects) and needs a
// permission of its own, how to build what it acts on. A route of the
// route table that needs one and has none here fails the walk: its author
// adds it.
func routeWalkBuilders() map[string]objectBuilder {
	ctx := context.Background()
	letter := func(t *testing.T, b *testfactory.Console, itemType string) int64 {
		return testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: itemType,
			MsgID: fmt.Sprintf("rev29b-%s-%d", itemType, rev29bLetters.Add(1)), Error: "boom", Payload: []byte(`{"rev29b":1}`)})
	}
	// requester is someone of acme who requests what another person then acts on.
	requester := func(t *testing.T, b *testfactory.Console) authz.User {
		_, u := b.SignIn(t, "acme:oncall")
		return u
	}
	pending := func(t *testing.T, b *testfactory.Console, by authz.User) (replay.Request, int64) {
		dl := letter(t, b, "orders.refund")
		req := testfactory.Request(t, b.Replays, by.Actor, []int64{dl}, replay.SubmitInput{})
		require.Equal(t, replay.StatusPendingApproval, req.Status, "a manual request waits for its approvers")
		return req, dl
	}
	approved := func(t *testing.T, b *testfactory.Console, by authz.User) (replay.Request, int64) {
		dl := letter(t, b, "search.index_update")
		req := testfactory.Request(t, b.Replays, by.Actor, []int64{dl}, replay.SubmitInput{Reason: "reindex"})
		require.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approver; no worker runs here")
		return req, dl
	}
	closeOne := func(verb string) objectBuilder {
		return func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			dl := letter(t, b, "orders.refund")
			return walkedObject{path: fmt.Sprintf("/deadletters/%d/%s", dl, verb), form: url.Values{"reason": {"rev29b: done by hand"}, "confirmed": {"1"}}}
		}
	}
	closeSelected := func(verb string) objectBuilder {
		return func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			dl := letter(t, b, "orders.refund")
			return walkedObject{path: "/deadletters/" + verb, form: url.Values{"id": {fmt.Sprint(dl)}, "reason": {"rev29b: done by hand"}, "confirmed": {"1"}}}
		}
	}
	return map[string]objectBuilder{
		"POST /admin/bindings/:id/delete": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			root, _ := b.SignIn(t, "*:admin")
			email := fmt.Sprintf("rev29b-%d@example.com", rev29bLetters.Add(1))
			resp := b.Do(t, root, http.MethodPost, "/admin/bindings", url.Values{"email": {email}, "role": {"viewer"}, "tenant": {"acme"}}, nil)
			require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
			var id int64
			require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM role_bindings WHERE subject = $1`, "email:"+email).Scan(&id))
			return walkedObject{path: fmt.Sprintf("/admin/bindings/%d/delete", id), form: url.Values{}}
		},
		"POST /deadletters/:id/discard": closeOne("discard"),
		"POST /deadletters/:id/resolve": closeOne("resolve"),
		"POST /deadletters/discard":     closeSelected("discard"),
		"POST /deadletters/resolve":     closeSelected("resolve"),
		"POST /deadletters/:id/fix": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			dl := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprint("rev29b-fix-", rev29bLetters.Add(1)),
				Class: "schema_invalid", Error: "decode: unknown field \"sku2\"", At: time.Now().Add(-time.Hour), Payload: []byte(`{"doc":1}`)})
			return walkedObject{path: fmt.Sprintf("/deadletters/%d/fix", dl), form: url.Values{"scope": {"item_type"},
				"fixed_at": {time.Now().UTC().Format("2006-01-02T15:04")}, "ref": {"v1.4.2"}, "note": {"consumer accepts it"}}}
		},
		"GET /deadletters/:id/payload": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			return walkedObject{path: fmt.Sprintf("/deadletters/%d/payload", letter(t, b, "orders.refund"))}
		},
		"GET /replay/requests/:id/items/:dl/payload": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			req, dl := pending(t, b, requester(t, b))
			return walkedObject{path: fmt.Sprintf("/replay/requests/%d/items/%d/payload", req.ID, dl), class: string(req.Class)}
		},
		"POST /replay": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			return walkedObject{path: "/replay", form: url.Values{"id": {fmt.Sprint(letter(t, b, "search.index_update"))}}, class: "rebuildable",
				tolerated: `action = 'replay.draft' AND (after->>'items')::int = 0`}
		},
		"POST /replay/batches/:batch": func(t *testing.T, b *testfactory.Console, who authz.User) walkedObject {
			batch, drafts := testfactory.Draft(t, b.Replays, who.Actor, letter(t, b, "search.index_update"))
			require.Len(t, drafts, 1)
			return walkedObject{path: "/replay/batches/" + batch, form: url.Values{"reason": {"reindex after the fix"}}, class: string(drafts[0].Class)}
		},
		"POST /replay/requests/:id/approve": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			req, _ := pending(t, b, requester(t, b))
			phrase, err := b.Replays.ConfirmationFor(ctx, req.ID)
			require.NoError(t, err)
			return walkedObject{path: fmt.Sprintf("/replay/requests/%d/approve", req.ID),
				form: url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}, "confirmation": {phrase}}, class: string(req.Class)}
		},
		"POST /replay/requests/:id/reject": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			req, _ := pending(t, b, requester(t, b))
			return walkedObject{path: fmt.Sprintf("/replay/requests/%d/reject", req.ID),
				form: url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}, "reason": {"not now"}, "confirmed": {"1"}}, class: string(req.Class)}
		},
		"POST /replay/requests/:id/cancel": func(t *testing.T, b *testfactory.Console, who authz.User) walkedObject {
			req, _ := pending(t, b, who) // only the requester cancels
			return walkedObject{path: fmt.Sprintf("/replay/requests/%d/cancel", req.ID),
				form: url.Values{"reason": {"changed my mind"}, "confirmed": {"1"}}, class: string(req.Class)}
		},
		"POST /replay/requests/:id/again": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			by := requester(t, b)
			req, _ := approved(t, b, by)
			require.NoError(t, b.Replays.Cancel(ctx, req.ID, by.Actor, "rev29b: not now", quarantine.RequestMeta{})) // its item back in quarantine
			return walkedObject{path: fmt.Sprintf("/replay/requests/%d/again", req.ID), form: url.Values{}, class: string(req.Class)}
		},
		"POST /replay/requests/:id/items/:dl/payload": func(t *testing.T, b *testfactory.Console, who authz.User) walkedObject {
			req, dl := pending(t, b, who) // only the requester edits
			return walkedObject{path: fmt.Sprintf("/replay/requests/%d/items/%d/payload", req.ID, dl),
				form: url.Values{"payload": {`{"rev29b":2}`}, "reason": {"the amount was wrong"}}, class: string(req.Class)}
		},
		"POST /replay/requests/:id/items/:dl/reconcile": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			req, dl := approved(t, b, requester(t, b))
			testfactory.NeedsPerson(t, b.Pool, req.ID)
			return walkedObject{path: fmt.Sprintf("/replay/requests/%d/items/%d/reconcile", req.ID, dl),
				form: url.Values{"choice": {"applied"}, "note": {"the index holds the doc"}}, class: string(req.Class)}
		},
		"POST /replay/requests/:id/stop": func(t *testing.T, b *testfactory.Console, _ authz.User) walkedObject {
			req, _ := approved(t, b, requester(t, b))
			return walkedObject{path: fmt.Sprintf("/replay/requests/%d/stop", req.ID),
				form: url.Values{"reason": {"wrong index"}, "confirm": {"STOP"}}, class: string(req.Class)}
		},
	}
}

// walkedRoutes are the routes of the route table (not a list written
// here) that act on what a tenant holds and need a permission of their
// own: every route needing a permission that writes (not a GET) and names
// an object (.of) or a selection of dead letters (.selects), and every GET
// of an object that writes (downloads: an audited download) needing more
// than seeing the object. The GETs of an object left out write nothing
// (GET /replay/batches/:batch shows the person's own draft).
func walkedRoutes() []web.Route {
	var out []web.Route
	for _, r := range (&web.Server{}).Routes() {
		if r.Access != web.AccessPerm || (r.Tenancy != web.ObjectTenant && r.Tenancy != web.SelectedTenants) {
			continue
		}
		if r.Method == http.MethodGet && (!r.Writes || r.Locate == nil || r.Perm == r.Locate.See) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// routeKey is how the walk names r.
func routeKey(r web.Route) string { return r.Method + " " + r.Path }

// roleHolding is the role of the shipped policy, other than onlyNot,
// that holds p (its action on its object, or on a member of its family)
// and, with read, reads dead letters too; "" when none does.
func roleHolding(t *testing.T, b *testfactory.Console, p web.Permission, onlyNot string, read bool) string {
	t.Helper()
	objects := append(p.Objects(), p.Object) // a family's lines name the family ("replay:*") or a member
	var role string
	err := b.Pool.QueryRow(context.Background(), `SELECT coalesce(min(v0), '') FROM casbin_rule
        WHERE ptype = 'p' AND v2 = ANY($1) AND v3 = $2 AND v0 <> $3
          AND (NOT $4::boolean OR v0 IN (SELECT v0 FROM casbin_rule WHERE ptype = 'p' AND v2 = 'deadletter' AND v3 = 'read'))`,
		objects, p.Action, onlyNot, read).Scan(&role)
	require.NoError(t, err)
	return role
}

// acmeState is what tenant acme holds that a route could change, read
// generically: each dead letter's status and version; each replay request
// (but drafts with nothing to replay: POST /replay's answer to a selection
// it may not request), its status, version and live items, its items'
// payloads and whether each is left out, its approvals, its jobs' states;
// its fix markers and its role bindings.
func acmeState(t *testing.T, b *testfactory.Console) string {
	t.Helper()
	var s string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `
        WITH r AS (SELECT * FROM replay_requests WHERE tenant = 'acme' AND NOT (status = 'draft' AND item_count = 0))
        SELECT concat_ws(E'\n',
            'dead letters: ' || (SELECT string_agg(format('%s %s v%s', id, status, version), ', ' ORDER BY id) FROM dead_letters WHERE tenant = 'acme'),
            'requests: ' || (SELECT string_agg(format('%s %s v%s items %s', id, status, version, item_count), ', ' ORDER BY id) FROM r),
            'items: ' || (SELECT string_agg(format('%s/%s %s out=%s', i.request_id, i.dead_letter_id, encode(i.payload_sha256, 'hex'), i.skip_reason <> ''), ', '
                ORDER BY i.request_id, i.dead_letter_id) FROM replay_items i JOIN r ON r.id = i.request_id),
            'approvals: ' || (SELECT count(*) FROM replay_approvals a JOIN r ON r.id = a.request_id),
            'jobs: ' || (SELECT string_agg(format('%s %s', j.id, j.state), ', ' ORDER BY j.id) FROM replay_jobs j JOIN r ON r.id = j.request_id),
            'fix markers: ' || (SELECT count(*) FROM fix_markers WHERE tenant = 'acme'),
            'bindings: ' || (SELECT string_agg(id::text, ', ' ORDER BY id) FROM role_bindings WHERE tenant = 'acme'))`).Scan(&s))
	return s
}

// auditMark is the last audit row's sequence number.
func auditMark(t *testing.T, b *testfactory.Console) int64 {
	t.Helper()
	var seq int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT coalesce(max(seq), 0) FROM audit_log`).Scan(&seq))
	return seq
}

// refusedAsItShould sends r's request on obj as client (person u) and
// asserts that r refused it: an object's route answers 403 or 404 (a
// selection's answers as its design says, leaving out what the person may
// not act on); a denied row of acme's under u is written (for an object's
// route an authz.denied one); no row of u's says anything was done; and
// nothing acme holds changed.
func refusedAsItShould(t *testing.T, b *testfactory.Console, r web.Route, obj walkedObject, client *http.Client, u authz.User, who string) {
	t.Helper()
	key := routeKey(r)
	before, mark := acmeState(t, b), auditMark(t, b)
	resp := b.Do(t, client, r.Method, obj.path, obj.form, nil)
	if r.Tenancy == web.ObjectTenant {
		assert.Contains(t, []int{http.StatusForbidden, http.StatusNotFound}, resp.Status,
			"%s (%s) by %s: refused, not %d: %.300s", key, obj.path, who, resp.Status, resp.Body)
	} else {
		assert.Less(t, resp.Status, http.StatusInternalServerError, "%s by %s: %.300s", key, who, resp.Body)
	}
	denied := "outcome = 'denied'"
	if r.Tenancy == web.ObjectTenant {
		denied += " AND action = 'authz.denied'"
	}
	assert.Positive(t, b.AuditCount(t, "seq > $1 AND actor_subject = $2 AND tenant = 'acme' AND "+denied, mark, u.Subject),
		"%s by %s: the refusal is audited for acme", key, who)
	done := "seq > $1 AND actor_subject = $2 AND outcome = 'ok'"
	if obj.tolerated != "" {
		done += " AND NOT (" + obj.tolerated + ")"
	}
	var acted []string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(action || ' ' || tenant ORDER BY seq), '{}') FROM audit_log WHERE `+done,
		mark, u.Subject).Scan(&acted))
	assert.Empty(t, acted, "%s by %s: nothing was done, and nothing recorded as done", key, who)
	assert.Equal(t, before, acmeState(t, b), "%s by %s: what acme holds is unchanged", key, who)
}

// TestRevPath29EveryObjectWriteNeedsItsRightInTheObjectsTenant walks the
// route table: for every route that acts on an object of a tenant or a
// selection of its dead letters with a permission of its own (its gate
// lets through whoever holds it in SOME tenant), a person who reads
// acme's dead letters (and sees its object: its locator's See) and holds
// the route's permission only in globex
// tries it on a real object of acme in the state the route acts on. Each
// is refused (403, or 404 where acme's object is not theirs to see; a
// selection leaves acme's dead letters out), the refusal is audited for
// acme, nothing is recorded as done, and acme holds what it held. Whether
// the locator or the handler refuses is not this test's to say; that one
// of them does, on every route, is. A route without a builder here fails.
func TestRevPath29EveryObjectWriteNeedsItsRightInTheObjectsTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	builders := routeWalkBuilders()
	routes := walkedRoutes()
	require.NotEmpty(t, routes)
	// The person sees acme's objects of every route (a viewer's
	// "deadletter read", and the locator's See where it is another: an
	// admin's "bindings read"), so that what refuses them is the route's
	// own right, not that the object is not theirs to see.
	for _, r := range routes {
		if r.Locate == nil {
			continue
		}
		_, err := b.DB.OwnerPool.Exec(context.Background(), `INSERT INTO casbin_rule (ptype, v0, v1, v2, v3) SELECT 'p', $1::text, '*', $2::text, $3::text
            WHERE NOT EXISTS (SELECT FROM casbin_rule WHERE ptype = 'p' AND v0 = $1 AND v2 = $2 AND v3 = $3)`, authz.RoleViewer, r.Locate.See.Object, r.Locate.See.Action)
		require.NoError(t, err)
	}
	require.NoError(t, b.Access.Reload())
	walked := map[string]bool{}
	people := map[string]struct {
		client *http.Client
		user   authz.User
	}{}
	for _, r := range routes {
		key := routeKey(r)
		walked[key] = true
		t.Run(key, func(t *testing.T) {
			build, ok := builders[key]
			if !ok {
				t.Fatalf("route %s (needs %s %s in the tenant of what it touches) has no builder in rev29b_route_walk_test.go: add one that makes an object of acme it acts on",
					key, r.Perm.Object, r.Perm.Action)
			}
			role := roleHolding(t, b, r.Perm, authz.RoleViewer, false)
			require.NotEmpty(t, role, "%s: no role holds %s %s", key, r.Perm.Object, r.Perm.Action)
			p, ok := people[role]
			if !ok {
				p.client, p.user = b.SignIn(t, "acme:viewer", "globex:"+role)
				people[role] = p
			}
			for _, obj := range r.Perm.Objects() {
				require.False(t, b.Access.Can(p.user, "acme", obj, r.Perm.Action), "%s: the person holds %s %s in acme", key, obj, r.Perm.Action)
			}
			require.True(t, web.PermittedSomewhere(b.Access, p.user, r.Perm), "%s: the person passes the route's gate", key)
			require.True(t, b.Access.Can(p.user, "acme", authz.ObjDeadLetter, authz.ActRead), "%s: the person reads acme's dead letters", key)
			require.True(t, b.Access.Can(p.user, "acme", r.Locate.See.Object, r.Locate.See.Action), "%s: the person sees acme's object", key)
			refusedAsItShould(t, b, r, build(t, b, p.user), p.client, p.user, "a reader of acme with "+role+" in globex")
		})
	}
	for _, key := range slices.Sorted(maps.Keys(builders)) {
		assert.True(t, walked[key], "the builder of %s names no route the walk takes: remove it, or the route lost what made it walked", key)
	}
}

// TestRevPath29EveryRequestWriteNeedsItsRightOnTheRequestsClass walks the
// same routes, those of replays ("replay:*": the gate lets through whoever
// holds the action on SOME class): a person of acme whose role's line for
// the route's action names only another class than the one of what the
// route touches tries it on a real object of acme. Each is refused as in
// TestRevPath29EveryObjectWriteNeedsItsRightInTheObjectsTenant.
func TestRevPath29EveryRequestWriteNeedsItsRightOnTheRequestsClass(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	builders := routeWalkBuilders()
	n := 0
	for _, r := range walkedRoutes() {
		if !strings.HasSuffix(r.Perm.Object, ":*") { // not a family of replay classes
			continue
		}
		n++
		key := routeKey(r)
		t.Run(key, func(t *testing.T) {
			build, ok := builders[key]
			if !ok {
				t.Fatalf("route %s (needs %s %s on the class of what it touches) has no builder in rev29b_route_walk_test.go: add one", key, r.Perm.Object, r.Perm.Action)
			}
			role := roleHolding(t, b, r.Perm, authz.RoleViewer, true)
			require.NotEmpty(t, role, "%s: no role holds %s %s and reads dead letters", key, r.Perm.Object, r.Perm.Action)
			client, u := b.SignIn(t, "acme:"+role)
			obj := build(t, b, u)
			require.NotEmpty(t, obj.class, "%s: the builder says the class of what the route touches", key)
			other := "dedupe"
			if obj.class == other {
				other = "rebuildable"
			}
			// Only this line changes, and only for this route: the others
			// are judged under the shipped policy (an approve judged after a
			// requester lost their request line is refused for that).
			var shipped []string
			require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(v2 ORDER BY v2), '{}') FROM casbin_rule
                WHERE ptype = 'p' AND v0 = $1 AND v3 = $2`, role, r.Perm.Action).Scan(&shipped))
			setPolicyLines(t, b, role, r.Perm.Action, authz.ReplayObject(other))
			defer setPolicyLines(t, b, role, r.Perm.Action, shipped...)
			require.False(t, b.Access.Can(u, "acme", authz.ReplayObject(obj.class), r.Perm.Action), "%s: %s holds %s on %s", key, role, r.Perm.Action, obj.class)
			require.True(t, web.PermittedSomewhere(b.Access, u, r.Perm), "%s: the person passes the route's gate", key)
			refusedAsItShould(t, b, r, obj, client, u, fmt.Sprintf("an acme %s whose %s line names %s only", role, r.Perm.Action, other))
		})
	}
	require.Positive(t, n, "the route table has replay routes")
}
