package replay_test

import (
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestReplayRulesArePure shows that every rule that allows or refuses a
// replay is a pure function of replaypolicy and that the service and the
// workers decide nothing themselves. replaypolicy's rule files import
// nothing that reaches a database, a network or a clock, and its TestRules
// has a case for every check. Here, a case per rule function and step: the
// service or a worker is brought to apply it for real, and the sentence it
// stores or answers is exactly the one the function gives for the same
// facts.
func TestReplayRulesArePure(t *testing.T) {
	t.Parallel()

	t.Run("RuleFilesDoNoIO", func(t *testing.T) {
		// unicode, idna and norm spell a mailbox one way (people.go): tables
		// in memory, no network for all idna's package path.
		allowed := []string{"fmt", "sort", "strings", "time", "unicode", "golang.org/x/net/idna", "golang.org/x/text/unicode/norm",
			"github.com/quarantine-console/quarantine"}
		for _, f := range []string{"verdict.go", "item.go", "decide.go", "execute.go", "people.go", "errorclass.go", "delivery.go", "outcome.go"} {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "replaypolicy", f), nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, imp := range file.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				assert.Contains(t, allowed, path, "replaypolicy/%s imports %s", f, path)
			}
		}
	})

	b := setupReplay(t)
	ctx := context.Background()
	table := b.policy.Load()
	acme := func(itemType string, change func(*replaypolicy.Item)) replaypolicy.Item {
		it := replaypolicy.Item{Tenant: "acme", ItemType: itemType, MsgID: "m", OperationID: "op", Principal: "user:1",
			OriginalSubject: "app.acme." + itemType, PayloadSHA256: "aa", OriginalPayloadSHA256: "aa", Status: "quarantined"}
		if change != nil {
			change(&it)
		}
		return it
	}
	// skipReasons drafts ids and returns the sentence of each item left out.
	skipReasons := func(t *testing.T, ids ...int64) map[int64]string {
		_, reqs := b.draft(t, oncall, ids...)
		return skipReasonsOf(t, b.replays, reqs)
	}
	// jobResult runs one claim of a worker on svc and returns the job's
	// state and result.
	jobResult := func(t *testing.T, svc *replay.Service, id int64) (replay.JobState, string) {
		w := replay.NewWorker(svc, b.js, b.auth, nil, replay.WorkerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		var state replay.JobState
		var result string
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT state, result FROM replay_jobs WHERE request_id = $1`, id).Scan(&state, &result))
		return state, result
	}
	// message is the sentence of a refusal; t is the case's, so a rule
	// that did not refuse fails its own case and not the others.
	message := func(t *testing.T, err error) string {
		require.Error(t, err)
		return quarantine.ErrorMessage(err)
	}

	tests := []struct {
		rule string
		run  func(t *testing.T) (got, want string)
	}{
		{"JudgeItem/AtDraft", func(t *testing.T) (string, string) {
			id := b.seedItem(t, "email.send", "pure-noop", nil, "{}")
			want := replaypolicy.JudgeItem(table, acme("email.send", func(i *replaypolicy.Item) { i.OperationID = "" }), replaypolicy.AtDraft)
			return skipReasons(t, id)[id], want.Reason
		}},
		{"JudgeItem/replay.SubjectAllowlist", func(t *testing.T) (string, string) {
			id := b.seedItem(t, "search.index_update", "pure-sys", nats.Header{dlq.HeaderOriginalSubject: {"$JS.API.INFO"}}, "{}")
			refusal := (&replay.SubjectAllowlist{}).Check("$JS.API.INFO").Error()
			want := replaypolicy.JudgeItem(table, acme("search.index_update", func(i *replaypolicy.Item) {
				i.OriginalSubject, i.SubjectRefusal = "$JS.API.INFO", refusal
			}), replaypolicy.AtDraft)
			return skipReasons(t, id)[id], want.Reason
		}},
		{"JudgeDraft/Bulk", func(t *testing.T) (string, string) {
			a, c := b.seedItem(t, "orders.refund", "pure-r1", nil, "{}"), b.seedItem(t, "orders.refund", "pure-r2", nil, "{}")
			v := replaypolicy.JudgeItem(table, acme("orders.refund", nil), replaypolicy.AtDraft)
			want := replaypolicy.JudgeDraft(table, replaypolicy.Manual, "acme", true, []replaypolicy.Verdict{v, v})[1]
			return skipReasons(t, a, c)[c], want.Reason
		}},
		{"JudgeDraft/MayRequest", func(t *testing.T) (string, string) {
			id := b.seedItem(t, "search.index_update", "pure-may", nil, "{}")
			batch, err := b.replays.CreateDrafts(ctx, oncall, []int64{id}, []string{"acme"}, false,
				func(string, replaypolicy.Class) bool { return false }, quarantine.RequestMeta{})
			require.NoError(t, err)
			reqs, err := b.replays.Batch(ctx, batch)
			require.NoError(t, err)
			items, err := b.replays.Items(ctx, reqs[0].ID, 1)
			require.NoError(t, err)
			v := replaypolicy.JudgeItem(table, acme("search.index_update", nil), replaypolicy.AtDraft)
			want := replaypolicy.JudgeDraft(table, replaypolicy.Rebuildable, "acme", false, []replaypolicy.Verdict{v})[0]
			return items[0].SkipReason, want.Reason
		}},
		{"JudgeRequest/NothingLeft", func(t *testing.T) (string, string) {
			id := b.seedItem(t, "search.index_update", "pure-void", nats.Header{dlq.HeaderOriginalSubject: {"_INBOX.x"}}, "{}")
			batch, _ := b.draft(t, oncall, id)
			reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "r"}, quarantine.RequestMeta{})
			require.NoError(t, err)
			r, err := b.replays.Request(ctx, reqs[0].ID)
			require.NoError(t, err)
			require.Equal(t, replay.StatusVoid, r.Status)
			_, want := replaypolicy.JudgeRequest(table, nil, replaypolicy.Request{Class: replaypolicy.Rebuildable})
			return r.StatusReason, want.Reason
		}},
		{"JudgeRequest/Rate", func(t *testing.T) (string, string) {
			id := b.seedItem(t, "search.index_update", "pure-rate", nil, "{}")
			batch, drafts := b.draft(t, oncall, id)
			_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "r", Rates: map[int64]float64{drafts[0].ID: 1e9}}, quarantine.RequestMeta{})
			var refused *replay.RefusedError
			require.ErrorAs(t, err, &refused)
			_, want := replaypolicy.JudgeRequest(table, []replaypolicy.Verdict{replaypolicy.JudgeItem(table, acme("search.index_update", nil), replaypolicy.AtRequest)},
				replaypolicy.Request{Class: replaypolicy.Rebuildable, Items: 1, Requester: oncall, Reason: "r", PolicyVersion: table.Version(), Rate: 1e9})
			return refused.Reasons[drafts[0].ID], want.Reason
		}},
		{"SubmitVerdict/Confirmation", func(t *testing.T) (string, string) {
			id := b.seedItem(t, "orders.refund", "pure-conf", nil, "{}")
			batch, drafts := b.draft(t, oncall, id)
			_, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "r", Confirmations: map[int64]string{drafts[0].ID: "yes"}}, quarantine.RequestMeta{})
			var refused *replay.RefusedError
			require.ErrorAs(t, err, &refused)
			want := replaypolicy.SubmitVerdict(replaypolicy.Decision{Requirement: replaypolicy.TwoApprovers, Confirmation: "REPLAY pure-conf"}, "yes")
			return refused.Reasons[drafts[0].ID], want.Reason
		}},
		{"MayApprove", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "email.send", "pure-own", nats.Header{dlq.HeaderOperationID: {"op-own"}}, "{}")}, replay.SubmitInput{})
			_, err := b.replays.Approve(ctx, req.ID, oncall, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
			return message(t, err), replaypolicy.MayApprove(replaypolicy.Request{Requester: oncall}, oncall, quarantine.Actor{}).Reason
		}},
		{"Confirmed", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "orders.refund", "pure-typed", nil, "{}")}, replay.SubmitInput{})
			_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY it"}, quarantine.RequestMeta{})
			return message(t, err), replaypolicy.Confirmed("REPLAY pure-typed", "REPLAY it").Reason
		}},
		{"Require", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "orders.refund", "pure-req", nil, "{}")}, replay.SubmitInput{})
			d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex(), Confirmation: "REPLAY pure-req"}, quarantine.RequestMeta{})
			require.NoError(t, err)
			stored, err := b.replays.Request(ctx, req.ID)
			require.NoError(t, err)
			as, err := b.replays.Approvals(ctx, req.ID)
			require.NoError(t, err)
			want := replaypolicy.Decide(table, acme("orders.refund", func(i *replaypolicy.Item) { i.MsgID = "pure-req" }), approver1,
				replay.PolicyRequest(stored, as), b.clock())
			return d.Reason, want.Reason
		}},
		{"MayCancel", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "email.send", "pure-cancel", nats.Header{dlq.HeaderOperationID: {"op-c"}}, "{}")}, replay.SubmitInput{})
			return message(t, b.replays.Cancel(ctx, req.ID, approver1, "", quarantine.RequestMeta{})), replaypolicy.MayCancel(oncall, approver1).Reason
		}},
		{"MayEditPayload", func(t *testing.T) (string, string) {
			id := b.seedItem(t, "email.send", "pure-edit", nats.Header{dlq.HeaderOperationID: {"op-e"}}, "{}")
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			err := b.replays.EditPayload(ctx, req.ID, id, oncall, replay.PayloadEdit{Payload: []byte("{}"), Reason: "r"}, quarantine.RequestMeta{})
			return message(t, err), replaypolicy.MayEditPayload(replaypolicy.SameOperation, oncall, oncall).Reason
		}},
		{"JudgeRun/RequesterRights", func(t *testing.T) (string, string) {
			lost := quarantine.Actor{Issuer: oncall.Issuer, Subject: "pure-lost", Email: "lost@example.com"}
			dir := authz.NewDirectory(b.db.Pool)
			require.NoError(t, dir.Remember(ctx, authz.User{Actor: lost, Groups: []string{"quarantine:acme:oncall"}}))
			id := b.seedItem(t, "search.index_update", "pure-rights", nil, "{}")
			batch, err := b.replays.CreateDrafts(ctx, lost, []int64{id}, []string{"acme"}, false, allowAll, quarantine.RequestMeta{})
			require.NoError(t, err)
			reqs, err := b.replays.Submit(ctx, batch, lost, replay.SubmitInput{Reason: "r"}, quarantine.RequestMeta{})
			require.NoError(t, err)
			require.NoError(t, dir.Remember(ctx, authz.User{Actor: lost, Groups: []string{}})) // signed in again without the group
			state, result := jobResult(t, b.replays, reqs[0].ID)
			assert.Equal(t, replay.JobBlocked, state)
			want := replaypolicy.JudgeRun(table, replaypolicy.Run{Tenant: "acme", Class: replaypolicy.Rebuildable, Status: "approved",
				PolicyVersion: table.Version(), Requester: lost, Authority: &replaypolicy.Authority{RequesterMay: false}}, b.clock())
			return result, want.Reason
		}},
		{"JudgeJob/Subject", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "search.index_update", "pure-narrow", nil, "{}")}, replay.SubmitInput{})
			narrow, err := replay.ParseSubjectAllowlist("acme=billing.>")
			require.NoError(t, err)
			state, result := jobResult(t, replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: narrow}), req.ID)
			assert.Equal(t, replay.JobPending, state, "a worker's own setting waits for a worker whose setting allows it")
			refusal := narrow.For("acme", "app.acme.search.index_update").Error()
			return result, replaypolicy.JudgeJob(replaypolicy.Job{Class: replaypolicy.Rebuildable, SubjectRefusal: refusal}).Reason
		}},
		{"JudgeItem/AtExecution", func(t *testing.T) (string, string) {
			id := b.seedItem(t, "search.index_update", "pure-gone", nil, "{}")
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			testfactory.SetStatus(t, b.db.Pool, dlq.StatusResolved, id) // behind the request's back
			state, result := jobResult(t, b.replays, req.ID)
			assert.Equal(t, replay.JobBlocked, state)
			want := replaypolicy.JudgeItem(table, acme("search.index_update", func(i *replaypolicy.Item) {
				i.Status, i.Request, i.HeldBy = "resolved", req.ID, req.ID
			}), replaypolicy.AtExecution)
			return result, want.Reason
		}},
		{"JudgeEdit", func(t *testing.T) (string, string) {
			id := b.seedItem(t, "search.index_update", "pure-edit-why", nil, "{}")
			_, drafts := b.draft(t, oncall, id)
			err := b.replays.EditPayload(ctx, drafts[0].ID, id, oncall, replay.PayloadEdit{Payload: []byte("{}")}, quarantine.RequestMeta{})
			return message(t, err), replaypolicy.JudgeEdit(replaypolicy.Rebuildable, oncall, oncall, "").Reason
		}},
		{"JudgeDraftAge", func(t *testing.T) (string, string) {
			ttl := replay.New(b.db.Pool, replay.Config{Policy: b.policy.Load, Subjects: testSubjects(t), DraftTTL: time.Minute})
			id := b.seedItem(t, "search.index_update", "pure-old", nil, "{}")
			batch, drafts := testfactory.Draft(t, ttl, oncall, id)
			_, err := b.db.Pool.Exec(ctx, `UPDATE replay_requests SET created_at = now() - interval '2 minutes' WHERE id = $1`, drafts[0].ID)
			require.NoError(t, err)
			_, err = ttl.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "r"}, quarantine.RequestMeta{})
			return message(t, err), replaypolicy.JudgeDraftAge(time.Now().Add(-2*time.Minute), time.Now(), time.Minute).Reason
		}},
		{"JudgeSelection", func(t *testing.T) (string, string) {
			letters := make([]testfactory.Letter, replaypolicy.ListedOverCap+1)
			for i := range letters {
				letters[i] = testfactory.Letter{ItemType: "orders.refund", MsgID: fmt.Sprint("pure-many-", i)}
			}
			ids := testfactory.DeadLetters(t, b.db.Pool, letters...)
			_, err := b.replays.CreateDrafts(ctx, oncall, ids, []string{"acme"}, false, allowAll, quarantine.RequestMeta{})
			return message(t, err), replaypolicy.JudgeSelection(table, replaypolicy.Manual, "acme", len(ids)).Reason
		}},
		{"JudgeJob/Revalidation", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "accounts.permission_grant", "pure-reval", nats.Header{dlq.HeaderPrincipal: {"user:5"}}, "{}")}, replay.SubmitInput{})
			_, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
			require.NoError(t, err)
			state, result := jobResult(t, b.replays, req.ID) // no revalidation subject configured on the worker
			assert.Equal(t, replay.JobPending, state, "it waits for a worker that has one")
			return result, replaypolicy.JudgeJob(replaypolicy.Job{Class: replaypolicy.Revalidate, Ledger: &replaypolicy.Ledger{}, // the ledger holds nothing of it
				Revalidation: &replaypolicy.Revalidation{NotAsked: true}}).Reason
		}},
		{"JudgeWindow", func(t *testing.T) (string, string) {
			now := time.Now().UTC()
			id := b.seedItem(t, "search.index_update", "pure-window", nats.Header{dlq.HeaderFirstFailedAt: {now.Format(time.RFC3339Nano)}}, "{}")
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			state, result := jobResult(t, b.replays, req.ID)
			assert.Equal(t, replay.JobDeferred, state)
			d, err := b.store.Get(ctx, id)
			require.NoError(t, err)
			want := replaypolicy.JudgeWindow(replaypolicy.Attempt{MsgID: "pure-window", StoredBy: *d.FirstFailedAt,
				Window: replaypolicy.Window{Stream: "APP", Duplicates: 2 * time.Minute}, Margin: b.config(t).WindowMargin}, d.DeadLetteredAt)
			return result, want.Reason
		}},
		{"JudgeAck", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "search.index_update", "pure-ack", nil, "{}")}, replay.SubmitInput{})
			w := replay.NewWorker(b.replays, b.js, b.auth, nil, replay.WorkerConfig{}, b.log)
			w.OnAck(func(int64, *jetstream.PubAck, error) (*jetstream.PubAck, error) { return nil, context.DeadlineExceeded })
			_, err := w.RunOnce(ctx)
			require.NoError(t, err)
			var result string
			require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT result FROM replay_jobs WHERE request_id = $1`, req.ID).Scan(&result))
			return result, replaypolicy.JudgeAck(replaypolicy.Ack{Lost: context.DeadlineExceeded.Error()}, time.Now()).Reason
		}},
		{"JudgeRequestOutcome", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "search.index_update", "pure-done", nil, "{}")}, replay.SubmitInput{})
			jobResult(t, b.replays, req.ID)
			r, err := b.replays.Request(ctx, req.ID)
			require.NoError(t, err)
			return r.StatusReason, replaypolicy.JudgeRequestOutcome(replaypolicy.Outcomes{Replayed: 1}).Reason
		}},
		{"JudgeStop", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "email.send", "pure-stop", nats.Header{dlq.HeaderOperationID: {"op-s"}}, "{}")}, replay.SubmitInput{})
			err := b.replays.Stop(ctx, req.ID, approver1, replay.StopInput{Reason: "wrong", Typed: "stop"}, quarantine.RequestMeta{})
			return message(t, err), replaypolicy.JudgeStop("wrong", "stop").Reason
		}},
		{"MayReconcile", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "email.send", "pure-own-reconcile", nats.Header{dlq.HeaderOperationID: {"op-or"}}, "{}")}, replay.SubmitInput{})
			err := b.replays.Reconcile(ctx, req.ID, 1, oncall, replay.ReconcileInput{Choice: replaypolicy.Applied, Note: "mine"}, quarantine.RequestMeta{})
			return message(t, err), replaypolicy.MayReconcile(replaypolicy.Request{Requester: oncall}, oncall, quarantine.Actor{}).Reason
		}},
		{"JudgeReconcile", func(t *testing.T) (string, string) {
			req := b.request(t, []int64{b.seedItem(t, "email.send", "pure-reconcile", nats.Header{dlq.HeaderOperationID: {"op-r"}}, "{}")}, replay.SubmitInput{})
			err := b.replays.Reconcile(ctx, req.ID, 1, approver1, replay.ReconcileInput{Choice: replaypolicy.Applied}, quarantine.RequestMeta{})
			return message(t, err), replaypolicy.JudgeReconcile(replaypolicy.Applied, "", string(req.Status), req.ApprovalsNeeded).Reason
		}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got, want := tt.run(t)
			require.NotEmpty(t, want, "the rule refuses these facts")
			assert.Equal(t, want, got, "the service or worker says what the rule says")
		})
	}
	names := make([]string, len(tests))
	for i, tt := range tests {
		names[i], _, _ = strings.Cut(tt.rule, "/")
	}
	for _, fn := range []string{"JudgeItem", "JudgeDraft", "JudgeRequest", "SubmitVerdict", "Require", "MayApprove", "Confirmed",
		"MayCancel", "MayEditPayload", "JudgeEdit", "JudgeDraftAge", "JudgeSelection", "JudgeRun", "JudgeJob",
		"JudgeWindow", "JudgeAck", "JudgeRequestOutcome", "JudgeStop", "JudgeReconcile", "MayReconcile"} {
		assert.Contains(t, names, fn, "a case shows the service or a worker applying %s", fn)
	}
}
