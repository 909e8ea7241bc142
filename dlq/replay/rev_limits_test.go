package replay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// heldReval is an owning service that answers the claim's question at
// once and holds its answer to the question asked right before the send
// (the second for a message id) until release is closed: a slow service,
// within REVALIDATE_TIMEOUT.
type heldReval struct {
	mu      sync.Mutex
	asked   map[string]int
	held    int
	release chan struct{}
}

func newHeldReval() *heldReval {
	return &heldReval{asked: map[string]int{}, release: make(chan struct{})}
}

func (r *heldReval) Revalidate(ctx context.Context, q replay.RevalidateQuery) (bool, string, error) {
	r.mu.Lock()
	r.asked[q.MsgID]++
	beforeSend := r.asked[q.MsgID] == 2
	if beforeSend {
		r.held++
	}
	r.mu.Unlock()
	if beforeSend {
		select {
		case <-r.release:
		case <-ctx.Done():
			return false, "", ctx.Err()
		}
	}
	return true, "", nil
}

func (r *heldReval) heldNow() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

// slowRevalidationRequest is an approved revalidate request of n items at
// 2 messages per second, and workers of it, each of which publishes only
// after the owning service answered its question before the send: they
// are held there until reval.release.
func slowRevalidationRequest(t *testing.T, b *replayBundle, prefix string, n, workers int) (replay.Request, *heldReval) {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	for i := range n {
		ids = append(ids, b.seedItem(t, "accounts.permission_grant", fmt.Sprint(prefix, i), nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"read"}`))
	}
	batch, drafts := b.draft(t, oncall, ids...)
	require.Len(t, drafts, 1)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "grants lost", Rates: map[int64]float64{drafts[0].ID: 2}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	req := reqs[0]
	d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	reval := newHeldReval()
	for i := range workers {
		run(t, b.worker(t, replay.WorkerConfig{Owner: fmt.Sprint("w", i)}, reval))
	}
	// Jobs come due 1/rate apart; a held worker claims nothing more, so
	// each due job goes to a worker not yet held.
	wait.Until(t, "every worker held in the question before its send", time.Minute, func() bool { return reval.heldNow() == workers })
	return req, reval
}

// TestStopDuringSendRevalidationPublishesAtMostOne: docs/replay.md
// ("Cancel and emergency stop") and the runbook promise that after a stop
// commits, what may still land is the rest of the current reservation, at
// most max(1, ⌊r × 0.02⌋) messages (1 at 2/s). The worker reads the
// request's status before a reservation and after a wait for its slot,
// then asks the owning service of a revalidate item (up to
// REVALIDATE_TIMEOUT) and sends without looking again: every worker
// waiting on that answer when the stop commits publishes its item after
// it. Here 3 workers each hold one: 3 land after the stop, not 1.
func TestStopDuringSendRevalidationPublishesAtMostOne(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	req, reval := slowRevalidationRequest(t, b, "stop-reval-", 6, 3)
	require.Zero(t, b.onSubject(t, "app.acme.accounts.permission_grant"), "nothing sent before the stop")

	require.NoError(t, b.replays.Stop(ctx, req.ID, approver1, replay.StopInput{Reason: "wrong grants", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{}))
	close(reval.release)
	wait.Until(t, "no job left in flight", time.Minute, func() bool {
		s := b.jobStates(t, req.ID)
		return s["pending"]+s["claimed"]+s["unknown"]+s["deferred"] == 0
	})
	assert.LessOrEqual(t, b.onSubject(t, "app.acme.accounts.permission_grant"), 1,
		"after the stop committed at most max(1, 2/s × 20 ms) = 1 message may land; job states %v", b.jobStates(t, req.ID))
}

// TestRateHeldWhileSendRevalidationIsSlow: docs/replay.md (Execute)
// promises that any number of workers keep to the rate: no second holds
// more than the rate and one message up to 50/s, and a worker late for its
// slot by more than half an interval reserves again instead of catching
// up. The lateness is judged before the owning service of a revalidate
// item is asked, not after: workers whose answers come late all send at
// once. Here 4 workers, held on the answer for their slots 0.5 s apart,
// send within moments of each other: 4 messages in a second at 2/s.
func TestRateHeldWhileSendRevalidationIsSlow(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	req, reval := slowRevalidationRequest(t, b, "rate-reval-", 4, 4)
	close(reval.release)
	b.waitStatus(t, req.ID, replay.StatusDone)

	msgs := streamMsgs(t, b.target)
	require.Len(t, msgs, 4)
	most := 0
	for i, m := range msgs {
		n := 0
		for _, o := range msgs[i:] {
			if o.Time.Sub(m.Time) < time.Second {
				n++
			}
		}
		most = max(most, n)
	}
	assert.LessOrEqual(t, most, 3, "at 2/s no second holds more than the rate and one message (stored at %v)", times(msgs))
}

func times(msgs []*jetstream.RawStreamMsg) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Time.Format("15:04:05.000"))
	}
	return out
}
