package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// targetStream makes the stream replays of acme publish into and returns
// a function reading the message ids it holds (each must be there once).
func targetStream(t *testing.T, b *testfactory.Console) func() []string {
	t.Helper()
	ctx := context.Background()
	s, err := b.JetStream.CreateStream(ctx, jetstreamConfig("APP", "app.>"))
	require.NoError(t, err)
	return func() []string {
		info, err := s.Info(ctx)
		require.NoError(t, err)
		var ids []string
		for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
			m, err := s.GetMsg(ctx, seq)
			require.NoError(t, err)
			id := m.Header.Get(dlq.HeaderNatsMsgID)
			require.NotContains(t, ids, id, "published twice")
			ids = append(ids, id)
		}
		return ids
	}
}

// runReplays runs a replay worker of the console until the test ends.
func runReplays(t *testing.T, b *testfactory.Console) {
	t.Helper()
	w := replay.NewWorker(b.Replays, b.JetStream, authz.Authority{Access: b.Access, Directory: authz.NewDirectory(b.Pool)}, nil,
		replay.WorkerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// setPolicyLines replaces the permission lines of role for act with one
// per object, as the owner of the schema does (the console's runtime role
// may not), and has the console load them.
func setPolicyLines(t *testing.T, b *testfactory.Console, role, act string, objects ...string) {
	t.Helper()
	ctx := context.Background()
	_, err := b.DB.OwnerPool.Exec(ctx, `DELETE FROM casbin_rule WHERE ptype = 'p' AND v0 = $1 AND v3 = $2`, role, act)
	require.NoError(t, err)
	for _, obj := range objects {
		_, err := b.DB.OwnerPool.Exec(ctx, `INSERT INTO casbin_rule (ptype, v0, v1, v2, v3) VALUES ('p', $1, '*', $2, $3)`, role, obj, act)
		require.NoError(t, err)
	}
	require.NoError(t, b.Access.Reload())
}

// TestClassSpecificPermissionLine gives on-call only the line
// "replay:rebuildable request" and approvers only "replay:same_operation
// approve", and viewers "deadletter resolve" without discard: each route
// gate lets them through on the class they hold, the handlers refuse the
// classes they do not, and resolve and discard are gated apart. What they
// may do is published; what they may not is not.
func TestClassSpecificPermissionLine(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	stream := targetStream(t, b)
	runReplays(t, b)
	setPolicyLines(t, b, authz.RoleOncall, authz.ActRequest, authz.ReplayObject("rebuildable"))
	setPolicyLines(t, b, authz.RoleApprover, authz.ActApprove, authz.ReplayObject("same_operation"))
	setPolicyLines(t, b, authz.RoleViewer, authz.ActResolve, authz.ObjDeadLetter)
	oncall, _ := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	viewer, _ := b.SignIn(t, "acme:viewer")

	// Rebuildable: the gate of POST /replay passes, and it is published.
	doc := seed(t, b, "acme", "search.index_update", "perm-doc", nil)
	reqPath := requestReplay(t, b, oncall, doc)
	r, err := b.Replays.Request(ctx, mustID(t, reqPath))
	require.NoError(t, err)
	assert.Equal(t, replay.StatusApproved, r.Status)
	wait.Until(t, "the rebuildable replay published", 30*time.Second, func() bool { return len(stream()) == 1 })

	// Manual: the draft leaves it out (and the refusal is audited).
	refund := seed(t, b, "acme", "orders.refund", "perm-refund", nil)
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(refund)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	page := b.Do(t, oncall, "GET", resp.Header.Get("Location"), nil, nil)
	assert.Contains(t, page.Doc(t).Find(`[data-testid="replay-skip-reason"]`).Text(), "you may not request manual replays in tenant acme")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'replay.draft' AND outcome = 'denied' AND reason LIKE '%may not request manual replays in acme%'"))

	// same_operation: on-call may not request it; approvers may approve it.
	mail := seed(t, b, "acme", "email.send", "perm-mail", map[string][]string{dlq.HeaderOperationID: {"op-perm"}})
	_, oncall2 := b.SignIn(t, "acme:oncall")
	setPolicyLines(t, b, authz.RoleOncall, authz.ActRequest, authz.ReplayObject("rebuildable"), authz.ReplayObject("same_operation"))
	req := testfactory.Request(t, b.Replays, oncall2.Actor, []int64{mail}, replay.SubmitInput{})
	require.NoError(t, authz.NewDirectory(b.Pool).Remember(ctx, oncall2))
	assert.Equal(t, http.StatusOK, b.Do(t, approver, "GET", "/approvals", nil, nil).Status, "the approvals route passes on one class")
	resp = b.Do(t, approver, "POST", fmt.Sprintf("/replay/requests/%d/approve", req.ID), url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	wait.Until(t, "the approved same_operation replay published", 30*time.Second, func() bool { return len(stream()) == 2 })

	// Resolve and discard have their own gates.
	a, c := seed(t, b, "acme", "search.index_update", "perm-a", nil), seed(t, b, "acme", "search.index_update", "perm-c", nil)
	resp = b.Do(t, viewer, "POST", "/deadletters/discard", url.Values{"id": {fmt.Sprint(a)}, "reason": {"x"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "resolve does not let a viewer discard")
	resolve := url.Values{"id": {fmt.Sprint(a), fmt.Sprint(c)}, "reason": {"fixed by hand"}}
	resp = b.Do(t, viewer, "POST", "/deadletters/resolve", resolve, nil)
	require.Equal(t, http.StatusOK, resp.Status, "asks first")
	resolve.Set("confirmed", "1")
	resp = b.Do(t, viewer, "POST", "/deadletters/resolve", resolve, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	for _, id := range []int64{a, c} {
		d, err := dlq.NewStore(b.Pool).Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, dlq.StatusResolved, d.Status)
	}
	assert.ElementsMatch(t, []string{"perm-doc", "perm-mail"}, stream(), "only what each line allows was replayed")
}

// TestRefusedBulkIdsAudited sends bulk routes ids they refuse: another
// tenant's and a missing one in POST /replay, someone else's selection,
// and a dead letter that is no longer open in a bulk discard. Each request
// writes one denied audit row naming its refused ids; what was allowed is
// still drafted and published, and only that.
func TestRefusedBulkIdsAudited(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	stream := targetStream(t, b)
	runReplays(t, b)
	oncall, me := b.SignIn(t, "acme:oncall")
	colleague, other := b.SignIn(t, "acme:oncall")
	mine := seed(t, b, "acme", "search.index_update", "refused-mine", nil)
	globex := seed(t, b, "globex", "search.index_update", "refused-globex", nil)
	const missing = 987654321
	denied := func(who string) int {
		return b.AuditCount(t, "outcome = 'denied' AND actor_subject = $1", who)
	}

	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(mine), fmt.Sprint(globex), fmt.Sprint(missing)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	assert.Equal(t, 2, denied(me.Subject), "one row for the other tenant's id, one for the missing one")
	var after []byte
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT after FROM audit_log WHERE action = 'replay.draft' AND outcome = 'denied' AND actor_subject = $1`,
		me.Subject).Scan(&after))
	var refused struct {
		Refused map[string][]int64 `json:"refused"`
		Count   int                `json:"count"`
	}
	require.NoError(t, json.Unmarshal(after, &refused))
	assert.Equal(t, map[string][]int64{"no such dead letter": {missing}}, refused.Refused)
	assert.Equal(t, 1, b.AuditCount(t, "action = 'authz.denied' AND actor_subject = $1 AND object_id = $2", me.Subject, fmt.Sprint(globex)))

	// Someone else's selection: not found, and audited, to look at and to submit.
	assert.Equal(t, http.StatusNotFound, b.Do(t, colleague, "GET", confirm, nil, nil).Status)
	assert.Equal(t, http.StatusNotFound, b.Do(t, colleague, "POST", confirm, url.Values{"reason": {"mine now"}}, nil).Status)
	batch := strings.TrimPrefix(confirm, "/replay/batches/")
	assert.Equal(t, 2, b.AuditCount(t, "outcome = 'denied' AND actor_subject = $1 AND object_type = 'replay_batch' AND object_id = $2", other.Subject, batch))

	// A bulk discard with one dead letter no longer open: nothing changes,
	// one denied row names it.
	open := seed(t, b, "acme", "search.index_update", "refused-open", nil)
	closed := seed(t, b, "acme", "search.index_update", "refused-closed", nil)
	require.Equal(t, http.StatusSeeOther, b.Do(t, oncall, "POST", "/deadletters/discard", url.Values{"id": {fmt.Sprint(closed)}, "reason": {"dup"},
		"confirmed": {"1"}}, nil).Status)
	before := denied(me.Subject)
	resp = b.Do(t, oncall, "POST", "/deadletters/discard", url.Values{"id": {fmt.Sprint(open), fmt.Sprint(closed)}, "reason": {"dup"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "refused whole: the confirmation again, of the open one")
	assert.Equal(t, before+1, denied(me.Subject), "one row for the request")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'deadletter.discard' AND outcome = 'denied' AND object_id = $1 AND reason LIKE '%not open (discarded)%'", fmt.Sprint(closed)))
	d, err := dlq.NewStore(b.Pool).Get(ctx, open)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusQuarantined, d.Status, "all or nothing")

	// What was allowed goes through, and only that.
	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"indexer fixed"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	wait.Until(t, "the allowed replay published", 30*time.Second, func() bool { return len(stream()) == 1 })
	assert.Equal(t, []string{"refused-mine"}, stream())
}
