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
	window := func(a Attempt) func() Verdict { return func() Verdict { return JudgeWindow(a, testNow) } }
	ack := func(a Ack) func() Verdict { return func() Verdict { return JudgeAck(a, testNow) } }
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
		{CheckPurged, Block, judge("search.x", AtExecution, func(i *Item) { i.Status = "purged" }), "removed by retention"},
		{CheckStatus, Block, judge("search.x", AtRequest, func(i *Item) { i.Status = "frozen" }), `status "frozen"`},
		{CheckInRequest, Block, judge("search.x", AtDraft, func(i *Item) { i.Status = "replay_requested" }), "already requested"},
		{CheckInRequest, Block, judge("search.x", AtRequest, func(i *Item) { i.Request, i.HeldBy = 7, 5 }), "replay request 5 already holds this dead letter"},
		{CheckInRequest, Block, judge("search.x", AtDraft, func(i *Item) { i.HeldBy, i.HeldByStatus = 5, "running" }), "request 5 already holds this dead letter, and a dead letter is in one open request at a time; wait for it to finish, or an approver of acme stops it on request 5 (Emergency stop; its requester may Cancel replay instead)"},
		{CheckInRequest, Block, judge("search.x", AtDraft, func(i *Item) { i.HeldBy, i.HeldByStatus = 5, "done_with_problems" }), "request 5 already holds this dead letter: it has finished, and its replay of it waits for a person; an approver of acme other than its requester settles whether its replay was applied, on request 5"},
		{CheckNotHeld, Block, judge("search.x", AtExecution, func(i *Item) { i.Request, i.HeldBy = 7, 0 }), "quarantined now, no longer held by this request"},
		{CheckPayloadChange, Block, judge("search.x", AtExecution, func(i *Item) {
			i.Status, i.Request, i.HeldBy, i.ApprovedSHA256 = "replay_requested", 7, 7, "ffff0000ffff0000"
		}), "is not the one approved (ffff0000ffff)"},
		{CheckLedger, Done, judge("analytics.event", AtDraft, func(i *Item) { i.AlreadyReplayed = true }), "was already replayed"},
		{CheckLedger, Block, judge("analytics.event", AtDraft, func(i *Item) { i.AlreadyReplayed, i.ChainCut = true, 12 }), "retention removed dead letter 12"},
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
		{CheckOwnRequest, Block, func() Verdict { return MayApprove(testRequest(tbl), aliceElsewhere, quarantine.Actor{}) }, "your own request"},
		{CheckOwnRequest, Block, func() Verdict { return MayReconcile(testRequest(tbl), aliceElsewhere, quarantine.Actor{}) }, "an item of your own request"},
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
			return MayApprove(req, verified(otherAlice, "Alice@Example.com"), quarantine.Actor{}) // another account, the same verified email
		}, "your own request"},

		{CheckCancelled, Cancel, run(func(r *Run) { r.Status = "cancelled" }), "was cancelled"},
		{CheckRequestStatus, Block, run(func(r *Run) { r.Status = "rejected" }), "the request is rejected"},
		{CheckExpired, Block, run(func(r *Run) { r.ApprovedAt = testNow.Add(-25 * time.Hour) }), "the approval expired (24h0m0s)"},
		{CheckStartUnsettled, Wait, run(func(r *Run) { r.ApprovedAt, r.StartUnsettled = testNow.Add(-25*time.Hour), true }), "has not recorded whether it sent it"},
		{CheckAuthorityUnread, Wait, run(func(r *Run) { r.Authority.Unreadable = "connection reset" }), "will retry"},
		{CheckRequesterRights, Block, run(func(r *Run) { r.Authority.RequesterMay = false }), "requester alice@example.com (unverified) no longer may request"},
		{CheckApproverRights, Block, run(func(r *Run) { r.Authority.Approvers[0].May = false }), "approver bob@example.com (unverified) no longer may approve"},
		{CheckSameIdentity, Wait, job(Job{Class: Dedupe, Ledger: &Ledger{HeldEarlier: true}}), "same identity"},
		{CheckSameIdentity, Wait, job(Job{Class: SameOperation, Ledger: &Ledger{InFlight: 7}}), "a job of replay request 7 with the same identity, whose publish may have landed"},
		{CheckLedgerUnread, Wait, job(Job{Class: SameOperation, Ledger: &Ledger{Unreadable: "timeout"}}), "ledger check failed"},
		{CheckLedger, Block, job(Job{Class: Dedupe, Ledger: &Ledger{Replayed: true, ReplayedBy: 4, ChainCut: 12}}), "it is not skipped as done"},
		{CheckRevalidationNone, Block, job(Job{Class: Revalidate, Ledger: &Ledger{}, Revalidation: &Revalidation{Unanswered: "no service answers"}}), "got no answer"},
		{CheckRevalidationDeny, Block, job(Job{Class: Revalidate, Ledger: &Ledger{}, Revalidation: &Revalidation{Reason: "revoked"}}), "revalidation denied: revoked"},
		{CheckIntentChanged, Block, func() Verdict { return JudgeIntent("abc", "abd") }, "changed since you reviewed it"},
		{CheckIntentChanged, Block, func() Verdict { return JudgeRead(3, 5) }, "changed since you read it: read it again"},
		{CheckRefused, Fail, ack(Ack{Refused: "nats: maximum payload exceeded", FirstAttempt: true}), "can never be published as it is"},
		{CheckNotSent, Wait, ack(Ack{NotSent: "nats: connection closed", FirstAttempt: true}), "nothing was stored"},
		// A retry not sent stored nothing now, but its earlier publish may have landed.
		{CheckNotSent, Retry, ack(Ack{NotSent: "nats: connection closed", FirstAttemptAt: testNow.Add(-time.Second), Window: Window{Stream: "APP", Duplicates: 2 * time.Minute}}),
			"whether it landed is still unknown"},
		{CheckUnsendable, Block, judge("search.x", AtDraft, func(i *Item) { i.Send = Send{BadHeader: "Bad Name"} }), `header "Bad Name" cannot be sent`},
		{CheckUnsendable, Block, judge("search.x", AtDraft, func(i *Item) { i.Send = Send{HasBadHeader: true} }), "a header with an empty name cannot be sent"},
		{CheckUnsendable, Block, judge("search.x", AtRequest, func(i *Item) { i.Send = Send{Size: 2000, MaxPayload: 1024} }), "max_payload of 1024 bytes"},
		{CheckUnsendable, Block, judge("search.x", AtRequest, func(i *Item) { i.Send = Send{AlteredHeader: "Nats-Msg-Id"} }), `header "Nats-Msg-Id" holds a line break`},
		{CheckUnsendable, Block, judge("search.x", AtRequest, func(i *Item) { i.Send = Send{Reappeared: true} }), "may be one retention removed"},
		{CheckUnsendable, Block, judge("search.x", AtDraft, func(i *Item) { i.Send = Send{Unverified: true} }), "could not be verified"},
		{CheckUnsendable, Block, judge("search.x", AtRequest, func(i *Item) { i.Send = Send{Unverified: true} }), "still in its stream"},
		{CheckServiceTwin, Block, judge("search.x", AtRequest, func(i *Item) { i.ServiceTwin = 41 }), "dead-lettered it itself, as dead letter 41"},
		{CheckConflictingHeader, Block, judge("email.send", AtDraft, func(i *Item) {
			i.Conflicting = []ConflictingHeader{{Header: "Dlq-Operation-Id", Values: []string{"op-default", "op-email-7"}}}
		}), `the dead letter says Dlq-Operation-Id "op-default" and "op-email-7", which disagree: the console cannot know which one the consumer's effect ran under`},
		{CheckConflictingHeader, Block, judge("search.x", AtExecution, func(i *Item) {
			i.Status, i.HeldBy, i.Request = "replaying", 3, 3
			i.Conflicting = []ConflictingHeader{{Header: "Dlq-Principal"}}
		}), "Dlq-Principal values that disagree (its flags say so"},
		{CheckBrokerKeyText, Block, judge("search.x", AtRequest, func(i *Item) { i.Send = Send{BrokerKeyText: "X-Note"} }),
			`header "X-Note" holds the text "Nats-" in its value`},
		{CheckUnsettled, Block, job(Job{Class: Dedupe, Ledger: &Ledger{Unsettled: 7}}), "replay request 7 may have published this identity"},
		{CheckWorkerFailed, Block, func() Verdict { return JudgeWorkerFailures(3, "index out of range") }, "the worker failed on this item 3 times: index out of range"},
		{CheckLedger, Done, func() Verdict { return JudgeGate(Job{Class: SameOperation}, &Ledger{Replayed: true}) }, "already replayed"},
		{CheckSameIdentity, Wait, func() Verdict { return JudgeGate(Job{Class: Dedupe}, &Ledger{InFlight: 9}) }, "a job of replay request 9 with the same identity"},
		{CheckMaybePublished, Reconcile, func() Verdict {
			return JudgeUnsent(Verdict{Outcome: Cancel, Check: CheckCancelled, Reason: "cancelled by the requester"}, Unsent{State: "unknown", Attempted: true})
		}, "may have landed"},

		{CheckErrorNever, Block, judge("search.x", AtDraft, func(i *Item) { i.ErrorClass = ErrStaleVersion }), `error class "stale_version" is never replayed`},
		{CheckNeedsFix, Block, judge("search.x", AtDraft, func(i *Item) {
			i.ErrorClass, i.DeadLetteredAt = ErrSchemaInvalid, testNow.Add(-time.Hour)
		}), `error class "schema_invalid" replays only after a fix`},
		{CheckNeedsFix, Block, judge("email.send", AtRequest, func(i *Item) {
			i.ErrorClass, i.DeadLetteredAt, i.FixedAt, i.FixRef = ErrPermanent, testNow.Add(-time.Hour), testNow.Add(-2*time.Hour), "v1.4.1"
		}), `the latest fix recorded ("v1.4.1", in place at 2026-03-04 10:00:00 UTC) is older than it`},
		{CheckNoRevalidator, Block, judge("accounts.grant", AtDraft, func(i *Item) {
			i.NoRevalidator = "no revalidation service is configured (REVALIDATE_SUBJECT)"
		}), "cannot be replayed on this deployment"},
		{CheckReconcileNote, Block, func() Verdict {
			v := JudgeItem(tbl, item("search.x", func(i *Item) { i.ErrorClass = ErrUnknownEffect }), AtDraft)
			_, out := JudgeRequest(tbl, []Verdict{v}, testRequest(tbl))
			return out
		}, "needs reconciliation first"},
		{CheckReconcileNote, Block, judge("search.x", AtExecution, func(i *Item) {
			i.ErrorClass, i.Status, i.Request, i.HeldBy = ErrUnknownEffect, "replay_requested", 7, 7
		}), "has no reconciliation note"},

		{CheckWindow, Defer, window(Attempt{MsgID: "m-1", StoredBy: testNow.Add(-time.Minute), Window: Window{Stream: "APP", Duplicates: 2 * time.Minute},
			Margin: time.Second}), `deferred until 2026-03-04 12:01:01 UTC: stream APP drops message id "m-1"`},
		{CheckWindowUnread, Wait, window(Attempt{Window: Window{Unreadable: "timeout"}}), "could not read the duplicate window"},
		{CheckPastWindow, Reconcile, window(Attempt{FirstAttemptAt: testNow.Add(-3 * time.Minute), Window: Window{Stream: "APP", Duplicates: 2 * time.Minute}}),
			"no longer covers it"},
		{CheckPastWindow, Reconcile, window(Attempt{FirstAttemptAt: testNow.Add(-time.Second)}), "no stream stores the subject, so no duplicate window drops a republish"},
		{CheckAckLost, Retry, ack(Ack{Lost: "timeout", Attempts: 1, RetryBase: 2 * time.Second, FirstAttemptAt: testNow,
			Window: Window{Stream: "APP", Duplicates: 2 * time.Minute}}), "no PubAck (timeout)"},
		{CheckNoStream, Fail, ack(Ack{MsgID: "m-1", NoStream: true, FirstAttempt: true}), "no stream stores the subject"},
		{CheckNoInterest, Fail, window(Attempt{MsgID: "m-1", Window: Window{Stream: "APP", Duplicates: time.Second, Retention: "interest",
			NoInterest: "stream APP keeps a message only for its consumers (interest retention), and none of them takes app.x"}}), "the broker would acknowledge the replay and drop it"},
		{CheckNoInterest, Fail, ack(Ack{MsgID: "m-1", Stream: "APP", Seq: 1, FirstAttempt: true, Window: Window{Stream: "APP", Duplicates: time.Second, Retention: "interest",
			NoInterest: "stream APP keeps a message only for its consumers (interest retention), and none of them takes app.x"}}), "the broker acknowledged the replay (APP:1) and dropped it"},
		{CheckAckUnproven, Reconcile, ack(Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "OTHER", Seq: 7, FirstAttempt: true, FirstAttemptAt: testNow,
			Window: Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "limits", Storage: "file"}}), "it is no proof that the broker stored it"},
		{CheckDedupeVolatile, Reconcile, ack(Ack{Lost: "timeout", Attempts: 1, RetryBase: 2 * time.Second, FirstAttemptAt: testNow, FirstAttempt: true,
			Window: Window{Stream: "WORK", Duplicates: 2 * time.Minute, Retention: "workqueue", Storage: "file"}}), "stream WORK removes messages its consumers took (workqueue retention)"},
		{CheckDedupeVolatile, Reconcile, window(Attempt{FirstAttemptAt: testNow.Add(-time.Second), Window: Window{Stream: "MEM", Duplicates: 2 * time.Minute,
			Retention: "limits", Storage: "memory"}}), "stream MEM keeps its messages in memory"},
		{CheckMaybePublished, Reconcile, ack(Ack{MsgID: "m-1", Refused: "the broker refused it: message size exceeds maximum allowed"}), "an earlier publish of it has no answer on record and may have landed"},
		{CheckMaybePublished, Reconcile, ack(Ack{MsgID: "m-1", NoStream: true}), "no stream stores the subject); but an earlier publish"},
		{CheckDuplicateKept, Defer, ack(Ack{Stream: "APP", Seq: 9, Duplicate: true, FirstAttempt: true, Kept: Kept{StoredAt: testNow.Add(-time.Minute)},
			Window: Window{Stream: "APP", Duplicates: 2 * time.Minute}}), "a message stored at 2026-03-04 11:59:00 UTC that is not this replay's"},
		{CheckSentAgain, Reconcile, ack(Ack{MsgID: "m-1", Stream: "APP", Seq: 9, Duplicate: true, FirstAttempt: true, Subject: "app.acme.x", OriginalSHA256: "abcd",
			DeadLetteredAt: testNow.Add(-time.Hour), Margin: time.Second, Window: Window{Stream: "APP", Duplicates: 2 * time.Minute},
			Kept: Kept{StoredAt: testNow.Add(-time.Minute), PayloadSHA256: "ABCD", Subject: "app.acme.x", StoresAs: "app.acme.x"}}),
			"the message itself (message id \"m-1\", the same subject and payload), published again after it was dead-lettered"},
		{CheckSuppressed, Suppressed, ack(Ack{Stream: "APP", Seq: 9, Duplicate: true, Deferrals: MaxDeferrals - 1}), "3 times"},
		{CheckOwnDuplicate, Replayed, ack(Ack{Stream: "APP", Seq: 9, Duplicate: true, FirstPublishedAt: testNow.Add(-time.Minute), ApprovedSHA256: "abcd", Subject: "app.acme.x",
			Kept: Kept{Tagged: true, StoredAt: testNow.Add(-time.Minute), PayloadSHA256: "ABCD", Subject: "app.acme.x", StoresAs: "app.acme.x"}}), "this replay's own earlier publish"},
		// A retry's kept message that cannot be read back is no proof that
		// it is ours: a person decides.
		{CheckMaybePublished, Reconcile, ack(Ack{Stream: "APP", Seq: 9, Duplicate: true, Kept: Kept{Unreadable: "deleted"}}), "could not be read back (deleted): it is this replay's earlier publish, or another message"},
		// A retry's kept message with our headers and payload, stored 5 s
		// before our first publish by the broker's clock: a person decides.
		{CheckMaybePublished, Reconcile, ack(Ack{Stream: "APP", Seq: 9, Duplicate: true, FirstPublishedAt: testNow.Add(-time.Minute), ApprovedSHA256: "abcd", Margin: time.Second,
			Kept: Kept{Tagged: true, StoredAt: testNow.Add(-time.Minute - 5*time.Second), PayloadSHA256: "abcd", Subject: "app.acme.x", StoresAs: "app.acme.x"}}), "it is this replay's own publish if the broker's clock is behind"},
		{CheckDedupeVolatile, Reconcile, ack(Ack{Lost: "timeout", Attempts: 1, RetryBase: 2 * time.Second, FirstAttemptAt: testNow, FirstAttempt: true,
			Window: Window{Stream: "LAST", Duplicates: 2 * time.Minute, Retention: "limits", Storage: "file", Evicts: "keeps the last 1 per subject"}}),
			"stream LAST removes messages before they age out (it keeps the last 1 per subject)"},

		{CheckProblems, Block, func() Verdict { return JudgeRequestOutcome(Outcomes{Replayed: 3, Blocked: 1, NeedsReconciliation: 1}) },
			"done with problems: 3 replayed, 1 blocked, 1 needs reconciliation"},
		{CheckStopReason, Block, func() Verdict { return JudgeStop(" ", StopPhrase) }, "say why the replay is stopped"},
		{CheckStopConfirmation, Block, func() Verdict { return JudgeStop("wrong target", "stop") }, `type "STOP" to stop`},
		{CheckDecision, Block, func() Verdict { return JudgeReconcile("maybe", "checked", "running", 0) }, "choose applied"},
		{CheckDecisionNote, Block, func() Verdict { return JudgeReconcile(Applied, "", "running", 0) }, "say what you checked"},
		{CheckDecisionClosed, Block, func() Verdict { return JudgeReconcile(Republish, "not in the ledger", "cancelled", 1) }, "the request is cancelled"},
		{CheckRepublishTwoApprovers, Block, func() Verdict { return JudgeReconcile(Republish, "no refund in payments", "done_with_problems", 2) },
			"takes a new request with two approvals of its own"},

		// Review round C.
		{CheckEditUnchanged, Block, func() Verdict { return JudgePayloadChange("abcd", "abcd", "ABCD") }, "the one received, byte for byte"},
		{CheckEditUnchanged, Block, func() Verdict { return JudgePayloadChange("abcd", "ef01", "ef01") }, "the one the item already holds"},
		// Review round replay 8: a schema_invalid item let go by its edit,
		// the edit undone in a request waiting for approval.
		{CheckEditUndo, Block, func() Verdict {
			return JudgeUndo(false, judge("search.x", AtRequest, func(i *Item) {
				i.ErrorClass, i.DeadLetteredAt = ErrSchemaInvalid, testNow.Add(-time.Hour)
			})())
		}, "so it keeps the edit"},
		{CheckNeedsFix, Block, judge("search.x", AtDraft, func(i *Item) {
			// An "edit" back to the bytes received is no edit.
			i.ErrorClass, i.DeadLetteredAt, i.PayloadEdited, i.PayloadSHA256 = ErrSchemaInvalid, testNow.Add(-time.Hour), true, i.OriginalPayloadSHA256
		}), "replays only after a fix"},
		{CheckNeedsFix, Block, judge("search.x", AtDraft, func(i *Item) {
			// A marker recorded before the dead letter but dated 4 minutes
			// ahead counts from when it was recorded.
			i.ErrorClass, i.DeadLetteredAt = ErrSchemaInvalid, testNow.Add(-time.Minute)
			i.FixedAt, i.FixRecordedAt, i.FixRef = testNow.Add(-time.Minute+4*time.Minute), testNow.Add(-2*time.Minute), "v9"
		}), "in place at 2026-03-04 11:58:00 UTC) is older than it"},
		{CheckDuplicateKept, Defer, ack(Ack{Stream: "APP", Seq: 9, Duplicate: true, FirstPublishedAt: testNow.Add(-time.Second), ApprovedSHA256: "abcd",
			Window: Window{Stream: "APP", Duplicates: 2 * time.Minute}, FirstAttempt: true,
			// Planted with this replay's headers and payload before the replay first published.
			Kept: Kept{Tagged: true, StoredAt: testNow.Add(-time.Minute), PayloadSHA256: "abcd"}}), "that is not this replay's"},
		{CheckMaybePublished, Reconcile, ack(Ack{Stream: "APP", Seq: 9, Duplicate: true, FirstPublishedAt: testNow.Add(-time.Second), ApprovedSHA256: "abcd",
			Window: Window{Stream: "APP", Duplicates: 2 * time.Minute},
			// The same copy met by a retry: our first publish, whose answer was
			// lost, was dropped for it or is it (clocks); publishing again
			// after the window would be the effect a second time either way.
			Kept: Kept{Tagged: true, StoredAt: testNow.Add(-time.Minute), PayloadSHA256: "abcd", Subject: "app.acme.x", StoresAs: "app.acme.x"}}), "else a copy"},
		{CheckDuplicateKept, Defer, ack(Ack{Stream: "APP", Seq: 9, Duplicate: true, ApprovedSHA256: "abcd", Window: Window{Stream: "APP", Duplicates: 2 * time.Minute},
			// Tagged, with the approved bytes, but this is the job's first publish ever: nothing kept is ours.
			Kept: Kept{Tagged: true, StoredAt: testNow.Add(-time.Second), PayloadSHA256: "abcd"}}), "that is not this replay's"},
		{CheckDuplicateKept, Defer, ack(Ack{Stream: "APP", Seq: 9, Duplicate: true, FirstPublishedAt: testNow.Add(-time.Minute), ApprovedSHA256: "abcd",
			Window: Window{Stream: "APP", Duplicates: 2 * time.Minute},
			// Tagged, stored after the first publish, but other bytes.
			Kept: Kept{Tagged: true, StoredAt: testNow.Add(-time.Second), PayloadSHA256: "ffff"}}), "that is not this replay's"},
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
		"revalidate": JudgeJob(Job{Class: Revalidate, Ledger: &Ledger{}, Revalidation: &Revalidation{Allow: true}}),
		"manual job": JudgeJob(Job{Class: Manual, Ledger: &Ledger{}}),
	} {
		if v.Outcome != Go || v.Check != "" || v.Reason != "" {
			t.Errorf("%s: %+v, want Go with no check", name, v)
		}
	}
	// The costly facts are asked for, never assumed.
	if v := JudgeJob(Job{Class: Dedupe}); v.Outcome != Wait || v.Needs != NeedLedger {
		t.Errorf("dedupe job without the ledger: %+v, want it to need the ledger", v)
	}
	for _, c := range []Class{Dedupe, SameOperation, Revalidate, Manual} { // every class but rebuildable asks the ledger
		if v := JudgeJob(Job{Class: c}); v.Outcome != Wait || v.Needs != NeedLedger {
			t.Errorf("%s job without the ledger: %+v, want it to need the ledger", c, v)
		}
	}
	if v := JudgeJob(Job{Class: Rebuildable}); v.Outcome != Go {
		t.Errorf("rebuildable job: %+v, want Go without the ledger (rebuilding twice only rebuilds the same thing)", v)
	}
	if v := JudgeJob(Job{Class: Revalidate, Ledger: &Ledger{}}); v.Outcome != Wait || v.Needs != NeedRevalidation {
		t.Errorf("revalidate job without an answer: %+v, want it to need one", v)
	}
	if v := JudgeJob(Job{Class: Rebuildable, SubjectRefusal: "no"}); v.Outcome != Wait || v.Check != CheckSubject {
		t.Errorf("subject refused by the worker's setting at execution: %+v, want Wait (every step before allowed it)", v)
	}
	if v := JudgeJob(Job{Class: Revalidate, Ledger: &Ledger{}, Revalidation: &Revalidation{NotAsked: true}}); v.Outcome != Wait || v.Check != CheckNoRevalidator {
		t.Errorf("a worker without a revalidation subject: %+v, want Wait for one that has it", v)
	}
}

// TestErrorClassAndLoopRules shows what the error class and the generation
// of a dead letter do beyond the checks of TestRules: the class they
// raise, what lets an after_fix item go, the approvals an error class
// adds, and that a policy file may tighten the rules but not loosen them.
func TestErrorClassAndLoopRules(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	at := func(itemType string, change func(*Item)) Verdict {
		it := testItem(itemType)
		change(&it)
		return JudgeItem(tbl, it, AtDraft)
	}
	t.Run("PolicyIsAtLeastRevalidate", func(t *testing.T) {
		v := at("analytics.event", func(i *Item) { i.ErrorClass = ErrPolicy })
		if v.Class != Revalidate || !v.Classing.ByError || v.Outcome != Go {
			t.Fatalf("policy error on a dedupe type: %+v", v)
		}
		v = at("analytics.event", func(i *Item) { i.ErrorClass, i.Principal = ErrPolicy, "" })
		if v.Check != CheckNoPrincipal || !strings.Contains(v.Reason, `its error class "policy" replays at least as revalidate`) {
			t.Fatalf("the sentence names why it is revalidate: %+v", v)
		}
		if c := tbl.Classify(Key{ItemType: "orders.refund", ErrorClass: ErrPolicy}); c.Class != Manual || c.ByError {
			t.Fatalf("a floor never loosens: %+v", c)
		}
	})
	t.Run("GenerationLimitMakesManual", func(t *testing.T) {
		for gen, want := range map[int]Class{0: Rebuildable, 2: Rebuildable, 3: Manual, 9: Manual} {
			v := at("search.x", func(i *Item) { i.Generation = gen })
			if v.Class != want || v.Classing.ByLoop != (want == Manual) {
				t.Errorf("generation %d: %s (by loop %t), want %s", gen, v.Class, v.Classing.ByLoop, want)
			}
		}
		looping := func(gen int) Verdict { return at("search.x", func(i *Item) { i.Generation = gen }) }
		v := JudgeDraft(tbl, Manual, "acme", true, []Verdict{looping(3), looping(4)})
		// Classed by its item type too (rebuildable), which the loop raised
		// it past: the sentence names both, as for every union.
		if v[0].Check != CheckBulk || !strings.Contains(v[0].Reason, "manual (and rebuildable) items cannot be replayed in bulk") {
			t.Fatalf("looping items are not replayed in bulk: %+v", v[0])
		}
		if v := JudgeDraft(tbl, Manual, "acme", true, []Verdict{looping(3)}); v[0].Outcome != Go {
			t.Fatalf("one looping item goes, as manual: %+v", v[0])
		}
		if v := looping(3); !strings.HasPrefix(JudgeItem(tbl, func() Item { i := v.Item; i.MsgID = ""; return i }(), AtDraft).Reason,
			"manual (it came back from 3 replays of its message, and from generation 3 only manual may replay it): ") {
			t.Fatal("the sentence says why it is manual")
		}
	})
	t.Run("AfterFixGoesEditedOrFixedLater", func(t *testing.T) {
		dead := testNow.Add(-time.Hour)
		for name, change := range map[string]func(*Item){
			"Edited":     func(i *Item) { i.PayloadEdited, i.PayloadSHA256 = true, "ffee0011" }, // other bytes than the ones received
			"FixedLater": func(i *Item) { i.FixedAt, i.FixRef = dead.Add(time.Minute), "v1.4.2" },
		} {
			v := at("search.x", func(i *Item) { i.ErrorClass, i.DeadLetteredAt = ErrSchemaInvalid, dead; change(i) })
			if v.Outcome != Go {
				t.Errorf("%s: %+v", name, v)
			}
		}
		v := at("search.x", func(i *Item) { i.ErrorClass, i.FixedAt = ErrPermanent, dead })
		if v.Check != CheckNeedsFix {
			t.Errorf("a dead letter of unknown age is not shown fixed: %+v", v)
		}
	})
	t.Run("UnknownEffectNeedsOneApprover", func(t *testing.T) {
		req := testRequest(tbl)
		req.ReconciliationNote = "the refund is not in the gateway's ledger (checked at 11:40)"
		d := DecideItems(tbl, []Item{func() Item { i := testItem("search.x"); i.ErrorClass = ErrUnknownEffect; return i }()}, alice, req, testNow)
		if d.Requirement != OneApprover || d.Ready || !strings.Contains(d.Reason, `error class "unknown_effect" needs one approver`) {
			t.Fatalf("rebuildable with an unknown effect: %+v", d)
		}
	})
	t.Run("FileMayOnlyTighten", func(t *testing.T) {
		tight := mustParse(t, lines(`generation_limit = 2`, ``, `[error_class.transient]`, `replay = "after_fix"`, `approvals = 1`, `min_class = "dedupe"`))
		if r := tight.ErrorRule(ErrTransient); r.Replay != AfterFix || r.Approvals != 1 || r.MinClass != Dedupe {
			t.Fatalf("tightened rule: %+v", r)
		}
		if tight.GenerationLimit() != 2 || tight.Version() == mustParse(t, "").Version() {
			t.Fatal("the knobs change the version")
		}
		spelled := mustParse(t, lines(`[error_class.stale_version]`, `replay = "never"`, `[error_class.policy]`, `min_class = "revalidate"`))
		if spelled.Version() != mustParse(t, "").Version() {
			t.Fatal("defaults spelled out keep the version")
		}
		for _, src := range []string{
			lines(`[error_class.stale_version]`, `replay = "by_class"`),
			lines(`[error_class.policy]`, `min_class = "rebuildable"`),
			lines(`[error_class.unknown_effect]`, `approvals = 0`),
			lines(`[error_class.unknown_effect]`, `reconciliation_note = false`),
			lines(`[error_class.flaky]`, `replay = "never"`),
			lines(`[error_class.transient]`, `retry = "never"`),
			lines(`generation_limit = 0`),
		} {
			if _, err := Parse("loose.toml", []byte(src)); err == nil {
				t.Errorf("accepted:\n%s", src)
			}
		}
	})
	t.Run("Unsent", func(t *testing.T) {
		cancel := Verdict{Outcome: Cancel, Check: CheckCancelled, Reason: "cancelled"}
		if v := JudgeUnsent(cancel, Unsent{State: "pending"}); v.Outcome != Cancel {
			t.Errorf("never sent: %+v, want cancelled", v)
		}
		if v := JudgeUnsent(cancel, Unsent{State: "claimed", Attempted: true}); v.Outcome != Reconcile {
			t.Errorf("a crashed claim that marked its attempt: %+v, want reconcile", v)
		}
		if v := JudgeUnsent(cancel, Unsent{State: "claimed", Attempted: true, LeaseLive: true}); v.Outcome != Wait {
			t.Errorf("a live claim: %+v, want it left to its worker", v)
		}
		if v := JudgeUnsent(Verdict{Outcome: Done}, Unsent{State: "unknown", Attempted: true}); v.Outcome != Done {
			t.Errorf("skipped by the ledger: %+v", v)
		}
	})
	t.Run("Outcomes", func(t *testing.T) {
		if v := JudgeRequestOutcome(Outcomes{Replayed: 2, Skipped: 1}); v.Outcome != Done || v.Reason != "done: 2 replayed, 1 skipped" {
			t.Errorf("done: %+v", v)
		}
		if v := JudgeRequestOutcome(Outcomes{Replayed: 1, Running: 2, Deferred: 1}); v.Outcome != Wait {
			t.Errorf("running: %+v", v)
		}
		if v := JudgeAck(Ack{Stream: "APP", Seq: 4}, testNow); v.Outcome != Replayed || v.Check != "" {
			t.Errorf("a PubAck: %+v", v)
		}
		w := Window{Stream: "APP", Duplicates: 2 * time.Minute}
		if v := JudgeWindow(Attempt{StoredBy: testNow.Add(-3 * time.Minute), Window: w, Margin: time.Second}, testNow); v.Outcome != Go {
			t.Errorf("after the window: %+v", v)
		}
		if v := JudgeWindow(Attempt{FirstAttemptAt: testNow.Add(-time.Minute), Window: w, Margin: time.Second}, testNow); v.Outcome != Go {
			t.Errorf("a retry inside the window: %+v", v)
		}
		if v := JudgeWindow(Attempt{StoredBy: testNow}, testNow); v.Outcome != Go {
			t.Errorf("a first attempt where no stream stores the subject (the publish says so): %+v", v)
		}
		if v := JudgeJob(Job{Class: SameOperation, Attempted: true, Ledger: &Ledger{InFlight: 7}}); v.Outcome != Go {
			t.Errorf("a job whose own publish may have landed goes on as its retry, whatever else is in flight: %+v", v)
		}
		for name, v := range map[string]Verdict{
			"no identity":             JudgeGate(Job{Class: Rebuildable}, nil),
			"its own retry":           JudgeGate(Job{Class: Dedupe, Attempted: true}, &Ledger{InFlight: 3, Replayed: true}),
			"nothing of the identity": JudgeGate(Job{Class: SameOperation, Union: []Class{Dedupe}}, &Ledger{}),
		} {
			if v.Outcome != Go {
				t.Errorf("gate, %s: %+v", name, v)
			}
		}
		if k := GateKeys(Job{Class: SameOperation, Union: []Class{Dedupe}}, "acme", "app.acme.x", "m", "op"); len(k) != 2 {
			t.Errorf("gate keys of a dedupe and same_operation job: %q", k)
		}
		if k := GateKeys(Job{Class: SameOperation, Attempted: true}, "acme", "app.acme.x", "m", "op"); len(k) != 0 {
			t.Errorf("gate keys of a retry: %q", k)
		}
		if v := JudgeStop("wrong target", " STOP "); v.Outcome != Go {
			t.Errorf("stop: %+v", v)
		}
		for attempt, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 5: 30 * time.Second, 50: 30 * time.Second} {
			if lo, hi := RetryAfter(attempt, 2*time.Second, 0), RetryAfter(attempt, 2*time.Second, 0.999); lo != want/2 || hi < want*149/100 || hi > want*3/2 {
				t.Errorf("attempt %d: waits %s to %s, want %s ± half", attempt, lo, hi, want)
			}
		}
	})
}

// TestUnlistedSubjects: a table warns unless a subject rule matches every
// subject (subject = ">"), whatever its class; a wide glob that still
// leaves some subject out ("*.>" misses a one-token subject) warns too.
func TestUnlistedSubjects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rules string
		warns bool
	}{
		{"NoSubjectRules", "", true},
		{"SomeSubjectRules", "[[rule]]\nsubject = \"app.*.orders.>\"\nclass = \"manual\"\n", true},
		{"AlmostEverySubject", "[[rule]]\nsubject = \"*.>\"\nclass = \"manual\"\n", true},
		{"ItemTypeRuleForEverySubject", "[[rule]]\nitem_type = \"payments.*\"\nsubject = \">\"\nclass = \"manual\"\n", true},
		{"CatchAllManual", "[[rule]]\nsubject = \"app.*.orders.>\"\nclass = \"manual\"\n\n[[rule]]\nsubject = \">\"\nclass = \"manual\"\n", false},
		{"CatchAllRevalidate", "[[rule]]\nsubject = \">\"\nclass = \"revalidate\"\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			why := mustParse(t, tt.rules+testPolicy).UnlistedSubjects()
			if (why != "") != tt.warns {
				t.Fatalf("UnlistedSubjects() = %q, want a warning: %t", why, tt.warns)
			}
			if tt.warns && !strings.Contains(why, `subject = ">"`) {
				t.Errorf("the warning does not say how to close it: %q", why)
			}
		})
	}
}

// TestPayloadChangeUndoesAnEdit: the payload received put in place of an
// edit undoes it (EditUndone), and JudgeUndo lets that go in a draft
// whatever the rules then say of the item (the draft leaves it out), and
// in a request waiting for approval only when they let the item go.
func TestPayloadChangeUndoesAnEdit(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	tests := map[string]struct {
		original, current, edited string
		outcome                   Outcome
		undone                    bool
	}{
		"Edit":         {"abcd", "abcd", "ef01", Go, false},
		"EditAgain":    {"abcd", "ef01", "2345", Go, false},
		"Undo":         {"abcd", "ef01", "ABCD", Go, true},
		"NoEdit":       {"abcd", "abcd", "abcd", Block, false},
		"SameAsHeld":   {"abcd", "ef01", "EF01", Block, false},
		"UndoOfNoEdit": {"abcd", "abcd", "ABCD", Block, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			v := JudgePayloadChange(tt.original, tt.current, tt.edited)
			if v.Outcome != tt.outcome {
				t.Fatalf("verdict = %s (%s), want %s", v.Outcome, v.Reason, tt.outcome)
			}
			if got := v.Outcome == Go && EditUndone(tt.original, tt.edited); got != tt.undone {
				t.Errorf("undone = %v, want %v", got, tt.undone)
			}
		})
	}

	refused := testItem("search.x")
	refused.ErrorClass, refused.DeadLetteredAt = ErrSchemaInvalid, testNow.Add(-time.Hour)
	for name, tt := range map[string]struct {
		draft bool
		v     Verdict
		want  Outcome
	}{
		"DraftItemGoes":      {true, JudgeItem(tbl, testItem("search.x"), AtDraft), Go},
		"DraftItemRefused":   {true, JudgeItem(tbl, refused, AtDraft), Go},
		"PendingItemGoes":    {false, JudgeItem(tbl, testItem("search.x"), AtRequest), Go},
		"PendingItemRefused": {false, JudgeItem(tbl, refused, AtRequest), Block},
	} {
		t.Run(name, func(t *testing.T) {
			if v := JudgeUndo(tt.draft, tt.v); v.Outcome != tt.want {
				t.Errorf("JudgeUndo = %s (%s), want %s", v.Outcome, v.Reason, tt.want)
			}
		})
	}
}
