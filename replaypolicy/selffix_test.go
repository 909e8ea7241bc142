package replaypolicy

import (
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// TestFixRecordedByRequesterNeedsAnApprover: a fix marker is what lets a
// schema_invalid item of a rebuildable type replay. Recorded by someone
// else, the request goes at once; recorded by the requester (or another
// account of theirs), it has an edit's standing: one approver who is not
// them, and the sentence says why. An edited payload goes by the edit's
// own rule. At execution a self-recorded fix with nobody else's approval
// is blocked (invariant 11: judged at every step), and goes with one.
func TestFixRecordedByRequesterNeedsAnApprover(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, testPolicy)
	dead := testNow.Add(-time.Hour)
	fixed := func(by func(*Item)) Item {
		i := testItem("search.x")
		i.ErrorClass, i.DeadLetteredAt, i.FixedAt, i.FixRef = ErrSchemaInvalid, dead, dead.Add(time.Minute), "v9"
		by(&i)
		return i
	}
	req := testRequest(tbl)

	d := DecideItems(tbl, []Item{fixed(func(i *Item) { i.FixRecordedBy = bob })}, alice, req, testNow)
	if d.Requirement != Direct || !d.Ready {
		t.Fatalf("a fix recorded by someone else: %+v", d)
	}
	for name, by := range map[string]func(*Item){
		"Requester": func(i *Item) { i.FixRecordedBy = alice },
		"SecondAccount": func(i *Item) {
			i.FixRecordedBy = quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "x", Email: "Alice@Example.com"}
		},
		"SecondAccountNow": func(i *Item) { // recorded under another address; the directory now has the requester's
			i.FixRecordedBy = quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "y", Email: "old@example.org"}
			i.FixRecordedByNow = quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "y", Email: alice.Email}
		},
	} {
		d := DecideItems(tbl, []Item{fixed(by)}, alice, req, testNow)
		if d.Requirement != OneApprover || d.Ready || !strings.Contains(d.Reason, `the fix marker of item type "search.x" that lets it replay was recorded by the requester`) {
			t.Errorf("%s: %+v", name, d)
		}
	}
	edited := fixed(func(i *Item) { i.FixRecordedBy, i.PayloadEdited, i.PayloadSHA256 = alice, true, "ffee0011" })
	edReq := req
	edReq.PayloadEdited = true
	if d := DecideItems(tbl, []Item{edited}, alice, edReq, testNow); d.Requirement != OneApprover || !strings.Contains(d.Reason, "a payload was edited") {
		t.Errorf("an edited item goes by the edit's rule: %+v", d)
	}

	own := fixed(func(i *Item) {
		i.FixRecordedBy, i.Requester = alice, alice
		i.Status, i.Request, i.HeldBy = "replaying", 7, 7 // held by the request being executed
	})
	if v := JudgeItem(tbl, own, AtExecution); v.Outcome != Block || v.Check != CheckNeedsFix || !strings.Contains(v.Reason, "the requester recorded") {
		t.Errorf("execution, nobody else approved: %+v", v)
	}
	own.OthersApproved = 1
	if v := JudgeItem(tbl, own, AtExecution); v.Outcome != Go {
		t.Errorf("execution, one other person approved: %+v", v)
	}
	now := fixed(func(i *Item) {
		i.FixRecordedBy = quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "y", Email: "old@example.org"}
		i.FixRecordedByNow = quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "y", Email: alice.Email}
		i.Requester, i.Status, i.Request, i.HeldBy = alice, "replaying", 7, 7
	})
	if v := JudgeItem(tbl, now, AtExecution); v.Outcome != Block || v.Check != CheckNeedsFix {
		t.Errorf("execution, recorded by the requester's other account as the directory has it now: %+v", v)
	}
	own.OthersApproved = -1 // the worker checks no people
	if v := JudgeItem(tbl, own, AtExecution); v.Outcome != Go {
		t.Errorf("execution, people not known: %+v", v)
	}
}
