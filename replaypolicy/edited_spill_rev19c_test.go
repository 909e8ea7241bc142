package replaypolicy

import (
	"testing"
	"time"
)

// TestRevPolicy19EditOfOneItemRefusesAnotherSameOperationItem: a request
// of class revalidate holds two items: an email.send (same_operation by
// its item type) aimed at an accounts subject (revalidate by a subject
// rule), never edited, and an accounts item whose payload the requester
// edited (allowed: nothing makes it same_operation). DecideItems marks
// EVERY item PayloadEdited when the request holds an edit
// (item.PayloadEdited || req.PayloadEdited), and JudgeItem refuses a
// same_operation item on PayloadEdited alone (neverEdited), not on its own
// bytes (Item.Edited): the untouched email is refused as "the payload was
// edited", and with it the whole request, at submit and at every approval,
// though the draft judged it Go and the edit of the other item was
// allowed (JudgeEditItem). The rule is "never edited for same_operation":
// of that item, not of its neighbours.
func TestRevPolicy19EditOfOneItemRefusesAnotherSameOperationItem(t *testing.T) {
	tbl := mustParse(t, testPolicy+`
[[rule]]
subject = "svc.*.accounts.>"
class = "revalidate"
`)
	mail := testItem("email.send")
	mail.OriginalSubject = "svc.acme.accounts.notify"
	mail.MsgID = "MAIL:1"
	grant := testItem("accounts.grant")
	grant.MsgID = "GRANT:1"
	grant.PayloadEdited, grant.PayloadSHA256 = true, "ee99ee99"

	for _, it := range []Item{mail, grant} {
		if c := tbl.Classify(Key{ItemType: it.ItemType, Subject: it.OriginalSubject}).Class; c != Revalidate {
			t.Fatalf("%s to %s is %s, want revalidate: one request holds both", it.ItemType, it.OriginalSubject, c)
		}
	}
	if v := JudgeEditItem(tbl, grant); v.Outcome != Go {
		t.Fatalf("the accounts item may be edited: %s", v.Reason)
	}
	if v := JudgeItem(tbl, mail, AtDraft); v.Outcome != Go {
		t.Fatalf("the email goes at draft: %s", v.Reason)
	}

	req := testRequest(tbl)
	req.Class, req.Items, req.Bulk, req.PayloadEdited = Revalidate, 2, true, true
	req.Approvals = []Approval{approval(bob, time.Minute)}
	d := DecideItems(tbl, []Item{mail, grant}, alice, req, testNow)
	if d.Requirement == Refused {
		t.Errorf("request refused (check %q): %s", d.Check, d.Reason)
	}
}
