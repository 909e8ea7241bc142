package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// concurrencyFor is how long the 20 clients hammer the same items, as
// the issue asks (the whole e2e suite takes about 2 minutes on 2 cores).
const concurrencyFor = 60 * time.Second

// TestConcurrentReplayApproveDiscard is the last fault of issue 6: 20
// browser-less clients, each signed in through Dex over HTTP (10 on-call
// sessions, 10 approver sessions split between two approvers), request
// replays of, approve, and discard the same 20 dead letters (10
// rebuildable, 10 same_operation emails) for a bounded time. Afterwards,
// once every replay settled: no server error was answered; the target
// stream holds no message id twice and only ids of these items; the
// console published each item at most once (one "published to" audit
// event per message); every request and approval the clients saw succeed
// has its audit row; the on-call's approve attempts were all refused; and
// the audit chain verifies.
func TestConcurrentReplayApproveDiscard(t *testing.T) {
	t.Parallel()
	s, js := newReplayStack(t, stackConfig{})
	ctx := testContext(t, 5*time.Minute)
	run := randomHex(4)

	var ids []int64
	msgOf := map[int64]string{}
	for i := range 20 {
		d := deadLetterSpec{Tenant: "acme", Err: "downstream failed", Class: dlq.ClassTransient}
		if i%2 == 0 {
			d.ItemType, d.MsgID = "search.index_update", fmt.Sprintf("cc-idx-%s-%02d", run, i)
			d.Payload = fmt.Appendf(nil, `{"doc_id":"sku-%d"}`, i)
		} else {
			d.ItemType, d.MsgID, d.OperationID = "email.send", fmt.Sprintf("cc-mail-%s-%02d", run, i), fmt.Sprintf("op-cc-%s-%02d", run, i)
			d.Payload = fmt.Appendf(nil, `{"to":"c%d@example.com"}`, i)
		}
		d.OriginalSubject = "app.acme." + d.ItemType
		publishDeadLetter(t, ctx, js, d)
		id := waitDeadLetterID(t, s.DB, d.MsgID, s.Console.proc)
		ids = append(ids, id)
		msgOf[id] = d.MsgID
	}

	const clients = 20
	sessions := make([]*httpSession, clients)
	for w := range clients {
		email := userOncall
		if w >= clients/2 {
			email = []string{userApprover, userApprover2}[w%2]
		}
		sessions[w] = signInHTTP(t, s.Console.URL, email)
	}

	var mu sync.Mutex
	tally := map[string]int{} // "<op> <status>" → count
	count := func(op string, status int) {
		mu.Lock()
		tally[op+" "+strconv.Itoa(status)]++
		mu.Unlock()
	}
	unexpected := func(op string, status int, body string) error {
		return fmt.Errorf("%s answered %d: %.300s", op, status, body)
	}

	// Each operation runs to its end with the test's context (the bounded
	// one only stops new ones), so every answer is counted: an operation
	// cut mid-way could commit without its client seeing the 303.
	testCtx := ctx
	errs := concurrently(ctx, clients, concurrencyFor, func(_ context.Context, w int) error {
		ctx, h := testCtx, sessions[w]
		rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
		id := ids[rng.IntN(len(ids))]
		if w < clients/2 { // on-call
			switch p := rng.IntN(10); {
			case p < 7:
				return replayOne(ctx, h, id, count, unexpected)
			case p < 9:
				status, _, body, err := h.postForm(ctx, fmt.Sprintf("/deadletters/%d/discard", id), url.Values{"reason": {"duplicate of a fixed incident"}, "confirmed": {"1"}})
				if err != nil {
					return err
				}
				count("discard", status)
				// 409: it was already discarded, or a request holds it
				// (the single route answers a conflict as the bulk one does).
				if status != http.StatusSeeOther && status != http.StatusConflict {
					return unexpected("discard", status, body)
				}
				return nil
			default:
				return approveSome(ctx, h, rng, count, unexpected, true)
			}
		}
		return approveSome(ctx, h, rng, count, unexpected, false)
	})
	for _, err := range errs {
		t.Error(err)
	}
	t.Logf("requests over %s: %v", concurrencyFor, tally)
	require.Positive(t, tally["submit 303"], "some replay was requested")
	require.Positive(t, tally["approve 303"], "some replay was approved")

	// Let every approved replay finish.
	wait.For(t, "every replay settled", 2*time.Minute, whileRunning(func() error {
		var live int
		err := s.DB.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM replay_jobs WHERE state IN ('pending', 'claimed', 'unknown')) +
			       (SELECT count(*) FROM replay_requests WHERE status IN ('approved', 'running'))`).Scan(&live)
		if err != nil {
			return err
		}
		if live > 0 {
			return fmt.Errorf("%d jobs or requests live: %w", live, wait.ErrNotYet)
		}
		return nil
	}, s.Console.proc))

	// No item replayed twice: in the stream, and by the console.
	inStream, err := streamMsgIDs(ctx, js, targetStream)
	require.NoError(t, err)
	ours := map[string]bool{}
	for _, m := range msgOf {
		ours[m] = true
	}
	for id, n := range inStream {
		assert.Truef(t, ours[id], "the stream holds %q, not one of the items", id)
		assert.Equalf(t, 1, n, "the stream holds %s %d times", id, n)
	}
	require.NotEmpty(t, inStream, "something was replayed")
	rows, err := s.DB.Query(ctx, `
		SELECT message_id, count(*) FROM audit_log
		WHERE action = 'replay.item.replayed' AND reason NOT LIKE '%own earlier publish%'
		GROUP BY message_id HAVING count(*) > 1`)
	require.NoError(t, err)
	for rows.Next() {
		var m string
		var n int
		require.NoError(t, rows.Scan(&m, &n))
		t.Errorf("the console published %s %d times", m, n)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	t.Logf("replayed %d of %d items", len(inStream), len(ids))

	// No lost audit row: each success a client saw is in the log.
	assert.Equal(t, tally["approve 303"], auditCount(t, s.DB, "replay.approve", "ok"), "an audit row per approval answered 303")
	// A submit that finds every item of its draft taken by another open
	// request voids the draft (audited, "Nothing was requested: …") and
	// answers 422: those void rows are no 303's.
	var emptied int
	require.NoError(t, s.DB.QueryRow(ctx, `
		SELECT count(*) FROM audit_log WHERE action = 'replay.void' AND outcome = 'ok'
		AND reason LIKE 'Nothing was requested:%'`).Scan(&emptied))
	assert.LessOrEqual(t, emptied, tally["submit 422"], "a draft voided as emptied by a submit answered 422")
	assert.Equal(t, tally["submit 303"], auditCount(t, s.DB, "replay.request", "ok")+auditCount(t, s.DB, "replay.void", "ok")-emptied,
		"an audit row (requested, or void when every item was skipped) per submit answered 303")
	var approvals, unaudited int
	require.NoError(t, s.DB.QueryRow(ctx, `SELECT count(*) FROM replay_approvals`).Scan(&approvals))
	assert.Equal(t, tally["approve 303"], approvals, "an approval stored per approve answered 303")
	require.NoError(t, s.DB.QueryRow(ctx, `
		SELECT count(*) FROM replay_requests r WHERE r.status <> 'draft' AND NOT EXISTS (
			SELECT 1 FROM audit_log a WHERE a.object_type = 'replay_request' AND a.object_id = r.id::text
			AND a.action IN ('replay.request', 'replay.void'))`).Scan(&unaudited))
	assert.Zero(t, unaudited, "submitted requests without their audit row")
	for k := range tally {
		if strings.HasPrefix(k, "oncall-approve ") {
			assert.Equal(t, "oncall-approve 403", k, "the on-call approving")
		}
	}
	s.Console.AuditVerify(t)
}

// replayOne requests the replay of one dead letter over HTTP: POST
// /replay, then the confirm page with a reason. Refusals (422: not
// replayable now; 409: taken by another request) are answers, not errors.
func replayOne(ctx context.Context, h *httpSession, id int64, count func(string, int), unexpected func(string, int, string) error) error {
	status, loc, body, err := h.postForm(ctx, "/replay", url.Values{"id": {strconv.FormatInt(id, 10)}})
	if err != nil {
		return err
	}
	count("create", status)
	switch {
	case status == http.StatusUnprocessableEntity || status == http.StatusConflict:
		return nil
	case status != http.StatusSeeOther:
		return unexpected("POST /replay", status, body)
	}
	status, body, err = h.Get(ctx, loc)
	if err != nil {
		return err
	}
	count("confirm", status)
	switch {
	case status == http.StatusSeeOther: // no longer a draft
		return nil
	case status != http.StatusOK:
		return unexpected("GET "+loc, status, body)
	}
	page, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		return err
	}
	form := url.Values{"reason": {"concurrent clients (e2e)"}}
	page.Find(`[data-testid="replay-confirm-form"] input[name^="rate-"]`).Each(func(_ int, in *goquery.Selection) {
		name, _ := in.Attr("name")
		v, _ := in.Attr("value")
		form.Set(name, v)
	})
	status, _, body, err = h.postForm(ctx, loc, form)
	if err != nil {
		return err
	}
	count("submit", status)
	if status != http.StatusSeeOther && status != http.StatusUnprocessableEntity && status != http.StatusConflict {
		return unexpected("POST "+loc, status, body)
	}
	return nil
}

// approveSome approves a request of the approval queue (oncall: any
// request found in the database, which must be refused with 403).
func approveSome(ctx context.Context, h *httpSession, rng *rand.Rand, count func(string, int), unexpected func(string, int, string) error, oncall bool) error {
	status, body, err := h.Get(ctx, "/approvals")
	if err != nil {
		return err
	}
	op := "approve"
	if oncall {
		op = "oncall-approve"
		// The on-call has no approval queue; try the request pages in turn.
		if status != http.StatusForbidden && status != http.StatusOK {
			return unexpected("GET /approvals", status, body)
		}
		path := requestPath(int64(1 + rng.IntN(40)))
		status, _, body, err = h.postForm(ctx, path+"/approve", url.Values{"intent": {strings.Repeat("0", 64)}})
		if err != nil {
			return err
		}
		count(op, status)
		if status != http.StatusForbidden && status != http.StatusNotFound {
			return unexpected("on-call POST "+path+"/approve", status, body)
		}
		return nil
	}
	if status != http.StatusOK {
		return unexpected("GET /approvals", status, body)
	}
	page, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		return err
	}
	links := page.Find(`[data-testid="approval-row"] a.row-link`).Map(func(_ int, a *goquery.Selection) string {
		href, _ := a.Attr("href")
		return href
	})
	if len(links) == 0 {
		return nil
	}
	path := links[rng.IntN(len(links))]
	status, body, err = h.Get(ctx, path)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return unexpected("GET "+path, status, body)
	}
	page, err = goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		return err
	}
	form := page.Find(`[data-testid="approve-form"]`)
	intent, ok := form.Find(`input[name="intent"]`).Attr("value")
	if !ok {
		return nil // approved by someone, or by this approver already
	}
	version := form.Find(`input[name="version"]`).AttrOr("value", "")
	status, _, body, err = h.postForm(ctx, path+"/approve", url.Values{"intent": {intent}, "version": {version}})
	if err != nil {
		return err
	}
	count(op, status)
	if status != http.StatusSeeOther && status != http.StatusConflict && status != http.StatusUnprocessableEntity {
		return unexpected("POST "+path+"/approve", status, body)
	}
	return nil
}
