package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/web"
)

// TestEveryPathIDIsReadAsTheConsoleWritesIt walks the route table: every
// id a path carries (a dead letter, a replay request, an item, an audit
// entry, a role binding) is read only as the console writes it. The same
// id spelled with a leading zero or a plus sign names an object that
// exists, to a person who may do everything, and is answered 404 with
// nothing written naming the spelling: no row escapes its object's trail
// under a second name.
func TestEveryPathIDIsReadAsTheConsoleWritesIt(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	all, u := b.SignIn(t, "*:admin", "*:auditor", "*:oncall", "*:approver")
	dl := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", MsgID: "path-id"})
	req := testfactory.Request(t, b.Replays, u.Actor, []int64{dl}, replay.SubmitInput{})
	resp := b.Do(t, all, "POST", "/admin/bindings", url.Values{"email": {"pat@example.com"}, "role": {"viewer"}, "tenant": {"acme"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	var binding, seq int64
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT id FROM role_bindings WHERE subject = 'email:pat@example.com'`).Scan(&binding))
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT max(seq) FROM audit_log WHERE tenant = 'acme'`).Scan(&seq))

	// The id each parameter names, by the path it begins.
	idOf := func(path, param string) string {
		switch {
		case param == ":dl" || strings.HasPrefix(path, "/deadletters/"):
			return strconv.FormatInt(dl, 10)
		case strings.HasPrefix(path, "/replay/requests/"):
			return strconv.FormatInt(req.ID, 10)
		case strings.HasPrefix(path, "/admin/bindings/"):
			return strconv.FormatInt(binding, 10)
		case param == ":seq":
			return strconv.FormatInt(seq, 10)
		}
		t.Fatalf("%s: no object for %s", path, param)
		return ""
	}
	checked := 0
	for _, r := range (&web.Server{}).Routes() {
		var params []string
		for _, part := range strings.Split(r.Path, "/") {
			if part == ":id" || part == ":seq" || part == ":dl" {
				params = append(params, part)
			}
		}
		for _, spelled := range params {
			for _, spelling := range []func(string) string{
				func(id string) string { return "0" + id },
				func(id string) string { return "+" + id },
			} {
				path, typed := r.Path, ""
				for _, p := range params {
					id := idOf(r.Path, p)
					if p == spelled {
						id = spelling(id)
						typed = id
					}
					path = strings.Replace(path, p, id, 1)
				}
				resp := b.Do(t, all, r.Method, path, url.Values{"reason": {"path id"}}, nil)
				assert.Equal(t, http.StatusNotFound, resp.Status, "%s %s", r.Method, path)
				assert.Zero(t, b.AuditCount(t, "object_id = $1 OR strpos(reason, $2) > 0", typed, path),
					"%s %s: a row names the id as spelled", r.Method, path)
				checked++
			}
		}
	}
	assert.GreaterOrEqual(t, checked, 2*20, "every route with an id in its path")
}
