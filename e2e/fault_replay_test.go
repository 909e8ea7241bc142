package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// Replay faults of issue 6: a bulk replay of 5,000 rebuildable dead
// letters at 500 messages per second (about 10 s), requested over HTTP by
// the on-call signed in through Dex.
const (
	bulkReplayCount = 5000
	bulkReplayRate  = 500
)

// TestBulkReplaySurvivesConsoleKill kills the console with SIGKILL in the
// middle of a bulk replay of 5,000 items (jobs claimed, some published and
// not recorded) and starts it again on the same database and NATS. The
// replay completes, and the target stream holds each original message id
// exactly once: 5,000 messages, 5,000 distinct ids (invariant 4: a worker
// that dies after publish and before commit republishes under the same id,
// which JetStream's duplicate window suppresses). Every item has one
// published audit event, and the audit chain verifies.
func TestBulkReplaySurvivesConsoleKill(t *testing.T) {
	t.Parallel()
	// What the killed console held comes back after a 5 s lease.
	s, js := newReplayStack(t, stackConfig{Env: []string{"REPLAY_LEASE=5s"}})
	ctx := testContext(t, 5*time.Minute)

	l := startLoad(t, s.NATSURL, loadSpec{Tenant: "acme", ItemType: "search.index_update", Count: bulkReplayCount, Workers: 8})
	l.Wait(t, 2*time.Minute)
	waitRows(t, s.DB, l.RunID, bulkReplayCount, 2*time.Minute, s.Console.proc)
	ids := deadLetterIDs(t, s, l.RunID)
	require.Len(t, ids, bulkReplayCount)

	oncall := signInHTTP(t, s.Console.URL, userOncall)
	submitted := time.Now()
	reqID := oncall.bulkReplay(t, ctx, ids, bulkReplayRate, "reindex after the search cluster upgrade (e2e "+l.RunID+")")

	// The request page shows it running.
	p, err := oncall.progress(ctx, reqID)
	require.NoError(t, err)
	require.Contains(t, []string{"approved", "running"}, p.Status, "a rebuildable bulk replay runs without approval")

	// Kill it once a fifth is published, well before the end (watched in
	// the database: a page load can take seconds on a busy machine).
	wait.For(t, "a fifth of the replay published", time.Minute, whileRunning(func() error {
		var n int
		if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM replay_jobs WHERE request_id = $1 AND state = 'replayed'`, reqID).Scan(&n); err != nil {
			return err
		}
		if n < bulkReplayCount/5 {
			return fmt.Errorf("published %d: %w", n, wait.ErrNotYet)
		}
		return nil
	}, s.Console.proc))
	s.Console.Kill(t)
	var published, claimed int
	require.NoError(t, s.DB.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE state = 'replayed'), count(*) FILTER (WHERE state = 'claimed')
		FROM replay_jobs WHERE request_id = $1`, reqID).Scan(&published, &claimed))
	require.Less(t, published, bulkReplayCount, "the kill must hit while the replay runs")
	t.Logf("killed the console at %d of %d published (%d jobs claimed), %s after the submit",
		published, bulkReplayCount, claimed, time.Since(submitted).Round(time.Millisecond))
	s.Console.Start(t)

	oncall = signInHTTP(t, s.Console.URL, userOncall) // sessions live in PostgreSQL; a fresh one proves the restart serves sign-ins
	wait.For(t, "the replay done after the restart", 2*time.Minute, whileRunning(func() error {
		p, err := oncall.progress(ctx, reqID)
		if err != nil {
			return err
		}
		if p.Status != "done" {
			return fmt.Errorf("status %s, published %d, pending %d: %w", p.Status, p.Replayed, p.Pending, wait.ErrNotYet)
		}
		return nil
	}, s.Console.proc))

	t.Logf("replay done %s after the submit", time.Since(submitted).Round(time.Millisecond))
	msgIDs := make([]string, bulkReplayCount)
	for i := range msgIDs {
		msgIDs[i] = l.MsgID(i)
	}
	requireEachOnceInStream(t, ctx, js, targetStream, msgIDs)
	info, err := streamInfo(ctx, js, targetStream)
	require.NoError(t, err)
	assert.EqualValues(t, bulkReplayCount, info.State.Msgs, "the target stream holds one message per item")

	var distinct, suppressed int
	require.NoError(t, s.DB.QueryRow(ctx, `
		SELECT count(*), count(DISTINCT message_id), count(*) FILTER (WHERE reason LIKE '%own earlier publish%')
		FROM audit_log WHERE action = 'replay.item.replayed' AND message_id LIKE $1 || '-%'`, l.RunID).Scan(&published, &distinct, &suppressed))
	assert.Equal(t, bulkReplayCount, distinct, "every item has a published audit event")
	assert.Equal(t, bulkReplayCount, published, "one published audit event per item")
	t.Logf("replayed audit events: %d for %d items, %d of them answered Duplicate of their own earlier publish (republished after the kill)", published, distinct, suppressed)
	s.Console.AuditVerify(t)
}

// deadLetterIDs are the console ids of a load's dead letters, in order.
func deadLetterIDs(t *testing.T, s *stack, runID string) []int64 {
	t.Helper()
	rows, err := s.DB.Query(context.Background(), `SELECT id FROM dead_letters WHERE msg_id LIKE $1 || '-%' ORDER BY msg_id`, runID)
	require.NoError(t, err)
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

// postForm posts a form without following the redirect and returns the
// status, the Location header and the body.
func (h *httpSession) postForm(ctx context.Context, path string, form url.Values) (int, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	client := *h.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b), err
}

// bulkReplay does over HTTP what the list's bulk form and the confirm page
// do: POST /replay with the ids, read the confirm page, submit it with a
// reason and a rate for each request; it returns the request id it lands
// on. The selection must make one request (one tenant, one class).
func (h *httpSession) bulkReplay(t *testing.T, ctx context.Context, ids []int64, rate int, reason string) int64 {
	t.Helper()
	form := url.Values{}
	for _, id := range ids {
		form.Add("id", strconv.FormatInt(id, 10))
	}
	status, loc, body, err := h.postForm(ctx, "/replay", form)
	require.NoError(t, err)
	require.Equal(t, http.StatusSeeOther, status, "POST /replay: %.500s", body)
	require.True(t, strings.HasPrefix(loc, "/replay/batches/"), "POST /replay sent to %q", loc)

	status, body, err = h.Get(ctx, loc)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, "GET %s: %.500s", loc, body)
	page, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	submit := url.Values{"reason": {reason}}
	page.Find(`[data-testid="replay-confirm-form"] input[name^="rate-"]`).Each(func(_ int, in *goquery.Selection) {
		name, _ := in.Attr("name")
		submit.Set(name, strconv.Itoa(rate))
	})
	require.Len(t, submit, 2, "one request in the batch: %v", submit)
	status, loc, body, err = h.postForm(ctx, loc, submit)
	require.NoError(t, err)
	require.Equal(t, http.StatusSeeOther, status, "submit the confirm page: %.500s", body)
	m := replayRequestPath.FindStringSubmatch(loc)
	require.NotNil(t, m, "the submit sent to %q", loc)
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

// replayProgress is what a request page shows of a replay.
type replayProgress struct {
	Status            string
	Replayed, Pending int
}

// progress reads a request's status and progress from its page.
func (h *httpSession) progress(ctx context.Context, id int64) (replayProgress, error) {
	var p replayProgress
	status, body, err := h.Get(ctx, requestPath(id))
	if err != nil {
		return p, err
	}
	if status != http.StatusOK {
		return p, fmt.Errorf("GET %s: %d", requestPath(id), status)
	}
	page, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		return p, err
	}
	p.Status = page.Find(testID("replay-status")).AttrOr("data-status", "")
	if p.Replayed, err = strconv.Atoi(strings.TrimSpace(page.Find(testID("progress-replayed")).Text())); err != nil {
		return p, fmt.Errorf("replayed count: %w", err)
	}
	if p.Pending, err = strconv.Atoi(strings.TrimSpace(page.Find(testID("progress-pending")).Text())); err != nil {
		return p, fmt.Errorf("pending count: %w", err)
	}
	return p, nil
}
