package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevOncall12DeferredRefundLapses: a refund (manual: two approvers,
// approvals that expire after 4h) is approved by two people in time; the
// worker tries it at once and the broker drops it as a duplicate: its
// target stream keeps message ids for 6h, so the page says "deferred
// until <in about 6h>". The approvers did their part, and the console
// chose to wait. When the wait is over the approval has lapsed (the
// request counts as not started: ApprovalLapse), and the worker blocks the
// item: the page's "deferred until" was a promise the console itself
// broke, and the on-call must ask two approvers again (whose approval
// lapses the same way while the window still covers the original). Time
// is moved by moving the approvals 4h05m into the past and letting the
// worker look at the job now.
func TestRevOncall12DeferredRefundLapses(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	ctx := context.Background()
	oncall, oncallUser := b.SignIn(t, "acme:oncall")
	_, err := b.JetStream.CreateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: 6 * time.Hour})
	require.NoError(t, err)
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "deferred-refund"})
	req := testfactory.Request(t, b.Replays, oncallUser.Actor, []int64{id}, replay.SubmitInput{Reason: "payments gateway back"})
	phrase, err := b.Replays.ConfirmationFor(ctx, req.ID)
	require.NoError(t, err)
	path := fmt.Sprintf("/replay/requests/%d", req.ID)
	for range 2 {
		c, _ := b.SignIn(t, "acme:approver")
		resp := b.Do(t, c, "POST", path+"/approve", url.Values{"intent": {req.IntentHex()}, "version": {strconv.Itoa(req.Version)}, "confirmation": {phrase}}, nil)
		require.Equal(t, http.StatusSeeOther, resp.Status, resp.Body)
	}
	runWorker(t, b)
	jobState := func() (state, result string) {
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT state, result FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&state, &result))
		return state, result
	}
	wait.Until(t, "the job deferred", 30*time.Second, func() bool { s, _ := jobState(); return s == string(replay.JobDeferred) })
	shown := strings.Join(strings.Fields(b.Do(t, oncall, "GET", path, nil, nil).Doc(t).Find(`[data-testid="replay-item-verdict"]`).Text()), " ")
	require.Contains(t, shown, "deferred until")

	// 4h05m later: the approvals were given then; the window still covers
	// the original for about 1h45m more.
	for _, q := range []string{
		`UPDATE replay_requests SET created_at = created_at - interval '5 hours', submitted_at = submitted_at - interval '5 hours',
            approved_at = approved_at - interval '245 minutes' WHERE id = $1`,
		`UPDATE replay_approvals SET approved_at = approved_at - interval '245 minutes' WHERE request_id = $1`,
		`UPDATE replay_jobs SET not_before = now() WHERE request_id = $1`,
	} {
		_, err := b.Pool.Exec(ctx, q, req.ID)
		require.NoError(t, err)
	}
	var state, result string
	wait.Until(t, "the worker looked at it again", 30*time.Second, func() bool {
		var again bool
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT state NOT IN ('pending', 'claimed', 'deferred') OR (state = 'deferred' AND not_before > now())
            FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&again))
		return again
	})
	state, result = jobState()
	t.Logf("after: %s %s; shown %s", state, result, shown)
	assert.NotEqual(t, string(replay.JobBlocked), state,
		"the page said %q; the item the console chose to defer was blocked when its approval lapsed during the wait: %s", shown, result)
}
