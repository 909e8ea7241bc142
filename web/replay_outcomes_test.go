package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// runWorker runs a replay worker of b's requests until the test ends.
func runWorker(t *testing.T, b *testfactory.Console) {
	t.Helper()
	w := replay.NewWorker(b.Replays, b.JetStream, authz.Authority{Access: b.Access, Directory: authz.NewDirectory(b.Pool)}, nil,
		replay.WorkerConfig{Poll: 20 * time.Millisecond}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// slowRequest submits ids as requester's request at rate messages per
// second, every job due at once (a backlog), and returns it.
func slowRequest(t *testing.T, b *testfactory.Console, requester quarantine.Actor, rate float64, ids ...int64) replay.Request {
	t.Helper()
	ctx := context.Background()
	batch, drafts := testfactory.Draft(t, b.Replays, requester, ids...)
	reqs, err := b.Replays.Submit(ctx, batch, requester, replay.SubmitInput{Reason: "reindex", Rates: map[int64]float64{drafts[0].ID: rate}},
		quarantine.RequestMeta{})
	require.NoError(t, err)
	_, err = b.Pool.Exec(ctx, `UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`, reqs[0].ID)
	require.NoError(t, err)
	return reqs[0]
}

// TestEmergencyStopByApprover stops a running replay from its page as an
// approver who did not request it: the page offers them the stop (and not
// the requester), the stop needs a reason and the typed STOP, nothing is
// published after it, and it is audited under the approver. Someone
// without the right is refused; an admin of the tenant stops every replay
// of the tenant from the emergency stop page, and not another tenant's.
func TestEmergencyStopByApprover(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, requester := b.SignIn(t, "acme:oncall")
	otherOncall, _ := b.SignIn(t, "acme:oncall")
	approver, approverUser := b.SignIn(t, "acme:approver")
	admin, _ := b.SignIn(t, "acme:admin")
	app, err := b.JetStream.CreateStream(ctx, jetstreamConfig("APP", "app.>"))
	require.NoError(t, err)
	var ids []int64
	for i := range 20 {
		ids = append(ids, seed(t, b, "acme", "search.index_update", fmt.Sprint("stop-", i), nil))
	}
	// One a second: the stop below comes while most of the twenty still
	// wait, however slow the machine is between the first messages and it.
	req := slowRequest(t, b, requester.Actor, 1, ids...)
	runWorker(t, b)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	wait.Until(t, "the first messages", 30*time.Second, func() bool { return streamCount(t, app) >= 2 })

	assert.Zero(t, b.Do(t, oncall, "GET", path, nil, nil).Doc(t).Find(`[data-testid="stop-form"]`).Length(), "the requester cancels; they stop nothing")
	page := b.Do(t, approver, "GET", path, nil, nil).Doc(t)
	require.Equal(t, 1, page.Find(`[data-testid="stop-form"]`).Length(), "an approver may stop a request they did not make")

	denied := b.AuditCount(t, "outcome = 'denied'")
	resp := b.Do(t, otherOncall, "POST", path+"/stop", url.Values{"reason": {"mine now"}, "confirm": {"STOP"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "an on-call who did not request it may not stop it")
	assert.Equal(t, denied+1, b.AuditCount(t, "outcome = 'denied'"))

	resp = b.Do(t, approver, "POST", path+"/stop", url.Values{"reason": {"wrong index"}, "confirm": {"stop"}}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
	assert.Contains(t, resp.Doc(t).Find(`[data-testid="field-error-stop"]`).Text(), `type "STOP" to stop`)

	resp = b.Do(t, approver, "POST", path+"/stop", url.Values{"reason": {"wrong index"}, "confirm": {"STOP"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	atStop := streamCount(t, app)
	wait.Until(t, "no job left running", 30*time.Second, func() bool { return runningJobs(t, b, req.ID) == 0 })
	r, err := b.Replays.Request(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, r.Status)
	assert.Equal(t, "emergency stop: wrong index", r.StatusReason)
	var replayed int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = $1 AND state = 'replayed'`, req.ID).Scan(&replayed))
	assert.Equal(t, replayed, streamCount(t, app), "the stream holds exactly what was recorded replayed")
	assert.LessOrEqual(t, streamCount(t, app), atStop+1, "at most the publish in flight when the stop committed")
	assert.Equal(t, 1, b.AuditCount(t, "action = 'replay.stop' AND actor_subject = $1 AND object_id = $2 AND reason LIKE '%wrong index'",
		approverUser.Subject, fmt.Sprint(req.ID)))

	// An admin of the tenant stops everything of it that still runs.
	var more []int64
	for i := range 5 {
		more = append(more, seed(t, b, "acme", "search.index_update", fmt.Sprint("stop-more-", i), nil))
	}
	second := slowRequest(t, b, requester.Actor, 0.2, more...) // one each 5 s: still running at the stop
	stopPage := b.Do(t, admin, "GET", "/replay/stop", nil, nil)
	require.Equal(t, http.StatusOK, stopPage.Status)
	assert.Contains(t, stopPage.Doc(t).Find(`[data-testid="stop-requests"]`).Text(), fmt.Sprint("#", second.ID))
	resp = b.Do(t, admin, "POST", "/replay/stop", url.Values{"tenant": {"globex"}, "reason": {"x"}, "confirm": {"STOP"}}, nil)
	assert.Equal(t, http.StatusNotFound, resp.Status, "not another tenant's: as for a tenant that does not exist")
	resp = b.Do(t, admin, "POST", "/replay/stop", url.Values{"tenant": {"acme"}, "reason": {"incident 42"}, "confirm": {"STOP"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	wait.Until(t, "the second request stopped", 30*time.Second, func() bool { return runningJobs(t, b, second.ID) == 0 })
	r, err = b.Replays.Request(ctx, second.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.StatusCancelled, r.Status)
}

func streamCount(t *testing.T, s jetstream.Stream) int {
	t.Helper()
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return int(info.State.Msgs)
}

func runningJobs(t *testing.T, b *testfactory.Console, requestID int64) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM replay_jobs WHERE request_id = $1
        AND state IN ('pending', 'claimed', 'deferred', 'unknown')`, requestID).Scan(&n))
	return n
}

// TestFixMarkerAllowsSchemaInvalid records fixes from the pages as an
// on-call: a schema_invalid dead letter stays refused while the only fix
// recorded is older than it (the confirm page names the rule), a fix of
// its error group covers it and not another group of the item type, a fix
// of the item type covers both; then it replays through the pages and the
// target stream holds it, once an approver approved it (the fixes are the
// requester's own). Fixes are audited, need the right, and bad input
// re-renders the form with the message.
func TestFixMarkerAllowsSchemaInvalid(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, oncallUser := b.SignIn(t, "acme:oncall")
	viewer, _ := b.SignIn(t, "acme:viewer")
	app, err := b.JetStream.CreateStream(ctx, jetstreamConfig("APP", "app.>"))
	require.NoError(t, err)
	letter := func(msgID, errText string) int64 {
		return testfactory.DeadLetter(t, b.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID, Class: "schema_invalid",
			Error: errText, At: time.Now().Add(-time.Hour), Payload: []byte(`{"doc":"` + msgID + `"}`)})
	}
	first := letter("fix-1", "decode: unknown field \"sku2\"")
	other := letter("fix-2", "decode: missing field \"version\"")
	fix := func(c *http.Client, id int64, scope string, at time.Time, ref string) testfactory.Response {
		return b.Do(t, c, "POST", fmt.Sprintf("/deadletters/%d/fix", id),
			url.Values{"scope": {scope}, "fixed_at": {at.UTC().Format("2006-01-02T15:04")}, "ref": {ref}, "note": {"consumer accepts it"}}, nil)
	}
	verdict := func(id int64) (string, string) {
		_, drafts := testfactory.Draft(t, b.Replays, oncallUser.Actor, id)
		items, err := b.Replays.Items(ctx, drafts[0].ID, 1)
		require.NoError(t, err)
		return items[0].Check, items[0].SkipReason
	}

	assert.Equal(t, http.StatusForbidden, fix(viewer, first, "item_type", time.Now(), "v1").Status, "a viewer records no fix")
	bad := fix(oncall, first, "item_type", time.Now(), "")
	assert.Equal(t, http.StatusUnprocessableEntity, bad.Status)
	assert.Contains(t, bad.Doc(t).Find(`[data-testid="fix-error-ref"]`).Text(), "Name the version or the ticket")

	require.Equal(t, http.StatusSeeOther, fix(oncall, first, "item_type", time.Now().Add(-2*time.Hour), "v1.4.1").Status)
	check, why := verdict(first)
	assert.Equal(t, replaypolicy.CheckNeedsFix, check)
	assert.Contains(t, why, `the latest fix recorded ("v1.4.1"`)
	assert.Contains(t, why, "is older than it")

	require.Equal(t, http.StatusSeeOther, fix(oncall, first, "group", time.Now(), "v1.4.2").Status)
	check, _ = verdict(first)
	assert.Empty(t, check, "the group's fix is later than it")
	check, _ = verdict(other)
	assert.Equal(t, replaypolicy.CheckNeedsFix, check, "a fix of one group does not cover another")
	require.Equal(t, http.StatusSeeOther, fix(oncall, other, "item_type", time.Now(), "OPS-77").Status)
	check, _ = verdict(other)
	assert.Empty(t, check, "a fix of the item type covers every group")
	assert.Equal(t, 3, b.AuditCount(t, "action = 'deadletter.fix' AND actor_subject = $1", oncallUser.Subject))

	detail := b.Do(t, oncall, "GET", fmt.Sprintf("/deadletters/%d", first), nil, nil).Doc(t)
	assert.Equal(t, 2, detail.Find(`[data-testid="fix"][data-covers="true"]`).Length(), "the group's and the item type's fixes, both after it")
	groups := b.Do(t, oncall, "GET", "/groups?state=all", nil, nil).Doc(t)
	assert.Positive(t, groups.Find(`[data-testid="group-row"] [data-testid="fix-form"]`).Length(), "the groups page records fixes too")

	// The fixes are the requester's own: like an edit, they count with one
	// approver who is not them, and the request page says why.
	reqPath := requestReplay(t, b, oncall, first)
	r, err := b.Replays.Request(ctx, mustID(t, reqPath))
	require.NoError(t, err)
	require.Equal(t, replay.StatusPendingApproval, r.Status)
	approver, _ := b.SignIn(t, "acme:approver")
	page := b.Do(t, approver, "GET", reqPath, nil, nil)
	assert.Contains(t, page.Body, "was recorded by the requester")
	require.Equal(t, http.StatusSeeOther, b.Do(t, approver, "POST", reqPath+"/approve", url.Values{"intent": {r.IntentHex()}, "version": {strconv.Itoa(r.Version)}}, nil).Status)
	runWorker(t, b)
	wait.Until(t, "the replay", 30*time.Second, func() bool { return streamCount(t, app) == 1 })
	m, err := app.GetLastMsgForSubject(ctx, "app.acme.search.index_update")
	require.NoError(t, err)
	assert.Equal(t, "fix-1", m.Header.Get(dlq.HeaderNatsMsgID))
	assert.True(t, strings.Contains(string(m.Data), "fix-1"))
}
