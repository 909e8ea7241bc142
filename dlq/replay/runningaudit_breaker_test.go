package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/natstest"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// hungService subscribes on subject a service that takes every question
// and answers none until answer is set; then it allows.
func hungService(t *testing.T, nc *nats.Conn, subject string) *atomic.Bool {
	t.Helper()
	var answer atomic.Bool
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		if answer.Load() {
			_ = m.Respond([]byte(`{"allow": true}`))
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, nc.Flush())
	return &answer
}

// TestRevalidateHungServiceOpensBreakerWhenEveryQuestionIsCutShort: when
// REVALIDATE_TIMEOUT is about as long as the part of the lease a claim
// publishes in (or longer), the claim's deadline cuts every question to
// a hung service before the service's own timeout is reached. Such a
// service still fails: once it has left the questions asked unanswered for
// REVALIDATE_TIMEOUT in all, each question it leaves unanswered until the
// asker's deadline counts, and the breaker opens after five.
func TestRevalidateHungServiceOpensBreakerWhenEveryQuestionIsCutShort(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	nc, _ := ns.Connect(t)
	hungService(t, nc, "revalidate.hung")
	const timeout, window = time.Second, 250 * time.Millisecond
	reval := replay.NewNATSRevalidator(nc, "revalidate.hung", timeout)
	// Questions before the service was silent for timeout: timeout/window
	// of them, one more as each waits its window less the moment between
	// the deadline's start and the ask.
	const uncounted = int(timeout/window) + 1

	var errs []string
	for len(errs) < 2*(uncounted+5) {
		ctx, cancel := context.WithTimeout(context.Background(), window) // the claim's deadline, before the service's timeout
		_, _, err := reval.Revalidate(ctx, replay.RevalidateQuery{Tenant: "acme"})
		cancel()
		require.Error(t, err, "the service answers nothing")
		errs = append(errs, err.Error())
		if strings.Contains(err.Error(), "circuit open") {
			break
		}
	}
	require.Contains(t, errs[len(errs)-1], "circuit open", "a hung service opens the breaker; the questions said: %q", errs)
	assert.Contains(t, errs[0], "cut short", "the first question, cut before the service had REVALIDATE_TIMEOUT, is not held against it")
	assert.LessOrEqual(t, len(errs), uncounted+5+1, "once the service was silent for REVALIDATE_TIMEOUT, each cut-short question counts: %q", errs)
}

// TestRevalidateOwnCancellationsNeverOpenBreaker: questions the asker
// cancels (its worker stops) are never held against the service, however
// long the service has been silent: the breaker stays closed and the next
// question is answered once the service answers.
func TestRevalidateOwnCancellationsNeverOpenBreaker(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	nc, _ := ns.Connect(t)
	answer := hungService(t, nc, "revalidate.cancelled")
	const timeout = 300 * time.Millisecond
	reval := replay.NewNATSRevalidator(nc, "revalidate.cancelled", timeout)

	for i := range 10 {
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(timeout/3, cancel) // the worker stops while the service is asked
		_, _, err := reval.Revalidate(ctx, replay.RevalidateQuery{Tenant: "acme"})
		stop.Stop()
		cancel()
		require.Error(t, err)
		require.Contains(t, err.Error(), "cut short", "question %d", i)
	}
	answer.Store(true)
	allow, _, err := reval.Revalidate(context.Background(), replay.RevalidateQuery{Tenant: "acme"})
	require.NoError(t, err, "nothing the service did opened the breaker")
	assert.True(t, allow)
}

// TestRevalidateHungServiceBlocksItemsWhenLeaseIsShort: a worker whose
// REVALIDATE_TIMEOUT is as long as the part of REPLAY_LEASE a claim
// publishes in (two thirds) asks a hung service about a revalidate item
// claim after claim, each question cut short by the claim's deadline. The
// item is released each time, never published; the questions count
// against the service once it has been silent for REVALIDATE_TIMEOUT, the
// breaker opens, and the item is blocked saying so, instead of being
// claimed and asked about for ever.
func TestRevalidateHungServiceBlocksItemsWhenLeaseIsShort(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	hungService(t, b.nc, "revalidate.lease")
	const lease = 1500 * time.Millisecond
	reval := replay.NewNATSRevalidator(b.nc, "revalidate.lease", lease*2/3)
	id := b.seedItem(t, "accounts.permission_grant", "hung-lease-1", nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"read"}`)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	run(t, b.worker(t, replay.WorkerConfig{Lease: lease, Retry: 10 * time.Millisecond}, reval))

	wait.For(t, "the item to be blocked by the open breaker", 2*time.Minute, func() error {
		var state, result string
		var attempts int
		if err := b.db.Pool.QueryRow(ctx, `SELECT state, result, attempts FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&state, &result, &attempts); err != nil {
			return err
		}
		if state == string(replay.JobBlocked) && strings.Contains(result, "circuit open") {
			return nil
		}
		if state == string(replay.JobBlocked) {
			return errors.New("blocked, but not by the breaker: " + result)
		}
		return fmt.Errorf("%s after %d claims: %s", state, attempts, result)
	})
	assert.Zero(t, b.onSubject(t, "app.acme.accounts.permission_grant"), "nothing was published")
}
