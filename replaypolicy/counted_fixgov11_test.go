package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
)

// dave is a third approver, for the tests below.
var dave = quarantine.Actor{Issuer: "https://idp.example", Subject: "u-dave", Email: "dave@example.com"}

// countedRun is a manual run (two approvers, 4h expiry) by alice,
// submitted 7h before testNow and approved 1h before it by bob (3h ago)
// and carol (1h ago). dave approved 6h ago: expired when it was approved.
// An approval of another intent and a void one, both 2h ago, never
// counted either.
func countedRun(tbl *Table) Run {
	other := approval(alice, 2*time.Hour)
	other.Approver, other.IntentHash = quarantine.Actor{Issuer: "https://idp.example", Subject: "u-erin", Email: "erin@example.com"}, "other"
	void := approval(quarantine.Actor{Issuer: "https://idp.example", Subject: "u-frank", Email: "frank@example.com"}, 2*time.Hour)
	void.Void = "lost the right"
	return Run{Tenant: "acme", Class: Manual, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-time.Hour),
		Requester: alice, IntentHash: testIntent, RequestedAt: testNow.Add(-7 * time.Hour), ApprovalsNeeded: 2,
		Approvals: []Approval{approval(dave, 6*time.Hour), approval(bob, 3*time.Hour), other, void, approval(carol, time.Hour)}}
}

// TestFixGov11CountedAreTheApprovalsTheApprovalRestedOn: the approvals a
// worker judges a request by are those judgeApprovals counted when it was
// approved: not one that had expired by then, approved another intent or
// was void, whatever the people.
func TestFixGov11CountedAreTheApprovalsTheApprovalRestedOn(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	r := countedRun(tbl)
	var who []string
	for _, a := range r.Counted(tbl) {
		who = append(who, a.Approver.Subject)
	}
	assert.Equal(t, []string{"u-bob", "u-carol"}, who)

	// The same rule as the approval count of the request's page, judged at
	// its approval.
	req := r.request()
	n, ignored := JudgeApprovals(tbl, req, r.ApprovedAt)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{IgnoredExpired, "", IgnoredOtherIntent, IgnoredLostRight, ""}, ignored)

	never := r
	never.ApprovedAt = time.Time{}
	assert.Empty(t, never.Counted(tbl), "never approved: nothing counted")
}

// TestFixGov11JudgeRunAsksOnlyTheCountedApprovers: the worker hands
// JudgeRun the standing of the counted approvers (Authority.Approvers);
// dave, whose approval had expired, neither blocks the run for his lost
// right nor makes up a second person when carol's account takes bob's
// email.
func TestFixGov11JudgeRunAsksOnlyTheCountedApprovers(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	r := countedRun(tbl)
	standing := func(r Run, now func(quarantine.Actor) quarantine.Actor) *Authority {
		a := &Authority{RequesterMay: true}
		for _, ap := range r.Counted(tbl) {
			a.Approvers = append(a.Approvers, Standing{Who: ap.Approver, Now: now(ap.Approver), May: true})
		}
		return a
	}
	same := func(a quarantine.Actor) quarantine.Actor { return a }
	r.Authority = standing(r, same)
	require.Equal(t, Go, JudgeRun(tbl, r, testNow).Outcome, JudgeRun(tbl, r, testNow).Reason)

	carolIsBob := func(a quarantine.Actor) quarantine.Actor {
		if a == carol {
			a.Email, a.EmailVerified = bob.Email, true
		}
		return a
	}
	r.Authority = standing(r, carolIsBob)
	v := JudgeRun(tbl, r, testNow)
	assert.Equal(t, CheckOwnRequest, v.Check, "the counted approvals come from one person now: %s", v.Reason)
	assert.Equal(t, 1, OthersApproved(r))
}

// TestFixGov11StartByIsTheFirstCountedApproval: an approved request may
// start for approval_expiry after the first approval it counted (bob's,
// 3h before testNow), not after the last one that completed it; dave's
// older approval, expired when it was approved, does not bound it. A
// request approved with no approval starts by its approval plus the
// expiry, and a union's strictest expiry applies.
func TestFixGov11StartByIsTheFirstCountedApproval(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	r := countedRun(tbl)
	bobAt := testNow.Add(-3 * time.Hour)
	assert.Equal(t, bobAt.Add(4*time.Hour), StartBy(tbl, r.request(), r.ApprovedAt))
	assert.Equal(t, bobAt.Add(4*time.Hour), ApprovalLapse(tbl, r))
	assert.Equal(t, Go, JudgeRun(tbl, r, bobAt.Add(4*time.Hour)).Outcome)
	assert.Equal(t, CheckExpired, JudgeRun(tbl, r, bobAt.Add(4*time.Hour+time.Nanosecond)).Check,
		"bob's approval no longer lets it start, though carol's is 3h old")

	direct := Run{Tenant: "acme", Class: Rebuildable, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow, Requester: alice,
		IntentHash: testIntent}
	assert.Equal(t, testNow.Add(24*time.Hour), ApprovalLapse(tbl, direct), "no approval: from the request's approval")
	direct.Union = []Class{Manual}
	assert.Equal(t, testNow.Add(4*time.Hour), ApprovalLapse(tbl, direct), "the strictest class of the request's items")
}

// TestFixGov11FirstLapseIsTheFirstApprovalThatCountsNow: of a request
// waiting for approval, the first approval that counts now (not an
// expired one, not the requester's own, not one of another intent) is
// what lapses first.
func TestFixGov11FirstLapseIsTheFirstApprovalThatCountsNow(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	req := testRequest(tbl)
	req.Class = Manual
	req.RequestedAt = testNow.Add(-7 * time.Hour)
	other := approval(carol, 3*time.Hour)
	other.IntentHash = "other"
	req.Approvals = []Approval{approval(dave, 6*time.Hour), approval(aliceElsewhere, 3*time.Hour), other, approval(bob, 2*time.Hour)}
	assert.Equal(t, testNow.Add(2*time.Hour), FirstLapse(tbl, req, testNow), "bob's, given 2h ago")
	req.Approvals = req.Approvals[:3]
	assert.True(t, FirstLapse(tbl, req, testNow).IsZero(), "none counts")
	req.Class = "no-such-class"
	assert.True(t, FirstLapse(tbl, req, testNow).IsZero())
}
