package replaypolicy

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)

	type want struct {
		class  Class
		req    Requirement
		ready  bool
		have   int    // ApprovalsHave
		reason string // substring of Reason
	}
	tests := []struct {
		name     string
		itemType string
		item     func(*Item)
		req      func(*Request)
		actor    *quarantine.Actor // default: alice, the requester
		want     want
	}{
		// rebuildable
		{name: "Rebuildable/DirectReady", itemType: "search.index_update",
			want: want{class: Rebuildable, req: Direct, ready: true, reason: `rebuildable: ready to replay to "svc.acme.search.index_update" at 500 messages per second`}},
		{name: "Rebuildable/BulkAtCap", itemType: "search.index_update",
			req:  func(r *Request) { r.Items, r.Bulk = 10000, true },
			want: want{class: Rebuildable, req: Direct, ready: true}},
		{name: "Rebuildable/BulkOverCap", itemType: "search.index_update",
			req:  func(r *Request) { r.Items, r.Bulk = 10001, true },
			want: want{class: Rebuildable, req: Refused, reason: "rebuildable: 10001 items is over this class's bulk cap of 10000; split the request"}},
		{name: "Rebuildable/RateAtMax", itemType: "search.index_update",
			req:  func(r *Request) { r.Rate = 5000 },
			want: want{class: Rebuildable, req: Direct, ready: true, reason: "at 5000 messages per second"}},
		{name: "Rebuildable/RateAboveMax", itemType: "search.index_update",
			req:  func(r *Request) { r.Rate = 5000.5 },
			want: want{class: Rebuildable, req: Refused, reason: "a rate of 5000.5 messages per second is not allowed; ask for more than 0 and at most 5000"}},
		{name: "Rebuildable/RateNegative", itemType: "search.index_update",
			req:  func(r *Request) { r.Rate = -1 },
			want: want{class: Rebuildable, req: Refused, reason: "is not allowed"}},
		{name: "Rebuildable/RateNaN", itemType: "search.index_update",
			req:  func(r *Request) { r.Rate = nan() },
			want: want{class: Rebuildable, req: Refused, reason: "is not allowed"}},
		{name: "Rebuildable/AlreadyReplayedIsNotSkipped", itemType: "search.index_update",
			item: func(i *Item) { i.AlreadyReplayed = true }, // rebuilding twice is harmless
			want: want{class: Rebuildable, req: Direct, ready: true}},
		{name: "Rebuildable/StatusReplayFailedRetries", itemType: "search.index_update",
			item: func(i *Item) { i.Status = "replay_failed" },
			want: want{class: Rebuildable, req: Direct, ready: true}},

		// general refusals and skips
		{name: "General/EmptyReason", itemType: "search.index_update",
			req:  func(r *Request) { r.Reason = " \t\n" },
			want: want{class: Rebuildable, req: Refused, reason: "rebuildable: a replay needs a reason; say why this item should be replayed"}},
		{name: "General/NoOriginalSubject", itemType: "search.index_update",
			item: func(i *Item) { i.OriginalSubject = "" },
			want: want{class: Rebuildable, req: Refused, reason: "rebuildable: no original subject: cannot be replayed; resolve it by hand"}},
		{name: "General/NoMsgID", itemType: "search.index_update",
			item: func(i *Item) { i.MsgID = "" },
			want: want{class: Rebuildable, req: Refused, reason: "no message id: a replay must reuse the original identity"}},
		{name: "General/NoItems", itemType: "search.index_update",
			req:  func(r *Request) { r.Items = 0 },
			want: want{class: Rebuildable, req: Refused, reason: "a replay request must cover at least one item"}},
		{name: "General/PolicyVersionChanged", itemType: "search.index_update",
			req:  func(r *Request) { r.PolicyVersion = strings.Repeat("0", 64) },
			want: want{class: Rebuildable, req: Refused, reason: "rebuildable: the policy changed since this request was made; request again"}},
		{name: "General/PolicyVersionMissing", itemType: "search.index_update",
			req:  func(r *Request) { r.PolicyVersion = "" },
			want: want{class: Rebuildable, req: Refused, reason: "the policy changed since this request was made; request again"}},
		{name: "General/StatusReplayed", itemType: "search.index_update",
			item: func(i *Item) { i.Status = "replayed" },
			want: want{class: Rebuildable, req: Skip, reason: "rebuildable: this item was already replayed successfully; it is skipped, not re-sent"}},
		{name: "General/StatusDiscarded", itemType: "orders.refund",
			item: func(i *Item) { i.Status = "discarded" },
			want: want{class: Manual, req: Refused, reason: "manual: this item was discarded, and a discarded item cannot be replayed"}},
		{name: "General/StatusResolved", itemType: "email.send",
			item: func(i *Item) { i.Status = "resolved" },
			want: want{class: SameOperation, req: Refused, reason: "resolved by hand"}},
		{name: "General/StatusUnknown", itemType: "search.x",
			item: func(i *Item) { i.Status = "frozen" },
			want: want{class: Rebuildable, req: Refused, reason: `status "frozen", which the replay policy does not know`}},
		{name: "General/RequesterUnidentified", itemType: "search.x",
			req:  func(r *Request) { r.Requester = quarantine.Actor{Email: "alice@example.com"} },
			want: want{class: Rebuildable, req: Refused, reason: "the requester is not identified"}},
		{name: "General/ActorUnidentified", itemType: "search.x",
			actor: &quarantine.Actor{Subject: "u-alice", Email: "alice@example.com"},
			want:  want{class: Rebuildable, req: Refused, reason: "you are not identified"}},
		{name: "General/UnknownItemTypeIsManual", itemType: "billing.charge",
			want: want{class: Manual, req: TwoApprovers, reason: `manual (no rule matches item type "billing.charge"): waiting for approval by two distinct approvers`}},

		// dedupe
		{name: "Dedupe/DirectReady", itemType: "analytics.event",
			want: want{class: Dedupe, req: Direct, ready: true, reason: `under the original message id "ORDERS:42"`}},
		{name: "Dedupe/DerivedMsgIDCounts", itemType: "analytics.event",
			item: func(i *Item) { i.MsgID, i.MsgIDDerived = "DLQ:1729", true },
			want: want{class: Dedupe, req: Direct, ready: true, reason: `message id "DLQ:1729" (derived at ingest, stable); downstream dedupe drops a replay of it already applied under this id; the original carried no message id`}},
		{name: "Dedupe/MsgIDMandatory", itemType: "analytics.event",
			item: func(i *Item) { i.MsgID = "" },
			want: want{class: Dedupe, req: Refused, reason: "dedupe: the original message id is mandatory for dedupe and this item has none; resolve it by hand"}},
		{name: "Dedupe/AlreadyReplayedSkipped", itemType: "analytics.event",
			item: func(i *Item) { i.AlreadyReplayed = true },
			want: want{class: Dedupe, req: Skip, reason: `dedupe: message id "ORDERS:42" was already replayed successfully; the item is skipped, not re-sent`}},
		{name: "Dedupe/AlreadyReplayedSkippedEvenInBulk", itemType: "analytics.event",
			item: func(i *Item) { i.AlreadyReplayed = true },
			req:  func(r *Request) { r.Items, r.Bulk = 300, true },
			want: want{class: Dedupe, req: Skip}},

		// same_operation
		{name: "SameOperation/WaitingForApprover", itemType: "email.send",
			want: want{class: SameOperation, req: OneApprover, reason: "same_operation: waiting for approval by one approver who is not the requester: 0 of 1"}},
		{name: "SameOperation/Approved", itemType: "email.send",
			req:  func(r *Request) { r.Approvals = []Approval{approval(bob, time.Minute)} },
			want: want{class: SameOperation, req: OneApprover, ready: true, have: 1, reason: `same_operation: approved: replays operation "op-7f3a" with its original payload under message id "ORDERS:42"`}},
		{name: "SameOperation/BulkApproved", itemType: "email.send",
			req:  func(r *Request) { r.Items, r.Bulk, r.Approvals = 500, true, []Approval{approval(bob, time.Minute)} },
			want: want{class: SameOperation, req: OneApprover, ready: true, have: 1}},
		{name: "SameOperation/NoOperationID", itemType: "email.send",
			item: func(i *Item) { i.OperationID = "" },
			req:  func(r *Request) { r.Approvals = []Approval{approval(bob, time.Minute)} },
			want: want{class: SameOperation, req: Refused, reason: "same_operation: cannot guarantee idempotency without an operation id; resolve it by hand"}},
		{name: "SameOperation/PayloadEdited", itemType: "email.send",
			req:  func(r *Request) { r.PayloadEdited = true; r.Approvals = []Approval{approval(bob, time.Minute)} },
			want: want{class: SameOperation, req: Refused, reason: "the payload was edited"}},
		{name: "SameOperation/PayloadHashDiffers", itemType: "email.send",
			item: func(i *Item) { i.PayloadSHA256 = "ffff0000" },
			req:  func(r *Request) { r.Approvals = []Approval{approval(bob, time.Minute)} },
			want: want{class: SameOperation, req: Refused, reason: "the payload differs from the one received at ingest"}},
		{name: "SameOperation/PayloadHashCaseInsensitive", itemType: "email.send",
			item: func(i *Item) { i.PayloadSHA256 = "AB12CD34" },
			req:  func(r *Request) { r.Approvals = []Approval{approval(bob, time.Minute)} },
			want: want{class: SameOperation, req: OneApprover, ready: true, have: 1}},
		{name: "SameOperation/NoOriginalHash", itemType: "email.send",
			item: func(i *Item) { i.OriginalPayloadSHA256 = "" },
			want: want{class: SameOperation, req: Refused, reason: "no payload hash to compare"}},
		{name: "SameOperation/NoIntentHash", itemType: "email.send",
			req:  func(r *Request) { r.IntentHash = "" },
			want: want{class: SameOperation, req: Refused, reason: "the request has no intent hash, so no approval can be bound to it; request again"}},

		// approval edges (same_operation: one approver, 24h expiry)
		{name: "Approval/SelfApprovalOtherEmail", itemType: "email.send",
			req:  func(r *Request) { r.Approvals = []Approval{approval(aliceElsewhere, time.Minute)} },
			want: want{class: SameOperation, req: OneApprover, have: 0, reason: "0 of 1 (1 approval ignored: 1 by the requester)"}},
		{name: "Approval/OtherIntent", itemType: "email.send",
			req: func(r *Request) {
				a := approval(bob, time.Minute)
				a.IntentHash = "another-intent"
				r.Approvals = []Approval{a}
			},
			want: want{class: SameOperation, req: OneApprover, have: 0, reason: "1 for a different intent"}},
		{name: "Approval/Expired", itemType: "email.send",
			req: func(r *Request) {
				r.RequestedAt = testNow.Add(-48 * time.Hour)
				r.Approvals = []Approval{approval(bob, 25*time.Hour)}
			},
			want: want{class: SameOperation, req: OneApprover, have: 0, reason: "1 expired"}},
		{name: "Approval/ExpiresAtExactlyExpiry", itemType: "email.send",
			req: func(r *Request) {
				r.RequestedAt = testNow.Add(-48 * time.Hour)
				r.Approvals = []Approval{approval(bob, 24*time.Hour)}
			},
			want: want{class: SameOperation, req: OneApprover, have: 0, reason: "1 expired"}},
		{name: "Approval/ValidJustBeforeExpiry", itemType: "email.send",
			req: func(r *Request) {
				r.RequestedAt = testNow.Add(-48 * time.Hour)
				r.Approvals = []Approval{approval(bob, 24*time.Hour-time.Nanosecond)}
			},
			want: want{class: SameOperation, req: OneApprover, ready: true, have: 1}},
		{name: "Approval/BeforeRequest", itemType: "email.send",
			req:  func(r *Request) { r.Approvals = []Approval{approval(bob, 2*time.Hour)} },
			want: want{class: SameOperation, req: OneApprover, have: 0, reason: "1 dated before the request"}},
		{name: "Approval/InFuture", itemType: "email.send",
			req:  func(r *Request) { r.Approvals = []Approval{approval(bob, -time.Minute)} },
			want: want{class: SameOperation, req: OneApprover, have: 0, reason: "1 dated in the future"}},
		{name: "Approval/Undated", itemType: "email.send",
			req:  func(r *Request) { r.Approvals = []Approval{{Approver: bob, IntentHash: testIntent}} },
			want: want{class: SameOperation, req: OneApprover, have: 0, reason: "1 undated"}},
		{name: "Approval/UnidentifiedApprover", itemType: "email.send",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(quarantine.Actor{Email: "bob@example.com"}, time.Minute)}
			},
			want: want{class: SameOperation, req: OneApprover, have: 0, reason: "1 unidentified approver"}},
		{name: "Approval/IgnoredListed", itemType: "email.send",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(alice, time.Minute), approval(aliceElsewhere, time.Minute), approval(carol, -time.Hour)}
			},
			want: want{class: SameOperation, req: OneApprover, have: 0, reason: "(3 approvals ignored: 1 dated in the future, 2 by the requester)"}},

		// revalidate
		{name: "Revalidate/Waiting", itemType: "accounts.permission_grant",
			want: want{class: Revalidate, req: OneApprover, reason: "revalidate: waiting for approval by one approver who is not the requester: 0 of 1"}},
		{name: "Revalidate/Approved", itemType: "accounts.permission_grant",
			req:  func(r *Request) { r.Approvals = []Approval{approval(carol, time.Minute)} },
			want: want{class: Revalidate, req: OneApprover, ready: true, have: 1, reason: `the worker re-checks the authority of the original principal "user:dana" and the approver's own rights, and refuses if either check fails or gets no answer`}},
		{name: "Revalidate/NoPrincipal", itemType: "accounts.permission_grant",
			item: func(i *Item) { i.Principal = "" },
			req:  func(r *Request) { r.Approvals = []Approval{approval(carol, time.Minute)} },
			want: want{class: Revalidate, req: Refused, reason: "revalidate: no original principal (Dlq-Principal), so their authority cannot be re-checked; resolve it by hand"}},
		{name: "Revalidate/ExpiryIsTheClasses", itemType: "accounts.permission_grant",
			req: func(r *Request) {
				r.RequestedAt = testNow.Add(-10 * time.Hour)
				r.Approvals = []Approval{approval(carol, 9*time.Hour)}
			},
			want: want{class: Revalidate, req: OneApprover, have: 0, reason: "1 expired"}},

		// manual
		{name: "Manual/NoApprovals", itemType: "orders.refund",
			want: want{class: Manual, req: TwoApprovers, reason: `manual: waiting for approval by two distinct approvers, neither of them the requester: 0 of 2; then type "REPLAY ORDERS:42" to confirm`}},
		{name: "Manual/OneApprover", itemType: "orders.refund",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(bob, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, have: 1, reason: "1 of 2"}},
		{name: "Manual/SameApproverTwice", itemType: "orders.refund",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(bob, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, have: 1, reason: "1 of 2 (1 approval ignored: 1 same approver again)"}},
		{name: "Manual/SameApproverOtherEmail", itemType: "orders.refund",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(bobElsewhere, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, have: 1, reason: "1 same approver again"}},
		{name: "Manual/SameApproverUnverifiedSecondAccount", itemType: "orders.refund",
			req: func(r *Request) {
				// bob's second account at another provider, whose email he
				// left unverified: still bob.
				bob2 := quarantine.Actor{Issuer: "https://other-idp.example", Subject: "b-2", Email: "Bob+second@example.com"}
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(bob2, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, have: 1, reason: "1 same approver again"}},
		{name: "Manual/RequesterUnverifiedSecondAccount", itemType: "orders.refund",
			req: func(r *Request) {
				alice2 := quarantine.Actor{Issuer: "https://other-idp.example", Subject: "a-2", Email: "ALICE@example.com", EmailVerified: false}
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(alice2, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, have: 1, reason: "1 by the requester"}},
		{name: "Manual/RequesterAsSecondApprover", itemType: "orders.refund",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(aliceElsewhere, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, have: 1, reason: "1 by the requester"}},
		{name: "Manual/SecondApprovalExpired", itemType: "orders.refund",
			req: func(r *Request) {
				r.RequestedAt = testNow.Add(-6 * time.Hour)
				r.Approvals = []Approval{approval(bob, 5*time.Hour), approval(carol, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, have: 1, reason: "1 expired"}},
		{name: "Manual/SecondApprovalOtherIntent", itemType: "orders.refund",
			req: func(r *Request) {
				c := approval(carol, time.Minute)
				c.IntentHash = testIntent[:63] + "0"
				r.Approvals = []Approval{approval(bob, 2*time.Minute), c}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, have: 1, reason: "1 for a different intent"}},
		{name: "Manual/ApprovedNotConfirmed", itemType: "orders.refund",
			req:  func(r *Request) { r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(carol, time.Minute)} },
			want: want{class: Manual, req: TwoApprovers, have: 2, reason: `manual: type "REPLAY ORDERS:42" to confirm`}},
		{name: "Manual/WrongConfirmation", itemType: "orders.refund",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(carol, time.Minute)}
				r.TypedConfirmation = "replay ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, have: 2, reason: `the typed confirmation does not match; type "REPLAY ORDERS:42" exactly`}},
		{name: "Manual/Ready", itemType: "orders.refund",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(carol, time.Minute)}
				r.TypedConfirmation = "  REPLAY ORDERS:42\n"
			},
			want: want{class: Manual, req: TwoApprovers, ready: true, have: 2, reason: `manual: approved by 2 distinct approvers and confirmed: replays message id "ORDERS:42" to "svc.acme.orders.refund"`}},
		{name: "Manual/SameSubjectOtherIssuerIsAnotherPerson", itemType: "orders.refund",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(otherAlice, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, ready: true, have: 2}},
		{name: "Manual/BulkRefused", itemType: "orders.refund",
			req:  func(r *Request) { r.Items = 2 },
			want: want{class: Manual, req: Refused, reason: "manual: bulk replay is not allowed for this class; request one item at a time"}},
		{name: "Manual/BulkFlagRefused", itemType: "orders.refund",
			req:  func(r *Request) { r.Bulk = true },
			want: want{class: Manual, req: Refused, reason: "bulk replay is not allowed"}},
		{name: "Manual/PolicyChangedVoidsApprovals", itemType: "orders.refund",
			req: func(r *Request) {
				r.PolicyVersion = "an-older-version"
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(carol, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: Refused, reason: "manual: the policy changed since this request was made; request again"}},
		{name: "Manual/UnknownTypeReady", itemType: "billing.charge",
			req: func(r *Request) {
				r.Approvals = []Approval{approval(bob, 2*time.Minute), approval(carol, time.Minute)}
				r.TypedConfirmation = "REPLAY ORDERS:42"
			},
			want: want{class: Manual, req: TwoApprovers, ready: true, have: 2, reason: `manual (no rule matches item type "billing.charge"): approved`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			item := testItem(tt.itemType)
			if tt.item != nil {
				tt.item(&item)
			}
			req := testRequest(tbl)
			if tt.req != nil {
				tt.req(&req)
			}
			actor := alice
			if tt.actor != nil {
				actor = *tt.actor
			}
			d := Decide(tbl, item, actor, req, testNow)
			if d.Class != tt.want.class || d.Requirement != tt.want.req || d.Ready != tt.want.ready || d.ApprovalsHave != tt.want.have {
				t.Errorf("Decide = {class %s, %s, ready %t, have %d}, want {class %s, %s, ready %t, have %d}\nreason: %s",
					d.Class, d.Requirement, d.Ready, d.ApprovalsHave, tt.want.class, tt.want.req, tt.want.ready, tt.want.have, d.Reason)
			}
			if !strings.Contains(d.Reason, tt.want.reason) {
				t.Errorf("Reason = %q, want it to contain %q", d.Reason, tt.want.reason)
			}
			if d.Reason == "" {
				t.Error("Reason is empty")
			}
			if (d.Requirement == Skip) != (d.SkipReason != "") || (d.SkipReason != "" && d.SkipReason != d.Reason) {
				t.Errorf("SkipReason = %q with requirement %s and reason %q", d.SkipReason, d.Requirement, d.Reason)
			}
			if d.Ready && (d.Requirement == Refused || d.Requirement == Skip) {
				t.Errorf("Ready with requirement %s", d.Requirement)
			}
			if d.Ready && d.Rate <= 0 {
				t.Errorf("Ready with rate %v", d.Rate)
			}
		})
	}
}

func TestDecideActorCanApprove(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	tests := []struct {
		name      string
		itemType  string
		actor     quarantine.Actor
		approvals []Approval
		want      bool
	}{
		{"RequesterCannot", "orders.refund", alice, nil, false},
		{"RequesterOtherEmailCannot", "orders.refund", aliceElsewhere, nil, false},
		{"OtherPersonCan", "orders.refund", bob, nil, true},
		{"SameSubjectOtherIssuerCan", "orders.refund", otherAlice, nil, true},
		{"AlreadyApprovedCannot", "orders.refund", bobElsewhere, []Approval{approval(bob, time.Minute)}, false},
		{"SecondApproverCan", "orders.refund", carol, []Approval{approval(bob, time.Minute)}, true},
		{"CompleteCannot", "email.send", carol, []Approval{approval(bob, time.Minute)}, false},
		{"DirectClassCannot", "search.x", bob, nil, false},
		{"ExpiredApproverCanAgain", "email.send", bob, []Approval{approval(bob, 30*time.Hour)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := testRequest(tbl)
			req.RequestedAt = testNow.Add(-48 * time.Hour)
			req.Approvals = tt.approvals
			d := Decide(tbl, testItem(tt.itemType), tt.actor, req, testNow)
			if d.ActorCanApprove != tt.want {
				t.Errorf("ActorCanApprove = %t, want %t (reason: %s)", d.ActorCanApprove, tt.want, d.Reason)
			}
		})
	}
}

func TestDecideConfirmation(t *testing.T) {
	t.Parallel()
	// A bulk class with typed confirmation confirms by count.
	tbl := mustParse(t, strings.Replace(testPolicy, "[class.rebuildable]\n", "[class.rebuildable]\ntyped_confirmation = true\n", 1))
	req := testRequest(tbl)
	req.Items, req.Bulk = 3, true
	d := Decide(tbl, testItem("search.x"), alice, req, testNow)
	if d.Confirmation != "REPLAY 3 ITEMS" || d.Ready {
		t.Fatalf("Decide = %+v, want confirmation %q and not ready", d, "REPLAY 3 ITEMS")
	}
	req.TypedConfirmation = "REPLAY 3 ITEMS"
	if d := Decide(tbl, testItem("search.x"), alice, req, testNow); !d.Ready {
		t.Errorf("after typing the phrase: %+v, want ready", d)
	}
	if got := ConfirmationPhrase(Item{MsgID: "S:9"}, Request{Items: 1}); got != "REPLAY S:9" {
		t.Errorf("ConfirmationPhrase(single) = %q", got)
	}
	if got := ConfirmationPhrase(Item{MsgID: "S:9"}, Request{Items: 1, Bulk: true}); got != "REPLAY 1 ITEMS" {
		t.Errorf("ConfirmationPhrase(bulk selection of one) = %q", got)
	}
	// Classes without typed confirmation show no phrase.
	if d := Decide(tbl, testItem("analytics.x"), alice, testRequest(tbl), testNow); d.Confirmation != "" {
		t.Errorf("dedupe Confirmation = %q, want none", d.Confirmation)
	}
}

func TestDecideNilTable(t *testing.T) {
	t.Parallel()
	d := Decide(nil, testItem("search.x"), alice, Request{}, testNow)
	if d.Requirement != Refused || d.Ready || d.Reason == "" || d.Rule != -1 {
		t.Errorf("Decide(nil table) = %+v, want refused with a reason", d)
	}
}

func TestRequirement(t *testing.T) {
	t.Parallel()
	var zero Decision
	if zero.Requirement != Refused || zero.Ready {
		t.Errorf("zero Decision = %+v, want refused and not ready", zero)
	}
	want := map[Requirement]string{Refused: "refused", Direct: "direct", OneApprover: "one_approver", TwoApprovers: "two_approvers", Skip: "skip", 99: "requirement(99)"}
	for r, s := range want {
		if r.String() != s {
			t.Errorf("Requirement(%d).String() = %q, want %q", int(r), r.String(), s)
		}
	}
}

// TestConfirmationPhraseOfAnyMessageID: the producer chooses the message
// id and ingest keeps it exactly, so an id may end in blanks or hold a
// character that does not print. Its phrase can still be typed and read
// (quoted when the bare id would not read as itself), and no two ids
// share a phrase: a phrase typed for one id never confirms another.
func TestConfirmationPhraseOfAnyMessageID(t *testing.T) {
	t.Parallel()
	one := Request{Items: 1}
	phrase := func(id string) string { return ConfirmationPhrase(Item{MsgID: id}, one) }
	tests := []struct{ id, want string }{
		{"refund-1", "REPLAY refund-1"},
		{"order 7", "REPLAY order 7"},
		{"abc ", `REPLAY "abc "`},
		{"abc \t", `REPLAY "abc \t"`},
		{" abc", `REPLAY " abc"`},
		{"abc\n", `REPLAY "abc\n"`},
		{"a\u202eb", `REPLAY "a\u202eb"`},
		{`"abc"`, `REPLAY "\"abc\""`},
		{"a\xffb", `REPLAY "a\xffb"`},
		{"ref  42", `REPLAY "ref\x20\x2042"`},
		{"a   b c", `REPLAY "a\x20\x20\x20b c"`},
		{"  ", `REPLAY "\x20\x20"`},
		{"a\u00a0b", `REPLAY "a\u00a0b"`},
		{`a"b`, `REPLAY a"b`},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := phrase(tt.id)
		if got != tt.want {
			t.Errorf("phrase of %q = %q, want %q", tt.id, got, tt.want)
		}
		if Confirmed(got, " "+got+"\n").Outcome != Go {
			t.Errorf("the phrase of %q, typed as shown, does not confirm it", tt.id)
		}
		// As a page shows it when it collapses white space: the same.
		if shown := strings.Join(strings.Fields(got), " "); shown != got {
			t.Errorf("the phrase of %q reads %q where white space collapses", tt.id, shown)
		}
		if q := strings.TrimPrefix(got, "REPLAY "); q[0] == '"' {
			if id, err := strconv.Unquote(q); err != nil || id != tt.id {
				t.Errorf("the quoted id %s unquotes to %q (%v), not %q", q, id, err, tt.id)
			}
		}
		if other, ok := seen[got]; ok {
			t.Errorf("ids %q and %q share the phrase %q", other, tt.id, got)
		}
		seen[got] = tt.id
	}
	// Through Decide, as the confirm and approve pages ask: a manual item
	// whose id ends in a blank is confirmed by its quoted phrase.
	tbl := mustParse(t, testPolicy)
	item := testItem("orders.refund")
	item.MsgID = "abc "
	d := Decide(tbl, item, alice, testRequest(tbl), testNow)
	if d.Confirmation != `REPLAY "abc "` {
		t.Fatalf("Decide(manual, id %q).Confirmation = %q", item.MsgID, d.Confirmation)
	}
	if v := SubmitVerdict(d, `REPLAY "abc "`); v.Check == CheckConfirmation {
		t.Errorf("the quoted phrase does not confirm: %s", v.Reason)
	}
	if Confirmed(phrase("abc "), "REPLAY abc").Outcome == Go {
		t.Error(`"REPLAY abc" confirms the id "abc "`)
	}
	if Confirmed(phrase("abc"), `REPLAY "abc "`).Outcome == Go {
		t.Error(`the phrase of "abc " confirms the id "abc"`)
	}
}
