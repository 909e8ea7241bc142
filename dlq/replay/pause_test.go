package replay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// pause holds each worker right before the send of a job (BeforeSend), the
// first time it gets there with that job, until release is closed: a
// process paused after its checks (GC, a stopped VM), as a slow owning
// service holds a revalidate item (rev_limits_test.go).
type pause struct {
	mu      sync.Mutex
	seen    map[int64]bool
	held    int
	release chan struct{}
}

func (p *pause) beforeSend(jobID int64, _ time.Time) {
	p.mu.Lock()
	first := !p.seen[jobID]
	p.seen[jobID] = true
	if first {
		p.held++
	}
	p.mu.Unlock()
	if first {
		<-p.release
	}
}

func (p *pause) heldNow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// pausedRequest is a request of n search updates at 2 messages per
// second, and workers of it each held right before its first send.
func pausedRequest(t *testing.T, b *replayBundle, prefix string, n, workers int) (replay.Request, *pause) {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	for i := range n {
		ids = append(ids, b.seedItem(t, "search.index_update", fmt.Sprint(prefix, i), nil, "{}"))
	}
	batch, drafts := b.draft(t, oncall, ids...)
	require.Len(t, drafts, 1)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "index lost", Rates: map[int64]float64{drafts[0].ID: 2}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Equal(t, replay.StatusApproved, reqs[0].Status)
	p := &pause{seen: map[int64]bool{}, release: make(chan struct{})}
	for i := range workers {
		w := b.worker(t, replay.WorkerConfig{Owner: fmt.Sprint("p", i)})
		w.BeforeSend(p.beforeSend)
		run(t, w)
	}
	wait.Until(t, "every worker paused before its send", time.Minute, func() bool { return p.heldNow() == workers })
	return reqs[0], p
}

// TestStopDuringPauseBeforeSendPublishesAtMostOne: whatever holds a
// worker between its checks and its send (here a pause; a slow owning
// service is TestStopDuringSendRevalidationPublishesAtMostOne), a stop
// that commits meanwhile is seen before the send: 3 paused workers, the
// request stopped, at most the rest of one reservation (1 at 2/s) lands.
func TestStopDuringPauseBeforeSendPublishesAtMostOne(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	req, p := pausedRequest(t, b, "stop-pause-", 6, 3)
	require.NoError(t, b.replays.Stop(ctx, req.ID, approver1, replay.StopInput{Reason: "wrong index", Typed: replaypolicy.StopPhrase}, quarantine.RequestMeta{}))
	close(p.release)
	wait.Until(t, "no job left in flight", time.Minute, func() bool {
		s := b.jobStates(t, req.ID)
		return s["pending"]+s["claimed"]+s["unknown"]+s["deferred"] == 0
	})
	assert.LessOrEqual(t, b.onSubject(t, "app.acme.search.index_update"), 1, "job states %v", b.jobStates(t, req.ID))
}

// TestRateHeldThroughPauseBeforeSend: workers paused between their checks
// and their sends past their slots do not send together when they
// resume: a late one reserves again. 4 paused workers at 2/s: no second
// holds more than 3 messages.
func TestRateHeldThroughPauseBeforeSend(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	req, p := pausedRequest(t, b, "rate-pause-", 4, 4)
	close(p.release)
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

// laggingReval is an owning service that allows every principal and
// takes delay to answer each question.
type laggingReval struct{ delay time.Duration }

func (r laggingReval) Revalidate(ctx context.Context, _ replay.RevalidateQuery) (bool, string, error) {
	select {
	case <-time.After(r.delay): // the service's own time is the scenario
		return true, "", nil
	case <-ctx.Done():
		return false, "", ctx.Err()
	}
}

// TestSendRevalidationSlowerThanTheSlotStillPublishes: an owning service
// that answers later than a slot's slack (80 ms at 10/s, whose slack is
// 50 ms) makes every job late once the answer comes, so each reserves a
// fresh slot; the answer serves that slot (it is younger than it took to
// come), so the job is sent there instead of asking and reserving again
// until the claim's time runs out, claim after claim.
func TestSendRevalidationSlowerThanTheSlotStillPublishes(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	var ids []int64
	for i := range 3 {
		ids = append(ids, b.seedItem(t, "accounts.permission_grant", fmt.Sprint("slow-reval-", i), nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"read"}`))
	}
	batch, drafts := b.draft(t, oncall, ids...)
	require.Len(t, drafts, 1)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "grants lost", Rates: map[int64]float64{drafts[0].ID: 10}}, quarantine.RequestMeta{})
	require.NoError(t, err)
	d, err := b.replays.Approve(ctx, reqs[0].ID, approver1, replay.ApproveInput{IntentHex: reqs[0].IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.True(t, d.Ready)
	run(t, b.worker(t, replay.WorkerConfig{}, laggingReval{delay: 80 * time.Millisecond}))
	b.waitStatus(t, reqs[0].ID, replay.StatusDone)
	assert.Equal(t, 3, b.onSubject(t, "app.acme.accounts.permission_grant"))
}
