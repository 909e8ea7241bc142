package replaypolicy

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestClassUnion classes items by two classes at once (item type and
// target subject, error class floor): the strictest sets the class, and
// the rules and knobs of both apply. A same_operation item type sent to a
// revalidate subject still needs its operation id and may not be edited; a
// dedupe item type sent to a same_operation subject is still skipped when
// its message id was replayed; approvals are the most either class asks
// for.
func TestClassUnion(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, lines(
		`[[rule]]`, `item_type = "analytics.*"`, `class = "dedupe"`,
		`[[rule]]`, `item_type = "email.*"`, `class = "same_operation"`,
		`[[rule]]`, `subject = "svc.*.accounts.>"`, `class = "revalidate"`,
		`[[rule]]`, `subject = "svc.*.email.>"`, `class = "same_operation"`,
		`[class.dedupe]`, `approvals = 2`,
	))
	item := func(itemType, subject string, change func(*Item)) Item {
		it := testItem(itemType)
		it.OriginalSubject = subject
		if change != nil {
			change(&it)
		}
		return it
	}

	noOp := JudgeItem(tbl, item("email.send", "svc.acme.accounts.grant", func(i *Item) { i.OperationID = "" }), AtDraft)
	if noOp.Class != Revalidate || noOp.Outcome != Block || noOp.Check != CheckNoOperationID {
		t.Errorf("same_operation type to a revalidate subject without an operation id: %s %s %q", noOp.Class, noOp.Outcome, noOp.Reason)
	}
	edited := JudgeItem(tbl, item("email.send", "svc.acme.accounts.grant", func(i *Item) { i.PayloadEdited = true }), AtRequest)
	if edited.Outcome != Block || edited.Check != CheckEdited {
		t.Errorf("edited same_operation type to a revalidate subject: %s %q", edited.Outcome, edited.Reason)
	}
	replayed := JudgeItem(tbl, item("analytics.event", "svc.acme.email.x", func(i *Item) { i.AlreadyReplayed = true }), AtDraft)
	if replayed.Class != SameOperation || replayed.Outcome != Done || replayed.Check != CheckLedger {
		t.Errorf("dedupe type to a same_operation subject, replayed before: %s %s %q", replayed.Class, replayed.Outcome, replayed.Reason)
	}

	going := JudgeItem(tbl, item("analytics.event", "svc.acme.email.x", nil), AtRequest)
	if going.Outcome != Go || !going.Classing.Has(Dedupe) || !going.Classing.Has(SameOperation) {
		t.Fatalf("dedupe type to a same_operation subject: %+v", going.Classing)
	}
	terms, v := JudgeRequest(tbl, []Verdict{going}, testRequest(tbl))
	if v.Outcome != Go || terms.Knobs.Approvals != 2 {
		t.Errorf("approvals of dedupe (2) and same_operation (1): %d (%s %q)", terms.Knobs.Approvals, v.Outcome, v.Reason)
	}
	if ids := Identities(going.Class, going.Classing.Union, "acme", "app.acme.x", "m", "op"); len(ids) != 2 || !strings.Contains(ids[0], "msg") || !strings.Contains(ids[1], "op") {
		t.Errorf("identities: %q, want the message id and the operation id", ids)
	}
	if j := JudgeJob(Job{Class: Revalidate, Union: []Class{SameOperation, Revalidate}, Revalidation: &Revalidation{Allow: true}}); j.Outcome != Wait || j.Needs != NeedLedger {
		t.Errorf("a revalidate job that is same_operation too needs the ledger: %+v", j)
	}
}

// TestDraftBulkCapOfUnion drafts items classed by two classes (a dedupe
// item type sent to a same_operation subject) whose weaker class has the
// smaller bulk cap: the draft blocks what is over the cap of the union,
// as the submit does (JudgeRequest), rather than the cap of the item's
// own class alone, so that no draft lets go what its submit refuses.
func TestDraftBulkCapOfUnion(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, lines(
		`[[rule]]`, `item_type = "analytics.*"`, `class = "dedupe"`,
		`[[rule]]`, `subject = "svc.*.email.>"`, `class = "same_operation"`,
		`[class.dedupe]`, `bulk_cap = 3`,
	))
	it := testItem("analytics.event")
	it.OriginalSubject = "svc.acme.email.x"
	v := JudgeItem(tbl, it, AtDraft)
	if v.Outcome != Go || v.Class != SameOperation || !v.Classing.Has(Dedupe) {
		t.Fatalf("the item: %s %s %+v", v.Class, v.Outcome, v.Classing)
	}
	if k, _ := tbl.Knobs(SameOperation); k.BulkCap <= 4 {
		t.Fatalf("same_operation's own cap is %d: the test needs one above 4", k.BulkCap)
	}
	for _, n := range []int{3, 4} {
		verdicts := make([]Verdict, n)
		for i := range verdicts {
			verdicts[i] = v
		}
		drafted := JudgeDraft(tbl, SameOperation, "acme", true, verdicts)
		req := testRequest(tbl)
		req.Items, req.Bulk = n, true
		_, submitted := JudgeRequest(tbl, verdicts, req)
		if n == 3 {
			if drafted[n-1].Outcome != Go || submitted.Outcome != Go {
				t.Errorf("3 items (the cap): draft %s %q, submit %s %q", drafted[n-1].Outcome, drafted[n-1].Reason, submitted.Outcome, submitted.Reason)
			}
			continue
		}
		for i, d := range drafted {
			if d.Outcome != Block || d.Check != CheckBulkCap || !strings.Contains(d.Reason, "at most 3 items") || !strings.Contains(d.Reason, "dedupe") {
				t.Errorf("item %d of 4: %s %s %q, want blocked by the union's cap of 3, naming dedupe", i, d.Outcome, d.Check, d.Reason)
			}
		}
		if submitted.Outcome != Block || submitted.Check != CheckBulkCap {
			t.Errorf("submit of 4: %s %s %q", submitted.Outcome, submitted.Check, submitted.Reason)
		}
	}
}

// TestApprovalExpiryOfUnion judges a request of class same_operation
// (approvals expire after 24 h) whose items are classed dedupe too
// (approvals expire after 1 h here): an approval 2 hours old no longer
// counts and no longer starts the replay, as it would for same_operation
// alone.
func TestApprovalExpiryOfUnion(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, lines(`[class.dedupe]`, `approval_expiry = "1h"`))
	req := testRequest(tbl)
	req.Class, req.RequestedAt, req.Approvals = SameOperation, testNow.Add(-3*time.Hour), []Approval{approval(bob, 2*time.Hour)}
	run := Run{Tenant: "acme", Class: SameOperation, Status: "approved", PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-2 * time.Hour), Requester: alice}
	if n := CountApprovals(tbl, req, testNow); n != 1 {
		t.Errorf("same_operation alone: %d approvals count, want 1", n)
	}
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Go {
		t.Errorf("same_operation alone: %s %q", v.Outcome, v.Reason)
	}
	req.Union, run.Union = []Class{SameOperation, Dedupe}, []Class{SameOperation, Dedupe}
	if n := CountApprovals(tbl, req, testNow); n != 0 {
		t.Errorf("with dedupe: %d approvals count, want 0 (expired after 1h)", n)
	}
	if !ApprovalLapsed(tbl, req, bob, testNow) {
		t.Error("with dedupe: bob's approval has lapsed, so he may approve again")
	}
	if v := JudgeRun(tbl, run, testNow); v.Outcome != Block || v.Check != CheckExpired || !strings.Contains(v.Reason, "1h0m0s") {
		t.Errorf("with dedupe: %s %s %q, want expired after 1h", v.Outcome, v.Check, v.Reason)
	}
}

// TestClassifyUnionHoldsEveryClass: an item's Union holds every class it
// is classed by, each once, whichever of them is its class too: its item
// type's and subject's (ClassOf), its error class's floor, and manual
// from the generation limit on, those the class was raised past
// included. Where nothing raised the class, what a request is held to
// (JudgeRequest's Terms.Union, stored as replay_requests.classes) and the
// bulk sentence's names (classNames) are what they were before the class
// itself was kept in the Union (review 23g).
func TestClassifyUnionHoldsEveryClass(t *testing.T) {
	t.Parallel()
	tbl, err := Load("../dev/policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		key   Key
		class Class
		union []Class
		terms []Class // Terms.Union of a request of the item
		names string  // classNames(class, union)
	}{
		"OneClass": {key: Key{ItemType: "email.send", Subject: "app.acme.email.send", ErrorClass: ErrTransient},
			class: SameOperation, union: []Class{SameOperation}, terms: []Class{SameOperation}, names: "same_operation"},
		"SubjectStricter": {key: Key{ItemType: "email.send", Subject: "app.acme.accounts.notify", ErrorClass: ErrTransient},
			class: Revalidate, union: []Class{SameOperation, Revalidate}, terms: []Class{Revalidate, SameOperation}, names: "revalidate (and same_operation)"},
		"TypeStricter": {key: Key{ItemType: "orders.refund", Subject: "app.acme.search.x", ErrorClass: ErrTransient},
			class: Manual, union: []Class{Manual, Rebuildable}, terms: []Class{Manual, Rebuildable}, names: "manual (and rebuildable)"},
		"FloorWeaker": {key: Key{ItemType: "orders.refund", Subject: "app.acme.orders.refund", ErrorClass: ErrPolicy},
			class: Manual, union: []Class{Manual, Revalidate}, terms: []Class{Manual, Revalidate}, names: "manual (and revalidate)"},
		"RaisedByErrorClass": {key: Key{ItemType: "email.send", Subject: "app.acme.email.send", ErrorClass: ErrPolicy},
			class: Revalidate, union: []Class{SameOperation, Revalidate}, terms: []Class{Revalidate, SameOperation}, names: "revalidate (and same_operation)"},
		"RaisedByLoop": {key: Key{ItemType: "analytics.event", Subject: "app.acme.analytics.event", ErrorClass: ErrTransient, Generation: 3},
			class: Manual, union: []Class{Dedupe, Manual}, terms: []Class{Manual, Dedupe}, names: "manual (and dedupe)"},
		"RaisedByBoth": {key: Key{ItemType: "email.send", Subject: "app.acme.email.send", ErrorClass: ErrPolicy, Generation: 4},
			class: Manual, union: []Class{SameOperation, Revalidate, Manual}, terms: []Class{Manual, SameOperation, Revalidate}, names: "manual (and same_operation, revalidate)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := tbl.Classify(tc.key)
			if c.Class != tc.class || !slices.Equal(c.Union, tc.union) {
				t.Fatalf("class %s, union %v; want %s, %v", c.Class, c.Union, tc.class, tc.union)
			}
			for _, k := range tc.union {
				if !c.Has(k) {
					t.Errorf("Has(%s) is false", k)
				}
			}
			if got := classNames(c.Class, c.Union); got != tc.names {
				t.Errorf("classNames %q, want %q", got, tc.names)
			}
			it := testItem(tc.key.ItemType)
			it.OriginalSubject, it.ErrorClass, it.Generation = tc.key.Subject, tc.key.ErrorClass, tc.key.Generation
			v := JudgeItem(tbl, it, AtRequest)
			if v.Outcome != Go {
				t.Fatalf("the item: %s %s %q", v.Outcome, v.Check, v.Reason)
			}
			req := testRequest(tbl)
			req.Class, req.ReconciliationNote = v.Class, "checked"
			terms, rv := JudgeRequest(tbl, []Verdict{v}, req)
			if rv.Outcome != Go || !slices.Equal(terms.Union, tc.terms) {
				t.Errorf("request: %s %q, union %v, want %v", rv.Outcome, rv.Reason, terms.Union, tc.terms)
			}
		})
	}
}

// TestConfirmationOfUnion: a typed confirmation asked by a class of a
// request's union that is not its class (same_operation, under a
// revalidate subject) is asked: the phrase the confirm page shows
// (Table.Confirmation over RequestUnion, as dlq/replay reads it before
// the submit) is the one JudgeRequest checks at the submit and the
// approval, and the request's class alone asks none (review 23g).
func TestConfirmationOfUnion(t *testing.T) {
	t.Parallel()
	tbl := mustParse(t, lines(
		`[[rule]]`, `item_type = "email.*"`, `class = "same_operation"`,
		`[[rule]]`, `subject = "svc.*.accounts.>"`, `class = "revalidate"`,
		`[class.same_operation]`, `typed_confirmation = true`,
	))
	it := testItem("email.send")
	it.OriginalSubject = "svc.acme.accounts.notify"
	v := JudgeItem(tbl, it, AtRequest)
	if v.Outcome != Go || v.Class != Revalidate || !v.Classing.Has(SameOperation) {
		t.Fatalf("the item: %s %s %+v", v.Outcome, v.Class, v.Classing)
	}
	req := testRequest(tbl)
	req.Class = Revalidate
	terms, rv := JudgeRequest(tbl, []Verdict{v}, req)
	if rv.Outcome != Go || terms.Confirmation != "REPLAY ORDERS:42" {
		t.Fatalf("the rules: %s %q, phrase %q", rv.Outcome, rv.Reason, terms.Confirmation)
	}
	union := RequestUnion([]Verdict{v})
	if !slices.Equal(union, terms.Union) {
		t.Errorf("RequestUnion %v, Terms.Union %v", union, terms.Union)
	}
	if got := tbl.Confirmation(Revalidate, union, it, req); got != terms.Confirmation {
		t.Errorf("shown %q, asked %q", got, terms.Confirmation)
	}
	if got := tbl.Confirmation(Revalidate, nil, it, req); got != "" {
		t.Errorf("revalidate alone asks %q", got)
	}
	req.Items, req.Bulk = 3, true
	if got := tbl.Confirmation(Revalidate, union, it, req); got != "REPLAY 3 ITEMS" {
		t.Errorf("three items: %q", got)
	}
	if got := (*Table)(nil).Confirmation(Revalidate, union, it, req); got != "" {
		t.Errorf("no table: %q", got)
	}
}
