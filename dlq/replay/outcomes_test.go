package replay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/app"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/dlqdemo"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRequestOutcomeStates brings the items of one request to every
// outcome the worker decides, and checks what each says, what becomes of
// its dead letter, and that the request is done only when every item was
// replayed or skipped: otherwise done with problems, with the counts.
func TestRequestOutcomeStates(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const window = 2 * time.Second
	b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: window})
	on := func(subject string) nats.Header { return nats.Header{dlq.HeaderOriginalSubject: {subject}} }

	replayed := b.seedItem(t, "search.index_update", "out-replayed", nil, "{}")
	blocked := b.seedItem(t, "search.index_update", "out-blocked", nil, "{}")
	leftOut := b.seedItem(t, "search.index_update", "out-left", on("app.globex.search.index_update"), "{}")
	unknown := b.seedItem(t, "search.index_update", "out-unknown", on("events.acme.search.unknown"), "{}")
	// Another message holds out-suppressed in its target's window, and the
	// job was deferred twice for it already. Its target is APP, whose
	// window (two minutes) still holds that message when the worker
	// publishes however slow the machine: in EVENTS' 2 s, a slow setup
	// could let it out first and the publish be stored.
	_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: "app.acme.search.taken", Data: []byte("x")}, jetstream.WithMsgID("out-suppressed"))
	require.NoError(t, err)
	suppressed := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "out-suppressed",
		Subject: "app.acme.search.taken", Headers: map[string][]string{dlq.HeaderFirstFailedAt: {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}})

	req := b.request(t, []int64{replayed, blocked, leftOut, unknown, suppressed}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	_, err = b.db.Pool.Exec(ctx, `UPDATE dead_letters SET status = 'resolved' WHERE id = $1`, blocked) // behind the request's back
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET deferrals = 2 WHERE dead_letter_id = $1`, suppressed)
	require.NoError(t, err)
	var unknownJob int64
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT id FROM replay_jobs WHERE dead_letter_id = $1`, unknown).Scan(&unknownJob))
	w := b.worker(t, replay.WorkerConfig{Retry: 100 * time.Millisecond})
	w.OnAck(func(jobID int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
		if jobID == unknownJob {
			return nil, context.DeadlineExceeded // every answer about out-unknown is lost
		}
		return a, err
	})
	run(t, w)

	done := b.waitStatus(t, req.ID, replay.StatusDoneWithProblems)
	assert.Equal(t, "done with problems: 1 replayed, 1 suppressed as a duplicate, 2 blocked, 1 needs reconciliation", done.StatusReason)
	items, err := b.replays.Items(ctx, req.ID, 10)
	require.NoError(t, err)
	outcome := map[int64]replay.Item{}
	for _, it := range items {
		outcome[it.DeadLetterID] = it
	}
	for id, want := range map[int64]struct {
		state  replay.JobState
		reason string
		status dlq.Status
	}{
		replayed:   {replay.JobReplayed, "replayed: published to app.acme.search.index_update and stored as APP:", dlq.StatusReplayed},
		blocked:    {replay.JobBlocked, "this item was resolved by hand", dlq.StatusResolved},
		leftOut:    {"", "", dlq.StatusQuarantined},
		unknown:    {replay.JobNeedsReconciliation, "no longer covers it", dlq.StatusNeedsReconciliation},
		suppressed: {replay.JobSuppressed, "3 times", dlq.StatusReplayFailed},
	} {
		it := outcome[id]
		assert.Equal(t, want.state, it.Outcome, "dead letter %d: %s", id, it.OutcomeReason)
		assert.Contains(t, it.OutcomeReason, want.reason)
		d, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want.status, d.Status, "dead letter %d", id)
	}
	assert.Equal(t, replay.VerdictBlock, outcome[leftOut].Verdict, "left out when frozen: it counts as blocked")
	p, err := b.replays.Progress(ctx, req.ID)
	require.NoError(t, err)
	assert.Equal(t, replay.Progress{Replayed: 1, Suppressed: 1, Blocked: 1, LeftOutBlocked: 1, NeedsReconciliation: 1}, p)
	var audited string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT outcome FROM audit_log WHERE action = 'replay.done_with_problems' AND object_id = $1`,
		fmt.Sprint(req.ID)).Scan(&audited))
	assert.Equal(t, "error", audited, "done with problems is not audited as a success")
	assert.Equal(t, 1, b.onSubject(t, "app.acme.search.taken"), "the suppressed item was never stored")

	t.Run("DoneWhenReplayedOrSkipped", func(t *testing.T) {
		hdr := on("events.acme.analytics.event")
		first := b.seedItem(t, "analytics.event", "out-once", hdr, "{}")
		r := b.request(t, []int64{first}, replay.SubmitInput{})
		b.waitStatus(t, r.ID, replay.StatusDone)
		again := b.seedItem(t, "analytics.event", "out-once", hdr, "{}") // the same event, dead-lettered again
		fresh := b.seedItem(t, "analytics.event", "out-fresh", hdr, "{}")
		r = b.request(t, []int64{again, fresh}, replay.SubmitInput{})
		done := b.waitStatus(t, r.ID, replay.StatusDone)
		assert.Equal(t, "done: 1 replayed, 1 skipped", done.StatusReason)
	})
	t.Run("LeftRunning", func(t *testing.T) {
		// A worker recorded the last job and lost its database before it
		// could end the request: the sweeper ends it.
		id := b.seedItem(t, "search.index_update", "out-idle", nil, "{}")
		r := b.request(t, []int64{id}, replay.SubmitInput{})
		_, err := b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'replayed' WHERE request_id = $1`, r.ID)
		require.NoError(t, err)
		_, err = b.db.Pool.Exec(ctx, `UPDATE replay_requests SET status = 'running' WHERE id = $1`, r.ID)
		require.NoError(t, err)
		n, err := b.replays.FinishIdle(ctx)
		require.NoError(t, err)
		assert.Positive(t, n)
		r, err = b.replays.Request(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, replay.StatusDone, r.Status)
		assert.Equal(t, "done: 1 replayed", r.StatusReason)
	})
	t.Run("Cancelled", func(t *testing.T) {
		ids, _ := b.seedN(t, 3, "search.index_update", "out-cancel")
		batch, drafts := b.draft(t, oncall, ids...)
		reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "r", Rates: map[int64]float64{drafts[0].ID: 0.1}}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.NoError(t, b.replays.Cancel(ctx, reqs[0].ID, oncall, "not now", quarantine.RequestMeta{}))
		wait.Until(t, "nothing left running", time.Minute, func() bool {
			s := b.jobStates(t, reqs[0].ID)
			return s["cancelled"]+s["replayed"] == 3
		})
		r, err := b.replays.Request(ctx, reqs[0].ID)
		require.NoError(t, err)
		assert.Equal(t, replay.StatusCancelled, r.Status, "a cancelled request stays cancelled")
	})
}

// TestErrorClassRules drafts dead letters of every error class and checks
// the seeds' retry table as the policy's defaults: transient goes by its
// class; stale_version never (resolve by hand); schema_invalid and
// permanent not before an edit or a fix; policy at least revalidate;
// unknown_effect needs a reconciliation note and one approver whatever the
// class. Each refused item names its rule. A policy file may tighten them.
func TestErrorClassRules(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	seed := func(class, msgID string) int64 {
		return testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: msgID, Class: class, Principal: "user:9",
			Payload: []byte(`{"doc":"` + msgID + `"}`)})
	}
	ids := map[string]int64{}
	for _, class := range []string{"transient", "stale_version", "schema_invalid", "permanent", "policy", "unknown_effect"} {
		ids[class] = seed(class, "ec-"+class)
	}
	batch, drafts := b.draft(t, oncall, ids["transient"], ids["stale_version"], ids["schema_invalid"], ids["permanent"], ids["policy"], ids["unknown_effect"])
	byClass := map[replaypolicy.Class]replay.Request{}
	for _, d := range drafts {
		byClass[d.Class] = d
	}
	verdicts := b.itemsOf(t, drafts)
	assert.Equal(t, replay.VerdictGo, verdicts[ids["transient"]].Verdict)
	assert.Equal(t, replaypolicy.CheckErrorNever, verdicts[ids["stale_version"]].Check)
	assert.Contains(t, verdicts[ids["stale_version"]].SkipReason, "replaying an older version over a newer one undoes it")
	for _, c := range []string{"schema_invalid", "permanent"} {
		assert.Equal(t, replaypolicy.CheckNeedsFix, verdicts[ids[c]].Check, c)
		assert.Contains(t, verdicts[ids[c]].SkipReason, "replays only after a fix", c)
	}
	require.Contains(t, byClass, replaypolicy.Revalidate, "a policy failure replays at least as revalidate")
	assert.Equal(t, replay.VerdictGo, verdicts[ids["policy"]].Verdict)
	assert.Equal(t, replay.VerdictGo, verdicts[ids["unknown_effect"]].Verdict, "it goes, with a note")

	// Without a reconciliation note the submit is refused, naming it.
	rebuildable := byClass[replaypolicy.Rebuildable]
	_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "fixed"}, quarantine.RequestMeta{})
	var refused *replay.RefusedError
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, refused.Reasons[rebuildable.ID], `error class "unknown_effect", which needs reconciliation first`)

	// An edit lets a schema_invalid item go (it needs an approver then).
	require.NoError(t, b.replays.EditPayload(ctx, rebuildable.ID, ids["schema_invalid"], oncall,
		replay.PayloadEdit{Payload: []byte(`{"doc":"ec-schema_invalid","version":2}`), Reason: "add the version the v2 consumer requires"}, quarantine.RequestMeta{}))
	items, err := b.replays.Items(ctx, rebuildable.ID, 10)
	require.NoError(t, err)
	for _, it := range items {
		if it.DeadLetterID == ids["schema_invalid"] {
			assert.Equal(t, replay.VerdictGo, it.Verdict, "the edit lets it go: %s", it.SkipReason)
		}
	}

	note := "the refund ledger shows no entry for ec-unknown_effect (checked 10:42)"
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "fixed", ReconciliationNote: note}, quarantine.RequestMeta{})
	require.NoError(t, err)
	var req replay.Request
	for _, r := range reqs {
		if r.Class == replaypolicy.Rebuildable {
			req = r
		}
	}
	require.Equal(t, replay.StatusPendingApproval, req.Status, "an unknown effect (and an edit) need one approver, whatever the class")
	assert.Equal(t, note, req.ReconciliationNote)
	d, err := b.replays.Decision(ctx, req.ID, approver1)
	require.NoError(t, err)
	assert.True(t, d.ActorCanApprove)
	_, err = b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
	require.NoError(t, err)
	run(t, b.worker(t, replay.WorkerConfig{}))
	b.waitStatus(t, req.ID, replay.StatusDoneWithProblems) // the never and not-fixed items were left out
	got := b.published(t)
	assert.Contains(t, got, "ec-transient")
	assert.Contains(t, got, "ec-unknown_effect")
	assert.Contains(t, got, "ec-schema_invalid")
	assert.Equal(t, `{"doc":"ec-schema_invalid","version":2}`, string(got["ec-schema_invalid"].Data))
	assert.NotContains(t, got, "ec-stale_version")
	assert.NotContains(t, got, "ec-permanent")

	t.Run("FileTightens", func(t *testing.T) {
		strict, err := replaypolicy.Parse("strict.toml", []byte(`
[[rule]]
item_type = "search.*"
class = "rebuildable"
[error_class.transient]
replay = "never"
`))
		require.NoError(t, err)
		svc := replay.New(b.db.Pool, replay.Config{Policy: func() *replaypolicy.Table { return strict }, Subjects: testSubjects(t), Revalidation: true})
		id := seed("transient", "ec-strict")
		_, drafts := testfactory.Draft(t, svc, oncall, id)
		items, err := svc.Items(ctx, drafts[0].ID, 1)
		require.NoError(t, err)
		assert.Equal(t, replaypolicy.CheckErrorNever, items[0].Check)
	})
}

// TestReplayLoopLinkedAndLimited replays a dead letter whose consumer keeps
// failing: each replayed message comes back through the producer helper
// (Dlq-Replay-Of, renamed Upstream-Dlq-Replay-Of) and the ingester links
// it to the dead letter it came from, one generation more. From the
// policy's generation_limit (3) on, only manual may replay it. A
// Dlq-Replay-Of naming another tenant's dead letter, one of another
// message, or one of this tenant and message the console never replayed,
// is flagged and not linked.
func TestReplayLoopLinkedAndLimited(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: time.Second})
	watch, err := dlq.ParseWatchStreams("EVENTS") // give-ups of its consumers are captured from advisories too
	require.NoError(t, err)
	in := dlq.NewIngester(dlq.IngestConfig{Watch: watch}, b.js, b.store, dlq.NewMetrics(prometheus.NewRegistry()), b.log)
	ictx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	require.NoError(t, in.Setup(ictx))
	go func() { assert.NoError(t, in.Run(ictx)) }()
	run(t, b.worker(t, replay.WorkerConfig{}))

	const subject = "events.acme.search.index_update"
	deadLetter := func(orig *nats.Msg) int64 {
		msgID := orig.Header.Get(dlq.HeaderNatsMsgID)
		before := countOf(t, b, msgID)
		m, err := dlq.NewMessage(dlq.DefaultSubjectPrefix, "acme", "search.index_update", orig, dlq.Origin{},
			dlq.Failure{Err: errors.New("index: version conflict"), Class: dlq.ClassTransient, Consumer: "indexer"})
		require.NoError(t, err)
		_, err = b.js.PublishMsg(ctx, m)
		require.NoError(t, err)
		wait.Until(t, "the dead letter of "+msgID, time.Minute, func() bool { return countOf(t, b, msgID) > before })
		var id int64
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT max(id) FROM dead_letters WHERE msg_id = $1`, msgID).Scan(&id))
		return id
	}
	orig := &nats.Msg{Subject: subject, Header: nats.Header{dlq.HeaderNatsMsgID: {"loop-1"}}, Data: []byte(`{"doc":"loop"}`)}
	chain := []int64{deadLetter(orig)}
	for gen := 1; gen <= 3; gen++ {
		prev := chain[len(chain)-1]
		req := b.request(t, []int64{prev}, replay.SubmitInput{})
		b.waitStatus(t, req.ID, replay.StatusDone)
		replayed, err := events.GetLastMsgForSubject(ctx, subject)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(prev), replayed.Header.Get(dlq.HeaderReplayOf))
		// The consumer fails on the replayed message and dead-letters it.
		next := deadLetter(&nats.Msg{Subject: subject, Header: replayed.Header, Data: replayed.Data})
		d, err := b.store.Get(ctx, next)
		require.NoError(t, err)
		require.NotNil(t, d.ReplayOf, "generation %d linked", gen)
		assert.Equal(t, prev, *d.ReplayOf)
		assert.Equal(t, int32(gen), d.Generation)
		assert.Empty(t, d.Flags)
		chain = append(chain, next)
	}
	t.Run("Advisory", func(t *testing.T) {
		// A replayed message whose consumer gives up without publishing a
		// dead letter (terminated, or MaxDeliver) is captured from the
		// advisory, and linked the same way.
		const advSubject = "events.acme.search.adv"
		first := deadLetter(&nats.Msg{Subject: advSubject, Header: nats.Header{dlq.HeaderNatsMsgID: {"loop-adv"}}, Data: []byte(`{"doc":"adv"}`)})
		req := b.request(t, []int64{first}, replay.SubmitInput{})
		b.waitStatus(t, req.ID, replay.StatusDone)
		cons, err := b.js.CreateConsumer(ctx, "EVENTS", jetstream.ConsumerConfig{Durable: "adv-indexer", FilterSubject: advSubject,
			AckPolicy: jetstream.AckExplicitPolicy})
		require.NoError(t, err)
		before := countOf(t, b, "loop-adv")
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			require.Equal(t, fmt.Sprint(first), m.Headers().Get(dlq.HeaderReplayOf))
			require.NoError(t, m.TermWithReason("index: version conflict"))
		}
		require.NoError(t, batch.Error())
		wait.Until(t, "the advisory's dead letter", time.Minute, func() bool { return countOf(t, b, "loop-adv") > before })
		var id int64
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT max(id) FROM dead_letters WHERE msg_id = 'loop-adv'`).Scan(&id))
		d, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, dlq.SourceAdvisory, d.SourceKind)
		require.NotNil(t, d.ReplayOf, "a replay's advisory is linked to the dead letter it came from")
		assert.Equal(t, first, *d.ReplayOf)
		assert.Equal(t, int32(1), d.Generation)
	})

	c, err := b.store.Chain(ctx, chain[1], "acme")
	require.NoError(t, err)
	require.Len(t, c.Links, 4, "the whole chain from any of its dead letters")
	assert.False(t, c.More)
	for i, l := range c.Links {
		assert.Equal(t, chain[i], l.ID)
		assert.Equal(t, int32(i), l.Generation)
	}

	// Generation 3: only manual may replay it.
	last := chain[3]
	_, drafts := b.draft(t, oncall, last)
	require.Len(t, drafts, 1)
	assert.Equal(t, replaypolicy.Manual, drafts[0].Class)
	d, err := b.replays.Decision(ctx, drafts[0].ID, oncall)
	require.NoError(t, err)
	assert.Contains(t, d.Reason, "manual (it came back from 3 replays of its message")
	assert.Equal(t, 2, d.ApprovalsNeeded, "two approvers, whatever its item type's class")

	// Claims that are not linked, and say why.
	other := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{Tenant: "globex", ItemType: "search.index_update", MsgID: "loop-1"})
	// Of this tenant and message id, but the console never replayed it.
	never := testfactory.DeadLetter(t, b.db.Pool, testfactory.Letter{ItemType: "search.index_update", MsgID: "forged-NeverReplayed"})
	for name, claim := range map[string]string{"OtherTenant": fmt.Sprint(other), "OtherMessage": fmt.Sprint(chain[0]), "NotAnID": "twenty",
		"NeverReplayed": fmt.Sprint(never)} {
		t.Run(name, func(t *testing.T) {
			msgID := "forged-" + name
			id := deadLetter(&nats.Msg{Subject: subject, Header: nats.Header{dlq.HeaderNatsMsgID: {msgID}, dlq.HeaderReplayOf: {claim}}})
			d, err := b.store.Get(ctx, id)
			require.NoError(t, err)
			assert.Nil(t, d.ReplayOf)
			assert.Zero(t, d.Generation)
			assert.True(t, d.Malformed)
			assert.NotEmpty(t, d.Flags)
		})
	}
}

// countOf counts the dead letters of a message id.
func countOf(t *testing.T, b *replayBundle, msgID string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letters WHERE msg_id = $1`, msgID).Scan(&n))
	return n
}

// TestRevalidateDemoResponder runs the revalidation responder `make run`'s
// demo starts (scripts/run.sh sets REVALIDATE_SUBJECT, `console demo`
// answers on it from the demo's principal list) and replays two revalidate
// items through it: the principal who still holds the grant is replayed,
// the one who lost it is blocked with the directory's reason. A console
// without a revalidation subject says so at start and refuses revalidate
// items from the draft on, naming the setting.
func TestRevalidateDemoResponder(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	sub, err := dlqdemo.ServeRevalidation(b.nc, "demo.revalidate", b.log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	reval := replay.NewNATSRevalidator(b.nc, "demo.revalidate", 2*time.Second)

	mk := func(principal string) (replay.Request, int64) {
		id := b.seedItem(t, "accounts.permission_grant", "demo-"+principal, nats.Header{dlq.HeaderPrincipal: {principal}}, `{"grant":"billing:admin"}`)
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		return req, id
	}
	holder, _ := mk("user:3")
	lost, lostID := mk("user:35")
	run(t, b.worker(t, replay.WorkerConfig{}, reval))
	b.waitStatus(t, holder.ID, replay.StatusDone)
	b.waitStatus(t, lost.ID, replay.StatusDoneWithProblems)
	got := b.published(t)
	assert.Contains(t, got, "demo-user:3")
	assert.NotContains(t, got, "demo-user:35")
	assert.Contains(t, b.job(t, lost.ID, lostID).Result, "user:35 lost accounts:grant (demo directory")

	script, err := os.ReadFile("../../scripts/run.sh")
	require.NoError(t, err)
	assert.Contains(t, string(script), "export REVALIDATE_SUBJECT=", "make run gives the console and the demo a revalidation subject")

	t.Run("WithoutSubject", func(t *testing.T) {
		var log bytes.Buffer
		c := testfactory.StartConsole(t, testfactory.ConsoleOptions{Log: &log, Configure: func(cfg *app.Config) { cfg.Replay.RevalidateSubject = "" }})
		assert.Contains(t, log.String(), "REVALIDATE_SUBJECT is empty: revalidate items cannot be replayed on this deployment")
		id := testfactory.DeadLetter(t, c.Pool, testfactory.Letter{ItemType: "accounts.permission_grant", MsgID: "no-reval", Principal: "user:3"})
		_, drafts := testfactory.Draft(t, c.Replays, oncall, id)
		items, err := c.Replays.Items(ctx, drafts[0].ID, 1)
		require.NoError(t, err)
		assert.Equal(t, replaypolicy.CheckNoRevalidator, items[0].Check)
		assert.Contains(t, items[0].SkipReason, replay.NoRevalidation)
	})
}
