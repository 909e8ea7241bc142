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
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// seed stores a dead letter of tenant with the contract headers (and
// extra) and the payload {"x":1}, and returns its id.
func seed(t *testing.T, b *testfactory.Console, tenant, itemType, msgID string, extra map[string][]string) int64 {
	t.Helper()
	return testfactory.DeadLetter(t, b.Pool, testfactory.Letter{
		Tenant: tenant, ItemType: itemType, MsgID: msgID, Error: "boom", Payload: []byte(`{"x":1}`), Headers: extra,
	})
}

// requestReplay goes through the pages: POST /replay, the confirm page,
// submit with a reason. It returns the request page path.
func requestReplay(t *testing.T, b *testfactory.Console, c *http.Client, ids ...int64) string {
	t.Helper()
	form := url.Values{}
	for _, id := range ids {
		form.Add("id", fmt.Sprint(id))
	}
	resp := b.Do(t, c, "POST", "/replay", form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	page := b.Do(t, c, "GET", confirm, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	d := page.Doc(t)
	assert.Equal(t, len(ids), d.Find(`[data-testid="replay-sample"] [data-testid="replay-item"]`).Length())
	submit := url.Values{"reason": {"consumer fixed in 1.2.3"}}
	resp = b.Do(t, c, "POST", confirm, submit, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	return resp.Header.Get("Location")
}

func TestReplayApprovalThroughPages(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "email.send", "mail-77", map[string][]string{dlq.HeaderOperationID: {"send-77"}})

	reqPath := requestReplay(t, b, oncall, id)
	require.True(t, strings.HasPrefix(reqPath, "/replay/requests/"), reqPath)
	own := b.Do(t, oncall, "GET", reqPath, nil, nil)
	require.Equal(t, http.StatusOK, own.Status)
	d := own.Doc(t)
	assert.Zero(t, d.Find(`[data-testid="approve"]`).Length(), "no approve button on one's own request")
	assert.Equal(t, 1, d.Find(`[data-testid="cancel"]`).Length())
	intent := strings.TrimSpace(d.Find(`[data-testid="replay-intent"]`).Text())
	require.NotEmpty(t, intent)

	r, err := b.Replays.Request(ctx, mustID(t, reqPath))
	require.NoError(t, err)
	crafted := b.Do(t, oncall, "POST", reqPath+"/approve", url.Values{"intent": {r.IntentHex()}, "version": {strconv.Itoa(r.Version)}}, nil)
	assert.Equal(t, http.StatusForbidden, crafted.Status, "a crafted approve by the requester is refused")

	list := b.Do(t, approver, "GET", "/approvals", nil, nil).Doc(t)
	require.Equal(t, 1, list.Find(`[data-testid="approval-row"]`).Length())
	page := b.Do(t, approver, "GET", reqPath, nil, nil).Doc(t)
	assert.Contains(t, page.Find(`[data-testid="replay-intent"]`).Text(), r.IntentHex(), "the approver sees the intent hash")
	assert.Contains(t, page.Find(`[data-testid="replay-items"]`).Text(), "app.acme.email.send")
	form := page.Find(`[data-testid="approve-form"]`)
	require.Equal(t, 1, form.Length())
	hidden, _ := form.Find(`input[name="intent"]`).Attr("value")
	version := form.Find(`input[name="version"]`).AttrOr("value", "")
	assert.Equal(t, r.IntentHex(), hidden)

	resp := b.Do(t, approver, "POST", reqPath+"/approve", url.Values{"intent": {hidden}, "version": {version}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	again := b.Do(t, approver, "POST", reqPath+"/approve", url.Values{"intent": {hidden}, "version": {version}}, nil)
	assert.Equal(t, http.StatusConflict, again.Status, "a second click changes nothing")
	var jobs int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = $1`, r.ID).Scan(&jobs))
	assert.Equal(t, 1, jobs)

	// The worker publishes it once.
	_, err = b.JetStream.CreateStream(ctx, jetstreamConfig("APP", "app.>"))
	require.NoError(t, err)
	w := replay.NewWorker(b.Replays, b.JetStream, authz.Authority{Access: b.Access, Directory: authz.NewDirectory(b.Pool)}, nil,
		replay.WorkerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	progress := b.Do(t, approver, "GET", reqPath+"/progress", nil, nil).Doc(t)
	assert.Equal(t, "1", strings.TrimSpace(progress.Find(`[data-testid="progress-replayed"]`).Text()))
}

func TestReplayConfirmShowsSkippedAndNeedsReason(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	ok := seed(t, b, "acme", "search.index_update", "doc-1", nil)
	noOp := seed(t, b, "acme", "email.send", "mail-noop", nil) // same_operation without an operation id
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(ok), fmt.Sprint(noOp)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status)
	confirm := resp.Header.Get("Location")
	d := b.Do(t, oncall, "GET", confirm, nil, nil).Doc(t)
	assert.Equal(t, 2, d.Find(`[data-testid="replay-group"]`).Length(), "one request per class")
	assert.Contains(t, d.Find(`[data-testid="replay-skip-reason"]`).Text(), "cannot guarantee idempotency")

	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"  "}}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status)
	assert.Contains(t, resp.Doc(t).Find(`[data-testid="field-error-reason"]`).Text(), "Say why")

	other, _ := b.SignIn(t, "acme:oncall")
	assert.Equal(t, http.StatusNotFound, b.Do(t, other, "GET", confirm, nil, nil).Status, "someone else's selection is not found")

	globex, _ := b.SignIn(t, "globex:oncall")
	resp = b.Do(t, globex, "POST", "/replay", url.Values{"id": {fmt.Sprint(ok)}}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "another tenant's dead letter is not selectable")
}

func TestDiscardNeedsReasonAndVersion(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall")
	viewer, _ := b.SignIn(t, "acme:viewer")
	id := seed(t, b, "acme", "orders.refund", "refund-9", nil)
	path := fmt.Sprintf("/deadletters/%d/discard", id)
	assert.Equal(t, http.StatusForbidden, b.Do(t, viewer, "POST", path, url.Values{"reason": {"x"}, "version": {"1"}}, nil).Status)
	resp := b.Do(t, oncall, "POST", path, url.Values{"version": {"1"}, "confirmed": {"1"}}, nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "no reason: asked again, at the field")
	assert.Equal(t, 1, byID(resp.Doc(t), "field-error-reason").Length())
	form := url.Values{"reason": {"duplicate of refund-8"}, "version": {"1"}}
	resp = b.Do(t, oncall, "POST", path, form, nil)
	require.Equal(t, http.StatusOK, resp.Status, "not confirmed: the confirmation page")
	assert.Equal(t, "duplicate of refund-8", byID(resp.Doc(t), "confirm-reason").Text())
	d, err := dlq.NewStore(b.Pool).Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, dlq.StatusQuarantined, d.Status, "nothing happens before the confirmation")
	form.Set("confirmed", "1")
	resp = b.Do(t, oncall, "POST", path, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	d, err = dlq.NewStore(b.Pool).Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusDiscarded, d.Status)
	globex, _ := b.SignIn(t, "globex:oncall")
	assert.Equal(t, http.StatusNotFound, b.Do(t, globex, "POST", fmt.Sprintf("/deadletters/%d/resolve", id), url.Values{"reason": {"x"}}, nil).Status)
	assert.Equal(t, 1, b.AuditCount(t, "action = 'deadletter.discard' AND reason = 'duplicate of refund-8'"))
}

func TestPolicyPage(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	c, _ := b.SignIn(t, "acme:oncall")
	d := b.Do(t, c, "GET", "/policy", nil, nil).Doc(t)
	assert.Equal(t, b.Replays.Policy().Version(), strings.TrimSpace(d.Find(`[data-testid="policy-version"]`).Text()))
	assert.GreaterOrEqual(t, d.Find(`[data-testid="policy-rule"]`).Length(), 5)
	assert.Contains(t, d.Find(`[data-testid="policy-classes"]`).Text(), "manual")
}

func mustID(t *testing.T, path string) int64 {
	t.Helper()
	var id int64
	_, err := fmt.Sscanf(path, "/replay/requests/%d", &id)
	require.NoError(t, err)
	return id
}

func jetstreamConfig(name, subject string) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: name, Subjects: []string{subject}}
}

func TestBulkReplayFromFilterFreezesTheSet(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall")
	for i := range 4 {
		seed(t, b, "acme", "search.index_update", fmt.Sprint("bulk-", i), nil)
	}
	seed(t, b, "acme", "analytics.event", "other-type", nil)
	seed(t, b, "globex", "search.index_update", "other-tenant", nil)

	resp := b.Do(t, oncall, "POST", "/replay/filter?type=search.index_update", url.Values{}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	seed(t, b, "acme", "search.index_update", "late-arrival", nil) // after the set was frozen
	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"indexer fixed"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	r, err := b.Replays.Request(ctx, mustID(t, resp.Header.Get("Location")))
	require.NoError(t, err)
	assert.Equal(t, 4, r.ItemCount, "the four that matched when asked; not the other type, tenant or the late arrival")
	assert.Equal(t, replay.StatusApproved, r.Status)

	assert.Equal(t, http.StatusUnprocessableEntity, b.Do(t, oncall, "POST", "/replay/filter", url.Values{}, nil).Status, "no filter: no bulk")
}

func TestPayloadEditThroughPageIsANewIntent(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, _ := b.SignIn(t, "acme:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := seed(t, b, "acme", "accounts.permission_grant", "grant-9", map[string][]string{dlq.HeaderPrincipal: {"user:9"}})
	reqPath := requestReplay(t, b, oncall, id)
	before, err := b.Replays.Request(ctx, mustID(t, reqPath))
	require.NoError(t, err)

	page := b.Do(t, oncall, "GET", reqPath, nil, nil).Doc(t)
	form := page.Find(`[data-testid="payload-edit-form"]`)
	require.Equal(t, 1, form.Length(), "the requester may edit a revalidate payload before approval")
	assert.Equal(t, `{"x":1}`, strings.TrimSpace(form.Find(`[data-testid="payload-edit"]`).Text()))
	action, _ := form.Attr("action")
	assert.Zero(t, b.Do(t, approver, "GET", reqPath, nil, nil).Doc(t).Find(`[data-testid="payload-edit-form"]`).Length(), "only the requester")

	resp := b.Do(t, approver, "POST", action, url.Values{"payload": {`{"x":2}`}, "reason": {"x must be 2"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "an approver cannot change what they approve")
	resp = b.Do(t, oncall, "POST", action, url.Values{"payload": {`{"x":2}`}}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.Status, "an edit needs a reason")
	resp = b.Do(t, oncall, "POST", action, url.Values{"payload": {`{"x":2}`}, "reason": {"x must be 2"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	after, err := b.Replays.Request(ctx, before.ID)
	require.NoError(t, err)
	assert.NotEqual(t, before.IntentHex(), after.IntentHex())
	assert.True(t, after.PayloadEdited)
	stale := b.Do(t, approver, "POST", reqPath+"/approve", url.Values{"intent": {before.IntentHex()}, "version": {strconv.Itoa(before.Version)}}, nil)
	assert.Equal(t, http.StatusConflict, stale.Status, "an approval of the old intent is refused")

	mail := seed(t, b, "acme", "email.send", "mail-9", map[string][]string{dlq.HeaderOperationID: {"op-9"}})
	mailPath := requestReplay(t, b, oncall, mail)
	assert.Zero(t, b.Do(t, oncall, "GET", mailPath, nil, nil).Doc(t).Find(`[data-testid="payload-edit-form"]`).Length(),
		"same_operation payloads are never edited")
	resp = b.Do(t, oncall, "POST", fmt.Sprintf("%s/items/%d/payload", mailPath, mail), url.Values{"payload": {"{}"}, "reason": {"r"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status)
}

// TestSubmittedBatchReloadRedirects reloads the confirm page of a batch
// already submitted (the browser's back button, a second tab): it answers
// one redirect to the request it became, with nothing of the confirm page
// after it, and so do the other people's.
func TestSubmittedBatchReloadRedirects(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	oncall, _ := b.SignIn(t, "acme:oncall")
	id := seed(t, b, "acme", "search.index_update", "doc-reload", nil)
	resp := b.Do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(id)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	confirm := resp.Header.Get("Location")
	resp = b.Do(t, oncall, "POST", confirm, url.Values{"reason": {"indexer fixed"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	reqPath := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(reqPath, "/replay/requests/"), reqPath)

	reload := b.Do(t, oncall, "GET", confirm, nil, nil)
	assert.Equal(t, http.StatusSeeOther, reload.Status)
	assert.Equal(t, reqPath, reload.Header.Get("Location"), "to the request the batch became")
	assert.NotContains(t, reload.Body, `data-testid="replay-group"`, "no confirm page written after the redirect")
	assert.NotContains(t, reload.Body, "<html", "nothing but the redirect")
	page := b.Do(t, oncall, "GET", reqPath, nil, nil)
	assert.Equal(t, http.StatusOK, page.Status)

	other, _ := b.SignIn(t, "acme:oncall")
	assert.Equal(t, http.StatusNotFound, b.Do(t, other, "GET", confirm, nil, nil).Status, "someone else's selection, submitted or not, is not found")
}
