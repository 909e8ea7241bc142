package web_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/web"
)

// TestRevWeb25RouteTableIsThePermissionTable pins what each route
// requires, written out here, independently of the table in routes.go.
// TestRouteTablePermissions takes each route's permission from the route
// table itself (r.Perm) and checks that the middleware enforces it: a
// route whose permission is weakened in the table (POST
// /deadletters/resolve/filter needing deadletter:read, which a viewer
// holds) still passes it, since it then checks the weaker permission. A
// change to what a route requires must change this table too, on purpose.
func TestRevWeb25RouteTableIsThePermissionTable(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		// Public: anyone.
		"GET /healthz": "public", "GET /readyz": "public", "GET /static/*": "public", "HEAD /static/*": "public",
		"GET /auth/login": "public", "GET /auth/callback": "public", "GET /signed-out": "public", "POST /auth/logout": "public",
		// Any signed-in person.
		"GET /": "signed in", "POST /settings/time": "signed in",
		// Signed in, holding the permission in some tenant.
		"GET /audit":                                    "audit read",
		"GET /audit/export.csv":                         "audit export",
		"GET /audit/export.jsonl":                       "audit export",
		"GET /audit/:seq":                               "audit read",
		"POST /audit/verify":                            "audit read",
		"GET /admin/bindings":                           "bindings read",
		"POST /admin/bindings":                          "bindings manage",
		"POST /admin/bindings/:id/delete":               "bindings manage",
		"GET /admin/sessions":                           "sessions revoke",
		"POST /admin/sessions/revoke":                   "sessions revoke",
		"GET /deadletters":                              "deadletter read",
		"GET /deadletters/count":                        "deadletter read",
		"GET /deadletters/:id":                          "deadletter read",
		"GET /deadletters/:id/payload":                  "deadletter download",
		"GET /deadletters/:id/error.txt":                "deadletter read",
		"GET /deadletters/:id/headers.json":             "deadletter read",
		"GET /deadletters/:id/stack.txt":                "deadletter read",
		"GET /groups":                                   "deadletter read",
		"GET /groups/offer":                             "deadletter read",
		"POST /groups/triage":                           "deadletter triage",
		"POST /groups/snooze":                           "deadletter triage",
		"POST /groups/wake":                             "deadletter triage",
		"POST /groups/owner":                            "deadletter triage",
		"POST /groups/note":                             "deadletter triage",
		"POST /replay":                                  "replay:* request",
		"POST /replay/filter":                           "replay:* request",
		"GET /replay/batches/:batch":                    "replay:* request",
		"POST /replay/batches/:batch":                   "replay:* request",
		"GET /replay/requests":                          "deadletter read",
		"GET /replay/requests/:id":                      "deadletter read",
		"GET /replay/requests/:id/progress":             "deadletter read",
		"POST /replay/requests/:id/approve":             "replay:* approve",
		"POST /replay/requests/:id/reject":              "replay:* reject",
		"POST /replay/requests/:id/cancel":              "replay:* cancel",
		"POST /replay/requests/:id/again":               "replay:* request",
		"GET /replay/requests/:id/items/:dl/payload":    "deadletter download",
		"POST /replay/requests/:id/items/:dl/payload":   "replay:* request",
		"POST /replay/requests/:id/items/:dl/reconcile": "replay:* reconcile",
		"POST /replay/requests/:id/stop":                "replay:* stop",
		"GET /replay/stop":                              "replay:* stop",
		"POST /replay/stop":                             "replay:* stop",
		"GET /approvals":                                "replay:* approve",
		"GET /policy":                                   "policy read",
		"POST /deadletters/:id/discard":                 "deadletter discard",
		"POST /deadletters/:id/resolve":                 "deadletter resolve",
		"POST /deadletters/:id/fix":                     "deadletter fix",
		"POST /deadletters/discard":                     "deadletter discard",
		"POST /deadletters/resolve":                     "deadletter resolve",
		"POST /deadletters/discard/filter":              "deadletter discard",
		"POST /deadletters/resolve/filter":              "deadletter resolve",
	}
	got := map[string]string{}
	for _, r := range (&web.Server{}).Routes() {
		key := r.Method + " " + r.Path
		switch r.Access {
		case web.AccessPublic:
			got[key] = "public"
		case web.AccessSignedIn:
			got[key] = "signed in"
		case web.AccessPerm:
			got[key] = r.Perm.Object + " " + r.Perm.Action
		default:
			got[key] = "undeclared"
		}
	}
	delete(got, "GET /metrics") // only with METRICS_TOKEN set: TestMetricsNotPublic
	for _, key := range slices.Sorted(maps.Keys(want)) {
		assert.Equal(t, want[key], got[key], "%s requires", key)
	}
	for _, key := range slices.Sorted(maps.Keys(got)) {
		_, ok := want[key]
		assert.True(t, ok, "%s (%s) is not in the permission table of this test", key, got[key])
	}
}
