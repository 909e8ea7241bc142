package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

var seedSeq sync.Map

// seed stores a dead letter of tenant with the contract headers and
// returns its id.
func (b *bundle) seed(t *testing.T, tenant, itemType, msgID string, extra map[string][]string) int64 {
	t.Helper()
	n, _ := seedSeq.LoadOrStore(b.db.Name, new(int64))
	seq := n.(*int64)
	*seq++
	h := map[string][]string{
		dlq.HeaderOriginalSubject: {"app." + tenant + "." + itemType}, dlq.HeaderOriginalMsgID: {msgID},
		dlq.HeaderError: {"boom"}, dlq.HeaderErrorClass: {"permanent"},
	}
	for k, v := range extra {
		h[k] = v
	}
	st := dlq.NewStore(b.db.Pool)
	rec := dlq.ParseDLQ("dlq", dlq.Received{Subject: "dlq." + tenant + "." + itemType, Header: h, Data: []byte(`{"x":1}`), Stream: "DLQ", Seq: uint64(*seq), Time: time.Now()})
	_, err := st.Insert(context.Background(), []dlq.Record{rec})
	require.NoError(t, err)
	d, err := st.BySource(context.Background(), "DLQ", uint64(*seq), "")
	require.NoError(t, err)
	return d.ID
}

// requestReplay goes through the pages: POST /replay, the confirm page,
// submit with a reason. It returns the request page path.
func (b *bundle) requestReplay(t *testing.T, c *http.Client, ids ...int64) string {
	t.Helper()
	form := url.Values{}
	for _, id := range ids {
		form.Add("id", fmt.Sprint(id))
	}
	resp := b.do(t, c, "POST", "/replay", form, nil)
	require.Equal(t, http.StatusSeeOther, resp.status, resp.body)
	confirm := resp.header.Get("Location")
	page := b.do(t, c, "GET", confirm, nil, nil)
	require.Equal(t, http.StatusOK, page.status, page.body)
	d := page.doc(t)
	assert.Equal(t, len(ids), d.Find(`[data-testid="replay-sample"] [data-testid="replay-item"]`).Length())
	submit := url.Values{"reason": {"consumer fixed in 1.2.3"}}
	resp = b.do(t, c, "POST", confirm, submit, nil)
	require.Equal(t, http.StatusSeeOther, resp.status, resp.body)
	return resp.header.Get("Location")
}

func TestReplayApprovalThroughPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	oncall, _ := b.signIn(t, "acme:oncall")
	approver, _ := b.signIn(t, "acme:approver")
	id := b.seed(t, "acme", "email.send", "mail-77", map[string][]string{dlq.HeaderOperationID: {"send-77"}})

	reqPath := b.requestReplay(t, oncall, id)
	require.True(t, strings.HasPrefix(reqPath, "/replay/requests/"), reqPath)
	own := b.do(t, oncall, "GET", reqPath, nil, nil)
	require.Equal(t, http.StatusOK, own.status)
	d := own.doc(t)
	assert.Zero(t, d.Find(`[data-testid="approve"]`).Length(), "no approve button on one's own request")
	assert.Equal(t, 1, d.Find(`[data-testid="cancel"]`).Length())
	intent := strings.TrimSpace(d.Find(`[data-testid="replay-intent"]`).Text())
	require.NotEmpty(t, intent)

	r, err := b.replays.Request(ctx, mustID(t, reqPath))
	require.NoError(t, err)
	crafted := b.do(t, oncall, "POST", reqPath+"/approve", url.Values{"intent": {r.IntentHex()}}, nil)
	assert.Equal(t, http.StatusForbidden, crafted.status, "a crafted approve by the requester is refused")

	list := b.do(t, approver, "GET", "/approvals", nil, nil).doc(t)
	require.Equal(t, 1, list.Find(`[data-testid="approval-row"]`).Length())
	page := b.do(t, approver, "GET", reqPath, nil, nil).doc(t)
	assert.Contains(t, page.Find(`[data-testid="replay-intent"]`).Text(), r.IntentHex(), "the approver sees the intent hash")
	assert.Contains(t, page.Find(`[data-testid="replay-items"]`).Text(), "app.acme.email.send")
	form := page.Find(`[data-testid="approve-form"]`)
	require.Equal(t, 1, form.Length())
	hidden, _ := form.Find(`input[name="intent"]`).Attr("value")
	assert.Equal(t, r.IntentHex(), hidden)

	resp := b.do(t, approver, "POST", reqPath+"/approve", url.Values{"intent": {hidden}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.status, resp.body)
	again := b.do(t, approver, "POST", reqPath+"/approve", url.Values{"intent": {hidden}}, nil)
	assert.Equal(t, http.StatusConflict, again.status, "a second click changes nothing")
	var jobs int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = $1`, r.ID).Scan(&jobs))
	assert.Equal(t, 1, jobs)

	// The worker publishes it once.
	ns := natstest.Start(t)
	_, js := ns.Connect(t)
	_, err = js.CreateStream(ctx, jetstreamConfig("APP", "app.>"))
	require.NoError(t, err)
	w := replay.NewWorker(b.replays, js, authz.Authority{Access: b.access, Directory: authz.NewDirectory(b.db.Pool)}, nil,
		replay.WorkerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	progress := b.do(t, approver, "GET", reqPath+"/progress", nil, nil).doc(t)
	assert.Equal(t, "1", strings.TrimSpace(progress.Find(`[data-testid="progress-published"]`).Text()))
}

func TestReplayConfirmShowsSkippedAndNeedsReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	oncall, _ := b.signIn(t, "acme:oncall")
	ok := b.seed(t, "acme", "search.index_update", "doc-1", nil)
	noOp := b.seed(t, "acme", "email.send", "mail-noop", nil) // same_operation without an operation id
	resp := b.do(t, oncall, "POST", "/replay", url.Values{"id": {fmt.Sprint(ok), fmt.Sprint(noOp)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.status)
	confirm := resp.header.Get("Location")
	d := b.do(t, oncall, "GET", confirm, nil, nil).doc(t)
	assert.Equal(t, 2, d.Find(`[data-testid="replay-group"]`).Length(), "one request per class")
	assert.Contains(t, d.Find(`[data-testid="replay-skip-reason"]`).Text(), "cannot guarantee idempotency")

	resp = b.do(t, oncall, "POST", confirm, url.Values{"reason": {"  "}}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.status)
	assert.Contains(t, resp.doc(t).Find(`[data-testid="field-error-reason"]`).Text(), "Say why")

	other, _ := b.signIn(t, "acme:oncall")
	assert.Equal(t, http.StatusNotFound, b.do(t, other, "GET", confirm, nil, nil).status, "someone else's selection is not found")

	globex, _ := b.signIn(t, "globex:oncall")
	resp = b.do(t, globex, "POST", "/replay", url.Values{"id": {fmt.Sprint(ok)}}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.status, "another tenant's dead letter is not selectable")
}

func TestDiscardNeedsReasonAndVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	oncall, _ := b.signIn(t, "acme:oncall")
	viewer, _ := b.signIn(t, "acme:viewer")
	id := b.seed(t, "acme", "orders.refund", "refund-9", nil)
	path := fmt.Sprintf("/deadletters/%d/discard", id)
	assert.Equal(t, http.StatusForbidden, b.do(t, viewer, "POST", path, url.Values{"reason": {"x"}, "version": {"1"}}, nil).status)
	resp := b.do(t, oncall, "POST", path, url.Values{"reason": {"duplicate of refund-8"}, "version": {"1"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.status, resp.body)
	d, err := dlq.NewStore(b.db.Pool).Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, dlq.StatusDiscarded, d.Status)
	globex, _ := b.signIn(t, "globex:oncall")
	assert.Equal(t, http.StatusNotFound, b.do(t, globex, "POST", fmt.Sprintf("/deadletters/%d/resolve", id), url.Values{"reason": {"x"}}, nil).status)
	assert.Equal(t, 1, b.auditCount(t, "action = 'deadletter.discard' AND reason = 'duplicate of refund-8'"))
}

func TestPolicyPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, _ := b.signIn(t, "acme:oncall")
	d := b.do(t, c, "GET", "/policy", nil, nil).doc(t)
	assert.Equal(t, b.replays.Policy().Version(), strings.TrimSpace(d.Find(`[data-testid="policy-version"]`).Text()))
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
	b := setup(t)
	ctx := context.Background()
	oncall, _ := b.signIn(t, "acme:oncall")
	for i := range 4 {
		b.seed(t, "acme", "search.index_update", fmt.Sprint("bulk-", i), nil)
	}
	b.seed(t, "acme", "analytics.event", "other-type", nil)
	b.seed(t, "globex", "search.index_update", "other-tenant", nil)

	resp := b.do(t, oncall, "POST", "/replay/filter?type=search.index_update", url.Values{}, nil)
	require.Equal(t, http.StatusSeeOther, resp.status, resp.body)
	confirm := resp.header.Get("Location")
	b.seed(t, "acme", "search.index_update", "late-arrival", nil) // after the set was frozen
	resp = b.do(t, oncall, "POST", confirm, url.Values{"reason": {"indexer fixed"}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.status, resp.body)
	r, err := b.replays.Request(ctx, mustID(t, resp.header.Get("Location")))
	require.NoError(t, err)
	assert.Equal(t, 4, r.ItemCount, "the four that matched when asked; not the other type, tenant or the late arrival")
	assert.Equal(t, replay.StatusApproved, r.Status)

	assert.Equal(t, http.StatusUnprocessableEntity, b.do(t, oncall, "POST", "/replay/filter", url.Values{}, nil).status, "no filter: no bulk")
}

func TestPayloadEditThroughPageIsANewIntent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	oncall, _ := b.signIn(t, "acme:oncall")
	approver, _ := b.signIn(t, "acme:approver")
	id := b.seed(t, "acme", "accounts.permission_grant", "grant-9", map[string][]string{dlq.HeaderPrincipal: {"user:9"}})
	reqPath := b.requestReplay(t, oncall, id)
	before, err := b.replays.Request(ctx, mustID(t, reqPath))
	require.NoError(t, err)

	page := b.do(t, oncall, "GET", reqPath, nil, nil).doc(t)
	form := page.Find(`[data-testid="payload-edit-form"]`)
	require.Equal(t, 1, form.Length(), "the requester may edit a revalidate payload before approval")
	assert.Equal(t, `{"x":1}`, strings.TrimSpace(form.Find(`[data-testid="payload-edit"]`).Text()))
	action, _ := form.Attr("action")
	assert.Zero(t, b.do(t, approver, "GET", reqPath, nil, nil).doc(t).Find(`[data-testid="payload-edit-form"]`).Length(), "only the requester")

	resp := b.do(t, approver, "POST", action, url.Values{"payload": {`{"x":2}`}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.status, "an approver cannot change what they approve")
	resp = b.do(t, oncall, "POST", action, url.Values{"payload": {`{"x":2}`}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.status, resp.body)
	after, err := b.replays.Request(ctx, before.ID)
	require.NoError(t, err)
	assert.NotEqual(t, before.IntentHex(), after.IntentHex())
	assert.True(t, after.PayloadEdited)
	stale := b.do(t, approver, "POST", reqPath+"/approve", url.Values{"intent": {before.IntentHex()}}, nil)
	assert.Equal(t, http.StatusConflict, stale.status, "an approval of the old intent is refused")

	mail := b.seed(t, "acme", "email.send", "mail-9", map[string][]string{dlq.HeaderOperationID: {"op-9"}})
	mailPath := b.requestReplay(t, oncall, mail)
	assert.Zero(t, b.do(t, oncall, "GET", mailPath, nil, nil).doc(t).Find(`[data-testid="payload-edit-form"]`).Length(),
		"same_operation payloads are never edited")
	resp = b.do(t, oncall, "POST", fmt.Sprintf("%s/items/%d/payload", mailPath, mail), url.Values{"payload": {"{}"}}, nil)
	assert.Equal(t, http.StatusForbidden, resp.status)
}
