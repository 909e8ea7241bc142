package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevPath28StopNeedsTheClassInTheTenant: the stop route's gate lets
// through anyone who holds stop on some class in some tenant. An approver
// of acme whose stop line is "replay:manual stop" only, and a person who
// only reads acme but is an admin of globex, each try to stop one of
// acme's rebuildable requests, approved and waiting for its worker: each
// is forbidden, audited as denied naming the class's stop right in acme,
// and the request is still approved, its jobs still pending, no stop
// recorded. The replay service's Stop asks nothing of the person: the
// handler's class check is the one rule on this path. An approver whose
// line names the class does stop it.
func TestRevPath28StopNeedsTheClassInTheTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	setPolicyLines(t, b, authz.RoleApprover, authz.ActStop, authz.ReplayObject("manual"))
	_, requester := b.SignIn(t, "acme:oncall")
	otherClass, otherClassUser := b.SignIn(t, "acme:approver")
	otherTenant, otherTenantUser := b.SignIn(t, "acme:viewer", "globex:admin")
	stop := url.Values{"reason": {"wrong index"}, "confirm": {"STOP"}}

	// Each tries their own request, so that each refusal is proved alone.
	var first replay.Request
	for i, p := range []struct {
		who    string
		client *http.Client
		user   authz.User
	}{
		{"an acme viewer who is a globex admin", otherTenant, otherTenantUser},
		{"an acme approver whose stop line is replay:manual", otherClass, otherClassUser},
	} {
		doc := seed(t, b, "acme", "search.index_update", fmt.Sprint("rev28d-stop-", i), nil)
		req := testfactory.Request(t, b.Replays, requester.Actor, []int64{doc}, replay.SubmitInput{Reason: "reindex"})
		require.Equal(t, replay.StatusApproved, req.Status, "rebuildable needs no approver; no worker runs here")
		require.Equal(t, "rebuildable", string(req.Class))
		if i == 0 {
			first = req
		}

		resp := b.Do(t, p.client, "POST", fmt.Sprintf("/replay/requests/%d/stop", req.ID), stop, nil)
		assert.Equal(t, http.StatusForbidden, resp.Status, "%s stopping acme's rebuildable request", p.who)
		assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND tenant = 'acme' AND actor_subject = $1 AND reason LIKE $2",
			p.user.Subject, "needs "+authz.ReplayObject("rebuildable")+":stop for %"), "%s: the refused stop is audited", p.who)

		got, err := b.Replays.Request(ctx, req.ID)
		require.NoError(t, err)
		assert.Equal(t, replay.StatusApproved, got.Status, "%s: the request was not stopped", p.who)
		assert.Empty(t, got.StatusReason, p.who)
		assert.Equal(t, 1, runningJobs(t, b, req.ID), "%s: its job still waits for a worker", p.who)
		assert.Zero(t, b.AuditCount(t, "action = 'replay.stop' AND object_id = $1", fmt.Sprint(req.ID)), "%s: no stop was recorded", p.who)
	}

	// The class's line: the approver now stops it.
	setPolicyLines(t, b, authz.RoleApprover, authz.ActStop, authz.ReplayObject("rebuildable"))
	resp := b.Do(t, otherClass, "POST", fmt.Sprintf("/replay/requests/%d/stop", first.ID), stop, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	got, err := b.Replays.Request(ctx, first.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, got.Status)
	assert.Equal(t, 1, b.AuditCount(t, "action = 'replay.stop' AND actor_subject = $1 AND object_id = $2",
		otherClassUser.Subject, fmt.Sprint(first.ID)))
}

// TestRevPath28ReconcileNeedsTheClass: an approver of acme whose
// reconcile line is "replay:manual reconcile" only passes the reconcile
// route's gate, and settling an item of a rebuildable request whose
// outcome nobody can know is forbidden, audited as denied naming the
// class's reconcile right: the item still needs a person, the dead letter
// still waits, nothing is recorded as settled. The replay rules only ask
// whether the approver requested it: the handler's class check is the one
// rule on this path. With the class's line the same approver settles it.
func TestRevPath28ReconcileNeedsTheClass(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	setPolicyLines(t, b, authz.RoleApprover, authz.ActReconcile, authz.ReplayObject("manual"))
	_, requester := b.SignIn(t, "acme:oncall")
	approver, approverUser := b.SignIn(t, "acme:approver")
	doc := seed(t, b, "acme", "search.index_update", "rev28d-reconcile-class", nil)
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{doc}, replay.SubmitInput{Reason: "reindex"})
	require.Equal(t, "rebuildable", string(req.Class))
	testfactory.NeedsPerson(t, b.Pool, req.ID)
	reconcile := fmt.Sprintf("/replay/requests/%d/items/%d/reconcile", req.ID, doc)
	applied := url.Values{"choice": {"applied"}, "note": {"the index holds the doc"}}

	resp := b.Do(t, approver, "POST", reconcile, applied, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "settling a rebuildable item with a manual reconcile line only")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND tenant = 'acme' AND actor_subject = $1 AND reason LIKE $2",
		approverUser.Subject, "needs "+authz.ReplayObject("rebuildable")+":reconcile for %"), "the refused reconcile is audited")

	var state, dlStatus string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT state FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&state))
	assert.Equal(t, "needs_reconciliation", state, "the item still needs a person")
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT status FROM dead_letters WHERE id = $1`, doc).Scan(&dlStatus))
	assert.Equal(t, "needs_reconciliation", dlStatus, "the dead letter still waits")
	got, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusDoneWithProblems, got.Status)
	assert.Zero(t, b.AuditCount(t, "outcome = 'ok' AND action = 'replay.item.reconciled'"), "nothing was settled")

	// The class's line: the same approver settles it.
	setPolicyLines(t, b, authz.RoleApprover, authz.ActReconcile, authz.ReplayObject("rebuildable"))
	resp = b.Do(t, approver, "POST", reconcile, applied, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	got, err = b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusDone, got.Status)
	assert.Equal(t, 1, b.AuditCount(t, "outcome = 'ok' AND action = 'replay.item.reconciled' AND actor_subject = $1", approverUser.Subject))
}

// TestRevPath28FixNeedsFixInTheDeadLettersTenant: a person who reads
// acme (viewer) and is on-call in globex passes the fix route's gate
// (they hold "deadletter fix" in globex) and sees acme's dead letter, and
// recording a fix for it is forbidden, audited as denied in acme naming
// "deadletter:fix": no fix marker is written and no fix recorded. An
// acme on-call records the same fix.
func TestRevPath28FixNeedsFixInTheDeadLettersTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	reader, readerUser := b.SignIn(t, "acme:viewer", "globex:oncall")
	oncall, oncallUser := b.SignIn(t, "acme:oncall")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: "rev28d-fix",
		Class: "schema_invalid", Error: "decode: unknown field \"sku2\"", At: time.Now().Add(-time.Hour), Payload: []byte(`{"doc":1}`)})
	path := fmt.Sprintf("/deadletters/%d", id)
	fix := url.Values{"scope": {"item_type"}, "fixed_at": {time.Now().UTC().Format("2006-01-02T15:04")}, "ref": {"v1.4.2"}, "note": {"consumer accepts it"}}
	markers := func() int {
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM fix_markers WHERE tenant = 'acme'`).Scan(&n))
		return n
	}

	page := b.Do(t, reader, "GET", path, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, "the viewer reads acme's dead letter")
	resp := b.Do(t, reader, "POST", path+"/fix", fix, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "recording a fix in acme with the fix right in globex only")
	assert.Zero(t, markers(), "no fix marker was written")
	assert.Zero(t, b.AuditCount(t, "action = 'deadletter.fix'"), "no fix was recorded")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND tenant = 'acme' AND actor_subject = $1 AND reason LIKE $2",
		readerUser.Subject, "needs "+authz.ObjDeadLetter+":"+authz.ActFix+" for %"), "the refused fix is audited")

	resp = b.Do(t, oncall, "POST", path+"/fix", fix, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	assert.Equal(t, 1, markers(), "the acme on-call's fix is in place")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'deadletter.fix' AND actor_subject = $1", oncallUser.Subject))
}
