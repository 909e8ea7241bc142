package replay_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// rr14Subject is the target subject of these tests (APP stores it).
const rr14Subject = "app.acme.search.index_update"

// rr14Original publishes the original to APP (its window shortened to
// 1 s) and seeds its dead letter.
func rr14Original(t *testing.T, b *replayBundle, msgID string) int64 {
	t.Helper()
	ctx := context.Background()
	cfg := b.target.CachedInfo().Config
	cfg.Duplicates = time.Second
	_, err := b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	orig := nats.NewMsg(rr14Subject)
	orig.Header.Set(jetstream.MsgIDHeader, msgID)
	orig.Data = []byte(`{"doc":"sku-1"}`)
	_, err = b.js.PublishMsg(ctx, orig)
	require.NoError(t, err)
	return b.seedItem(t, "search.index_update", msgID, nil, `{"doc":"sku-1"}`)
}

// rr14Count counts st's messages of rr14Subject.
func rr14Count(t *testing.T, st jetstream.Stream) int {
	t.Helper()
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter(rr14Subject))
	require.NoError(t, err)
	return int(info.State.Subjects[rr14Subject])
}

// rr14Decided waits until the job of request id is replayed, or deferred
// with a reason that names stream behind (the stream the copy is copied
// through, which has not copied the original yet).
func rr14Decided(t *testing.T, b *replayBundle, id int64, behind string) {
	t.Helper()
	wait.Until(t, "the job to be replayed, or deferred naming "+behind, 60*time.Second, func() bool {
		if b.jobStates(t, id)[string(replay.JobReplayed)] == 1 {
			return true
		}
		text := b.jobsText(t, id)
		return strings.Contains(text, "deferred") && strings.Contains(text, "stream "+behind)
	})
}

// TestRevReplay14LateCopyThroughBehindStreamShownReplayed: AGG copies the
// target through MID (APP → MID → AGG), both made after the original. MID
// is behind (its link to APP is down): it has not copied the original,
// so neither has AGG. The window reader lists AGG only (latestCopies
// leaves MID out: AGG began no earlier, with a longer window), and
// LateCopies compares AGG with MID alone: neither holds a message of the
// subject, "nothing is held", Copied = AGG's creation, and the job goes
// and is shown replayed. When MID's link comes back MID copies the
// original, then the replay inside its window, and drops the replay:
// neither MID's nor AGG's consumers ever receive it.
func TestRevReplay14LateCopyThroughBehindStreamShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-chain-1")

	midCfg := jetstream.StreamConfig{Name: "MID", Duplicates: time.Second,
		Sources: []*jetstream.StreamSource{{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}}}
	mid := b.createStream(t, midCfg)
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: 2 * time.Second, Sources: []*jetstream.StreamSource{{Name: "MID"}}})

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	rr14Decided(t, b, req.ID, "MID")
	assert.Zero(t, b.jobStates(t, req.ID)[string(replay.JobReplayed)],
		"shown replayed while MID, which AGG copies the target through, has not copied the original (MID holds %d, AGG %d messages of the subject): %s",
		rr14Count(t, mid), rr14Count(t, agg), b.jobsText(t, req.ID))

	// MID's link is mended: it copies the original, and what APP stored since.
	midCfg.Sources = []*jetstream.StreamSource{{Name: "APP"}}
	_, err := b.js.UpdateStream(ctx, midCfg)
	require.NoError(t, err)
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return rr14Count(t, agg) >= 1 })
	r := b.waitFinished(t, req.ID)
	require.Equal(t, 1, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "%s: %s", r.Status, b.jobsText(t, req.ID))
	wait.For(t, "the replay to reach MID and AGG", 30*time.Second, func() error {
		if m, a := rr14Count(t, mid), rr14Count(t, agg); m != 2 || a != 2 {
			return fmt.Errorf("the item is shown replayed, but MID holds %d and AGG %d messages of the subject (APP %d): the replay was dropped as a duplicate of the original",
				m, a, b.onSubject(t, rr14Subject))
		}
		return nil
	})
}

// TestRevReplay14LateCopyThroughBehindMirrorShownReplayed: AGG sources
// MIR, a mirror of the target made after the original whose link is
// down. A mirror is never listed as a copy, so nothing reads whether MIR
// has copied the original: AGG is compared with MIR alone, both empty,
// and the job is shown replayed. When MIR's link comes back MIR copies
// the original and the replay (a mirror keeps both), AGG copies both
// and drops the replay inside its window: AGG's consumers never get it.
func TestRevReplay14LateCopyThroughBehindMirrorShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	id := rr14Original(t, b, "orig-mirror-1")

	// MIR's link goes through $JS.elsewhere.API, which nothing answers
	// until the bridge below forwards it to this server's API.
	var bridge struct {
		sync.Mutex
		up bool
	}
	sub, err := b.nc.Subscribe("$JS.elsewhere.API.>", func(m *nats.Msg) {
		bridge.Lock()
		up := bridge.up
		bridge.Unlock()
		if !up {
			return
		}
		fwd := nats.NewMsg("$JS.API." + strings.TrimPrefix(m.Subject, "$JS.elsewhere.API."))
		fwd.Data, fwd.Header = m.Data, m.Header
		resp, err := b.nc.RequestMsg(fwd, 5*time.Second)
		if err == nil {
			_ = m.RespondMsg(&nats.Msg{Data: resp.Data, Header: resp.Header})
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	mir := b.createStream(t, jetstream.StreamConfig{Name: "MIR",
		Mirror: &jetstream.StreamSource{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}})
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: 2 * time.Second, Sources: []*jetstream.StreamSource{{Name: "MIR"}}})

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	rr14Decided(t, b, req.ID, "MIR")
	assert.Zero(t, b.jobStates(t, req.ID)[string(replay.JobReplayed)],
		"shown replayed while MIR, the mirror AGG copies the target through, has not copied the original (MIR holds %d, AGG %d messages of the subject): %s",
		rr14Count(t, mir), rr14Count(t, agg), b.jobsText(t, req.ID))

	bridge.Lock()
	bridge.up = true
	bridge.Unlock()
	wait.Until(t, "AGG to copy the original", 60*time.Second, func() bool { return rr14Count(t, agg) >= 1 })
	r := b.waitFinished(t, req.ID)
	require.Equal(t, 1, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "%s: %s", r.Status, b.jobsText(t, req.ID))
	wait.For(t, "the replay to reach AGG", 30*time.Second, func() error {
		if m, a := rr14Count(t, mir), rr14Count(t, agg); a != 2 {
			return fmt.Errorf("the item is shown replayed, but AGG holds %d messages of the subject (MIR %d, APP %d): AGG dropped the replay as a duplicate of the original",
				a, m, b.onSubject(t, rr14Subject))
		}
		return nil
	})
}

// TestRevReplay14LateCopyOnBusySubjectDefersForever: AGG, made after the
// original, copied it at once. The subject is a busy one (a message every
// 200 ms). Each judge reads AGG afresh and counts its window from AGG's
// LAST message of the subject (Copied = cp.Time), which is always newer
// than AGG's 1 s window: the job is deferred again and again, and never
// goes while the subject is in use, although AGG copied the original
// long ago. The first read that saw AGG caught up bounds when it copied
// the original; a later read only moves that bound later.
func TestRevReplay14LateCopyOnBusySubjectDefersForever(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-busy-1")
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Second, Sources: []*jetstream.StreamSource{{Name: "APP"}}})
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return rr14Count(t, agg) >= 1 })
	copied, err := agg.GetLastMsgForSubject(ctx, rr14Subject)
	require.NoError(t, err)

	// Other messages of the subject keep coming, as on any busy subject.
	busy, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-busy.Done():
				return
			case <-tick.C:
			}
			m := nats.NewMsg(rr14Subject)
			m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("other-%d", n))
			m.Data = []byte(`{"doc":"sku-other"}`)
			_, _ = b.js.PublishMsg(busy, m)
		}
	})
	t.Cleanup(func() { stop(); wg.Wait() })

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	wait.For(t, "the item to be replayed", 45*time.Second, func() error {
		if b.jobStates(t, req.ID)[string(replay.JobReplayed)] == 1 {
			return nil
		}
		return fmt.Errorf("AGG copied the original at %s (%s ago) and its window is 1 s, yet the job is: %s",
			copied.Time.Format(time.RFC3339Nano), time.Since(copied.Time).Round(time.Millisecond), b.jobsText(t, req.ID))
	})
}

// TestRevReplay14LateCopyThatAgedOutDefersForever: AGG, made after the
// original, copied it and keeps messages 1.5 s (a copy with a shorter
// retention than the target, or one of work-queue or interest retention,
// whose consumers took it). AGG now holds no message of the subject, APP
// still does: LateCopies calls AGG Behind ("has not copied any message
// of … from it yet", which is false), and the job is deferred every
// second for ever, although AGG's window let go of the original's id
// long ago.
func TestRevReplay14LateCopyThatAgedOutDefersForever(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	id := rr14Original(t, b, "orig-aged-1")
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Second, MaxAge: 1500 * time.Millisecond,
		Sources: []*jetstream.StreamSource{{Name: "APP"}}})
	wait.Until(t, "AGG to copy the original", 30*time.Second, func() bool { return rr14Count(t, agg) >= 1 })
	wait.Until(t, "AGG's copy to age out", 30*time.Second, func() bool { return rr14Count(t, agg) == 0 })

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	wait.For(t, "the item to be replayed", 45*time.Second, func() error {
		if b.jobStates(t, req.ID)[string(replay.JobReplayed)] == 1 {
			return nil
		}
		return fmt.Errorf("AGG copied the original, and its 1 s window let go of it, yet the job is: %s", b.jobsText(t, req.ID))
	})
}

// TestRevReplay14LateCopyFedByAnotherSourceShownReplayed: AGG, made after
// the original, sources the target APP (its link down: behind) and also
// OTHER, whose legacy subject it stores as the target's subject (a
// source's subject transform). AGG's last message of the subject came
// from OTHER: its Nats-Stream-Source header names OTHER, not APP, so
// copiedUpTo falls back to the stored times, and a message AGG stored
// from OTHER after APP stored the original says "caught up with APP".
// The job goes and is shown replayed; when AGG's link to APP comes back,
// AGG copies the original and drops the replay inside its window.
func TestRevReplay14LateCopyFedByAnotherSourceShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-fed-1")
	b.createStream(t, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"legacy.>"}})
	other := jetstream.StreamSource{Name: "OTHER", SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: "legacy.>", Destination: "app.>"}}}
	aggCfg := jetstream.StreamConfig{Name: "AGG", Duplicates: 2 * time.Second, Sources: []*jetstream.StreamSource{
		{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}, &other}}
	agg := b.createStream(t, aggCfg)
	m := nats.NewMsg("legacy.acme.search.index_update")
	m.Header.Set(jetstream.MsgIDHeader, "legacy-1")
	_, err := b.js.PublishMsg(ctx, m)
	require.NoError(t, err)
	wait.Until(t, "AGG to copy OTHER's message", 30*time.Second, func() bool { return rr14Count(t, agg) == 1 })

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	wait.Until(t, "the job to be replayed, or deferred as behind", 60*time.Second, func() bool {
		text := b.jobsText(t, req.ID)
		return b.jobStates(t, req.ID)[string(replay.JobReplayed)] == 1 || strings.Contains(text, "deferred") && strings.Contains(text, "has not")
	})
	assert.Zero(t, b.jobStates(t, req.ID)[string(replay.JobReplayed)],
		"shown replayed while AGG has not copied the original from APP (AGG holds only OTHER's message): %s", b.jobsText(t, req.ID))

	aggCfg.Sources = []*jetstream.StreamSource{{Name: "APP"}, &other}
	_, err = b.js.UpdateStream(ctx, aggCfg)
	require.NoError(t, err)
	r := b.waitFinished(t, req.ID)
	require.Equal(t, 1, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "%s: %s", r.Status, b.jobsText(t, req.ID))
	wait.For(t, "the replay to reach AGG", 30*time.Second, func() error {
		if a := rr14Count(t, agg); a != 3 {
			return fmt.Errorf("the item is shown replayed, but AGG holds %d messages of the subject (OTHER's, the original, the replay: 3; APP holds %d): AGG dropped the replay as a duplicate of the original",
				a, b.onSubject(t, rr14Subject))
		}
		return nil
	})
}

// TestRevReplay14ConfirmPageCountsABehindLateCopy: the confirm page judges
// as the worker does, but an item whose late copy needs a read
// (NeedCopies) is skipped (view.go waits: `continue`): here AGG, made
// after the original with its link to APP down, has copied nothing, and
// the worker defers the item for as long as that lasts ("has not copied
// any message … yet"), yet the confirm page counts no item that waits
// (nor one whose window could not be read): the requester is told
// nothing waits.
func TestRevReplay14ConfirmPageCountsABehindLateCopy(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-confirm-1")
	agg := b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Second,
		Sources: []*jetstream.StreamSource{{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}}})
	past := agg.CachedInfo().Created.Add(time.Second + 200*time.Millisecond)
	wait.Until(t, "AGG's window as its creation says to pass", 30*time.Second, func() bool { return time.Now().After(past) })

	batch, _ := b.draft(t, oncall, id)
	sel, err := b.replays.Selection(ctx, batch, oncall, 1000)
	require.NoError(t, err)
	require.Len(t, sel.Requests, 1)
	w := sel.Requests[0].Waits
	assert.Equal(t, 1, w.Items+w.Unread, "AGG holds %d messages of the subject (APP %d): the worker defers the item while AGG is behind, the page says nothing waits: %+v",
		rr14Count(t, agg), b.onSubject(t, rr14Subject), w)
}

// TestRevReplay14BehindCopyAuditsEverySecond: while a late copy is behind
// (its link to the target down, which 980134b expects may last: "a source
// link that is down"), the worker defers the item "will check again"
// every second, and every deferral is recorded with its own audit row
// (replay.item.deferred), the same reason each time. The audit log is
// never purged and each append takes the chain's lock: one item behind
// for a day writes 86,400 rows, a request of a thousand such items 86
// million.
func TestRevReplay14BehindCopyAuditsEverySecond(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-audit-1")
	b.createStream(t, jetstream.StreamConfig{Name: "AGG", Duplicates: time.Second,
		Sources: []*jetstream.StreamSource{{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}}})

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	wait.Until(t, "the job to be deferred for AGG", 30*time.Second, func() bool {
		return strings.Contains(b.jobsText(t, req.ID), "has not copied any message of")
	})
	behindSince := time.Now()
	wait.Until(t, "ten seconds of AGG behind", 30*time.Second, func() bool { return time.Since(behindSince) > 10*time.Second })

	var rows, reasons int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT reason) FROM audit_log
        WHERE action = 'replay.item.deferred' AND object_type = 'dead_letter' AND object_id = $1`, fmt.Sprint(id)).Scan(&rows, &reasons))
	assert.LessOrEqual(t, rows, 4, "%d audit rows of the item deferred (%d distinct reasons) in ~10 s of AGG behind: %s", rows, reasons, b.jobsText(t, req.ID))
}

// TestRevReplay14BehindCopyCoveredBySiblingShownReplayed: two streams
// made after the original source the target directly: LAGGING (its link
// down: behind) and FRESH, made after it with a longer window, which
// copied the original at once. latestCopies leaves LAGGING out by its
// creation ("FRESH began no earlier and holds an id longer"), but since
// 980134b a late copy's hold starts when it copied the original (Copied),
// which for LAGGING is later than FRESH's: it is never read, the job goes
// once FRESH's window passed, and is shown replayed. When LAGGING's link
// comes back it copies the original, then the replay inside its window,
// and drops the replay.
func TestRevReplay14BehindCopyCoveredBySiblingShownReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	id := rr14Original(t, b, "orig-sibling-1")
	lagCfg := jetstream.StreamConfig{Name: "LAGGING", Duplicates: time.Second,
		Sources: []*jetstream.StreamSource{{Name: "APP", External: &jetstream.ExternalStream{APIPrefix: "$JS.elsewhere.API"}}}}
	lagging := b.createStream(t, lagCfg)
	fresh := b.createStream(t, jetstream.StreamConfig{Name: "FRESH", Duplicates: 2 * time.Second, Sources: []*jetstream.StreamSource{{Name: "APP"}}})
	wait.Until(t, "FRESH to copy the original", 30*time.Second, func() bool { return rr14Count(t, fresh) == 1 })

	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	run(t, b.worker(t, replay.WorkerConfig{}))
	rr14Decided(t, b, req.ID, "LAGGING")
	assert.Zero(t, b.jobStates(t, req.ID)[string(replay.JobReplayed)],
		"shown replayed while LAGGING, which sources the target, has not copied the original (it holds %d messages of the subject): %s",
		rr14Count(t, lagging), b.jobsText(t, req.ID))

	lagCfg.Sources = []*jetstream.StreamSource{{Name: "APP"}}
	_, err := b.js.UpdateStream(ctx, lagCfg)
	require.NoError(t, err)
	r := b.waitFinished(t, req.ID)
	require.Equal(t, 1, b.jobStates(t, req.ID)[string(replay.JobReplayed)], "%s: %s", r.Status, b.jobsText(t, req.ID))
	wait.For(t, "the replay to reach LAGGING", 30*time.Second, func() error {
		if n := rr14Count(t, lagging); n != 2 {
			return fmt.Errorf("the item is shown replayed, but LAGGING holds %d messages of the subject (APP %d, FRESH %d): LAGGING dropped the replay as a duplicate of the original",
				n, b.onSubject(t, rr14Subject), rr14Count(t, fresh))
		}
		return nil
	})
}
