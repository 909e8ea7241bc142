package replaypolicy

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// TestRules has a case for every check the rules apply (Checks): the facts
// that make it decide, through the rule function that applies it, and what
// it decides. Every rule is deterministic: the same facts give the same
// verdict twice.
func TestRules(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	item := func(itemType string, change func(*Item)) Item {
		it := testItem(itemType)
		if change != nil {
			change(&it)
		}
		return it
	}
	judge := func(itemType string, at Step, change func(*Item)) func() Verdict {
		return func() Verdict { return JudgeItem(tbl, item(itemType, change), at) }
	}
	going := func(itemType string) Verdict { return JudgeItem(tbl, testItem(itemType), AtDraft) }
	request := func(itemType string, change func(*Request)) func() Verdict {
		return func() Verdict {
			req := testRequest(tbl)
			if change != nil {
				change(&req)
			}
			_, v := JudgeRequest(tbl, []Verdict{going(itemType)}, req)
			return v
		}
	}
	require := func(itemType string, actor quarantine.Actor, change func(*Request)) func() Verdict {
		return func() Verdict {
			req := testRequest(tbl)
			if change != nil {
				change(&req)
			}
			terms, v := JudgeRequest(tbl, []Verdict{going(itemType)}, req)
			if v.Outcome != Go {
				return v
			}
			d := Require(terms, actor, req, testNow)
			o := Wait
			switch {
			case d.Requirement == Refused:
				o = Block
			case d.Ready:
				o = Go
			}
			return Verdict{Class: d.Class, Outcome: o, Check: d.Check, Reason: d.Reason}
		}
	}
	run := func(change func(*Run)) func() Verdict {
		return func() Verdict {
			r := Run{Tenant: "acme", Class: Rebuildable, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-time.Hour),
				Requester: alice, Authority: &Authority{RequesterMay: true, Approvers: []Standing{{Who: bob, May: true}}}}
			if change != nil {
				change(&r)
			}
			return JudgeRun(tbl, r, testNow)
		}
	}
	job := func(j Job) func() Verdict { return func() Verdict { return JudgeJob(j) } }
	draft := func(class Class, may bool, n int) func() Verdict {
		return func() Verdict {
			vs := make([]Verdict, n)
			for i := range vs {
				vs[i] = going(map[Class]string{Rebuildable: "search.x", Manual: "orders.refund"}[class])
			}
			return JudgeDraft(tbl, class, "acme", may, vs)[0]
		}
	}
	tests := []struct {
		check   string
		outcome Outcome
		verdict func() Verdict
		reason  string // a part of the sentence
	}{
		{CheckNoPolicy, Block, func() Verdict { return JudgeItem(nil, testItem("search.x"), AtDraft) }, "no replay policy is loaded"},
		{CheckReplayed, Done, judge("search.x", AtRequest, func(i *Item) { i.Status = "replayed" }), "already replayed successfully"},
		{CheckClosed, Block, judge("search.x", AtRequest, func(i *Item) { i.Status = "discarded" }), "discarded item cannot be replayed"},
		{CheckStatus, Block, judge("search.x", AtRequest, func(i *Item) { i.Status = "frozen" }), `status "frozen"`},
		{CheckInRequest, Block, judge("search.x", AtDraft, func(i *Item) { i.Status = "replay_requested" }), "already requested"},
		{CheckInRequest, Block, judge("search.x", AtRequest, func(i *Item) { i.Request, i.HeldBy = 7, 5 }), "replay request 5 already holds this dead letter"},
		{CheckNotHeld, Block, judge("search.x", AtExecution, func(i *Item) { i.Request, i.HeldBy = 7, 0 }), "quarantined now, no longer held by this request"},
		{CheckPayloadChange, Block, judge("search.x", AtExecution, func(i *Item) {
			i.Status, i.Request, i.HeldBy, i.ApprovedSHA256 = "replay_requested", 7, 7, "ffff0000ffff0000"
		}), "is not the one approved (ffff0000ffff)"},
		{CheckLedger, Done, judge("analytics.event", AtDraft, func(i *Item) { i.AlreadyReplayed = true }), "was already replayed"},
		{CheckNoSubject, Block, judge("search.x", AtDraft, func(i *Item) { i.OriginalSubject = " " }), "no original subject"},
		{CheckNoMsgID, Block, judge("analytics.event", AtDraft, func(i *Item) { i.MsgID = "" }), "mandatory for dedupe"},
		{CheckPayloadGone, Block, judge("search.x", AtDraft, func(i *Item) { i.PayloadUnavailable = true }), "payload was gone"},
		{CheckSubject, Block, judge("search.x", AtDraft, func(i *Item) { i.SubjectRefusal = `subject "$JS.API" is a system subject` }), "system subject"},
		{CheckNoOperationID, Block, judge("email.send", AtDraft, func(i *Item) { i.OperationID = "" }), "without an operation id"},
		{CheckEdited, Block, judge("email.send", AtRequest, func(i *Item) { i.PayloadEdited = true }), "the payload was edited"},
		{CheckPayloadHash, Block, judge("email.send", AtRequest, func(i *Item) { i.PayloadSHA256 = "ffff" }), "differs from the one received"},
		{CheckNoPrincipal, Block, judge("accounts.grant", AtDraft, func(i *Item) { i.Principal = "" }), "no original principal"},

		{CheckMayRequest, Block, draft(Rebuildable, false, 1), "you may not request rebuildable replays in tenant acme"},
		{CheckBulk, Block, draft(Manual, true, 2), "manual items cannot be replayed in bulk"},
		{CheckBulkCap, Block, draft(Rebuildable, true, 10001), "allows at most 10000 items"},
		{CheckBulkCap, Block, func() Verdict { return JudgeSelection(tbl, Rebuildable, "acme", 10001) }, "one rebuildable request takes at most 10000: narrow it"},

		{CheckNothingLeft, Done, func() Verdict { _, v := JudgeRequest(tbl, nil, Request{Class: Rebuildable}); return v }, "nothing to replay"},
		{CheckRequester, Block, request("search.x", func(r *Request) { r.Requester = quarantine.Actor{Email: "a@x"} }), "requester is not identified"},
		{CheckPolicy, Block, request("search.x", func(r *Request) { r.PolicyVersion = "old" }), "policy changed"},
		{CheckReason, Block, request("search.x", func(r *Request) { r.Reason = "" }), "needs a reason"},
		{CheckNoItems, Block, request("search.x", func(r *Request) { r.Items = 0 }), "at least one item"},
		{CheckRate, Block, request("search.x", func(r *Request) { r.Rate = -1 }), "is not allowed"},
		{CheckIntent, Block, request("email.send", func(r *Request) { r.IntentHash = "" }), "no intent hash"},
		{CheckActor, Block, require("search.x", quarantine.Actor{Subject: "s"}, nil), "you are not identified"},
		{CheckApprovals, Wait, require("email.send", alice, nil), "waiting for approval"},
		{CheckConfirmation, Wait, require("orders.refund", alice, func(r *Request) {
			r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(carol, time.Minute)}
		}), `type "REPLAY ORDERS:42" to confirm`},
		{CheckOwnRequest, Block, func() Verdict { return MayApprove(testRequest(tbl), aliceElsewhere) }, "your own request"},
		{CheckNotRequester, Block, func() Verdict { return MayCancel(alice, bob) }, "only the requester"},
		{CheckEditClass, Block, func() Verdict { return MayEditPayload(SameOperation, alice, alice) }, "cannot be edited"},
		{CheckEditReason, Block, func() Verdict { return JudgeEdit(Rebuildable, alice, alice, " ") }, "say why the payload is changed"},
		{CheckDraftExpired, Block, func() Verdict { return JudgeDraftAge(testNow.Add(-time.Hour), testNow, time.Hour) }, "expired 1h after it was made"},
		{CheckApprovals, Wait, require("search.x", alice, func(r *Request) { r.PayloadEdited = true }), "a payload was edited, so it waits for approval by one approver"},
		{CheckOwnRequest, Block, func() Verdict {
			verified := func(a quarantine.Actor, email string) quarantine.Actor {
				a.Email, a.EmailVerified = email, true
				return a
			}
			req := testRequest(tbl)
			req.Requester = verified(alice, "alice@example.com")
			return MayApprove(req, verified(otherAlice, "Alice@Example.com")) // another account, the same verified email
		}, "your own request"},

		{CheckCancelled, Cancel, run(func(r *Run) { r.Status = "cancelled" }), "was cancelled"},
		{CheckRequestStatus, Block, run(func(r *Run) { r.Status = "rejected" }), "the request is rejected"},
		{CheckExpired, Block, run(func(r *Run) { r.ApprovedAt = testNow.Add(-25 * time.Hour) }), "the approval expired (24h0m0s)"},
		{CheckAuthorityUnread, Wait, run(func(r *Run) { r.Authority.Unreadable = "connection reset" }), "will retry"},
		{CheckRequesterRights, Block, run(func(r *Run) { r.Authority.RequesterMay = false }), "requester alice@example.com no longer may request"},
		{CheckApproverRights, Block, run(func(r *Run) { r.Authority.Approvers[0].May = false }), "approver bob@example.com no longer may approve"},
		{CheckSameIdentity, Wait, job(Job{Class: Dedupe, Ledger: &Ledger{HeldEarlier: true}}), "same identity"},
		{CheckLedgerUnread, Retry, job(Job{Class: SameOperation, Ledger: &Ledger{Unreadable: "timeout"}}), "ledger check failed"},
		{CheckRevalidationNone, Block, job(Job{Class: Revalidate, Revalidation: &Revalidation{Unanswered: "no service answers"}}), "got no answer"},
		{CheckRevalidationDeny, Block, job(Job{Class: Revalidate, Revalidation: &Revalidation{Reason: "revoked"}}), "revalidation denied: revoked"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.check, func(t *testing.T) {
			v := tt.verdict()
			if v.Check != tt.check || v.Outcome != tt.outcome || !strings.Contains(v.Reason, tt.reason) {
				t.Errorf("verdict = %s by %q: %q; want %s by %q containing %q", v.Outcome, v.Check, v.Reason, tt.outcome, tt.check, tt.reason)
			}
			if again := tt.verdict(); !reflect.DeepEqual(again, v) {
				t.Errorf("the same facts gave another verdict: %+v, then %+v", v, again)
			}
		})
		covered[tt.check] = true
	}
	for _, c := range Checks() {
		if !covered[c] {
			t.Errorf("check %q has no case", c)
		}
	}
	if n := len(Checks()); n != len(slices.Compact(slices.Sorted(slices.Values(Checks())))) {
		t.Errorf("Checks() names a check twice")
	}

	// What a job or an item with nothing against it comes to.
	for name, v := range map[string]Verdict{
		"item":       going("search.x"),
		"run":        run(nil)(),
		"dedupe job": JudgeJob(Job{Class: Dedupe, Ledger: &Ledger{}}),
		"revalidate": JudgeJob(Job{Class: Revalidate, Revalidation: &Revalidation{Allow: true}}),
	} {
		if v.Outcome != Go || v.Check != "" || v.Reason != "" {
			t.Errorf("%s: %+v, want Go with no check", name, v)
		}
	}
	// The costly facts are asked for, never assumed.
	if v := JudgeJob(Job{Class: Dedupe}); v.Outcome != Wait || v.Needs != NeedLedger {
		t.Errorf("dedupe job without the ledger: %+v, want it to need the ledger", v)
	}
	if v := JudgeJob(Job{Class: Revalidate}); v.Outcome != Wait || v.Needs != NeedRevalidation {
		t.Errorf("revalidate job without an answer: %+v, want it to need one", v)
	}
	if v := JudgeJob(Job{Class: Rebuildable, SubjectRefusal: "no"}); v.Outcome != Fail || v.Check != CheckSubject {
		t.Errorf("refused subject at execution: %+v, want Fail", v)
	}
}
