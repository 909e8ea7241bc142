package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/views"
	"github.com/quarantine-console/quarantine/web"
)

// TestEveryGetThatWritesIsMarked walks the route table and calls every GET
// on objects that exist, as a person who holds every role everywhere: a
// GET that writes an audit row under them (or an export's checkpoint) is
// one the table marks (Route.Writes), and a marked one writes. Each marked
// route, started by another site (Sec-Fetch-Site cross-site or same-site),
// answers 403 and writes nothing, not even a denial, and so does one the
// browser says nothing started ("none": typed in, a bookmark, or a link
// opened from a mail or chat application); from the console's own pages
// or from a client without fetch metadata (curl) it runs.
func TestEveryGetThatWritesIsMarked(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := t.Context()
	_, requester := b.SignIn(t, "acme:oncall")
	dl := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "m-1"})
	mail := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "email.send", MsgID: "m-2", OperationID: "op-2"})
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{mail}, replay.SubmitInput{})
	entry, err := audit.AppendFunc(ctx, b.Pool, audit.Event{Tenant: "acme", Action: "test.thing", Outcome: audit.OutcomeOK})
	require.NoError(t, err)

	c, me := b.SignIn(t, "*:admin", "*:auditor", "*:oncall", "*:approver")
	batch, _ := testfactory.Draft(t, b.Replays, me.Actor, dl) // a selection is found by its requester only
	objects := map[string]string{
		"dead_letter": fmt.Sprint(dl), "replay_request": fmt.Sprint(req.ID), "replay_batch": batch, "audit_entry": fmt.Sprint(entry.Seq),
	}
	written := func() (rows, checkpoints int) {
		rows = b.AuditCount(t, "actor_subject = $1", me.Subject)
		require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM audit_checkpoints WHERE reason = $1", audit.ReasonExport).Scan(&checkpoints))
		return rows, checkpoints
	}
	get := func(path string, fetchSite string) (testfactory.Response, bool) {
		rows, cps := written()
		var hdr map[string]string
		if fetchSite != "" {
			hdr = map[string]string{"Sec-Fetch-Site": fetchSite, "Sec-Fetch-Mode": "navigate"}
		}
		resp := b.Do(t, c, http.MethodGet, path, nil, hdr)
		rows2, cps2 := written()
		return resp, rows2 != rows || cps2 != cps
	}

	marked := 0
	for _, r := range (&web.Server{}).Routes() {
		if r.Method != http.MethodGet {
			assert.False(t, r.Writes, "%s %s: only a GET needs the mark", r.Method, r.Path)
			continue
		}
		name, path := r.Method+" "+r.Path, concretePath(r.Path)
		if r.Locate != nil {
			id, ok := objects[r.Locate.Object]
			require.True(t, ok, "%s: no %s to call it on", name, r.Locate.Object)
			path = strings.ReplaceAll(r.Path, ":"+r.Locate.Param, id)
			path = strings.ReplaceAll(path, ":dl", fmt.Sprint(mail))
		}
		if r.Path == views.PathGroupOffer { // a row's replay offer is of one group: dl's
			var fp string
			require.NoError(t, b.Pool.QueryRow(ctx, "SELECT fingerprint FROM dead_letters WHERE id = $1", dl).Scan(&fp))
			path += "?group=" + fp
		}
		resp, wrote := get(path, "")
		if r.Access != web.AccessPublic {
			require.Less(t, resp.Status, http.StatusBadRequest, "%s: the handler ran", name)
		}
		assert.Equal(t, r.Writes, wrote, "%s: writes, and the table marks it so (Route.Writes)", name)
		if !r.Writes {
			continue
		}
		marked++
		for _, site := range []string{"cross-site", "same-site", "something-new"} {
			resp, wrote := get(path, site)
			assert.Equal(t, http.StatusForbidden, resp.Status, "%s from %s", name, site)
			assert.Contains(t, resp.Body, "This link came from another site.", "%s from %s", name, site)
			assert.False(t, wrote, "%s from %s: wrote", name, site)
		}
		resp, wrote = get(path, "none") // opened from outside the console: a link in a chat may come from anyone
		assert.Equal(t, http.StatusForbidden, resp.Status, "%s from none", name)
		assert.Contains(t, resp.Body, "This link was opened from outside the console", "%s from none", name)
		assert.False(t, wrote, "%s from none: wrote", name)
		for _, site := range []string{"same-origin"} {
			resp, wrote := get(path, site)
			assert.Equal(t, http.StatusOK, resp.Status, "%s from %s", name, site)
			assert.True(t, wrote, "%s from %s: the audit row", name, site)
		}
	}
	assert.Equal(t, 4, marked, "the exports (CSV, JSON lines) and both payload downloads")
}
