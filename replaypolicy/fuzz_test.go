package replaypolicy

import (
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// FuzzParse checks that Parse never panics, that every rejection is a
// PolicyError naming the file on each line, and that every accepted table
// re-validates: its knobs are within bounds, each rule is reachable, and the
// table written back out parses to the same rules, knobs and Version.
func FuzzParse(f *testing.F) {
	if shipped, err := os.ReadFile("../dev/policy.toml"); err == nil {
		f.Add(shipped)
	}
	f.Add([]byte(testPolicy))
	f.Fuzz(func(t *testing.T, data []byte) {
		tbl, err := Parse("fuzz.toml", data)
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("error does not match ErrInvalidPolicy: %v", err)
			}
			for _, l := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(l, "fuzz.toml: ") {
					t.Fatalf("error line %q does not start with the file name", l)
				}
			}
			return
		}
		checkTable(t, tbl)
		again, err := Parse("roundtrip.toml", tbl.marshal())
		if err != nil {
			t.Fatalf("the marshalled table does not parse: %v\n%s", err, tbl.marshal())
		}
		if again.Version() != tbl.Version() {
			t.Fatalf("round trip changed the version:\n%s\n%s", tbl.canonical(), again.canonical())
		}
		if !slices.Equal(again.Rules(), tbl.Rules()) || !slices.Equal(again.Classes(), tbl.Classes()) {
			t.Fatalf("round trip changed the table:\n%s\n%s", tbl.canonical(), again.canonical())
		}
	})
}

// checkTable re-validates an accepted table independently of the parser.
func checkTable(t *testing.T, tbl *Table) {
	t.Helper()
	classes := tbl.Classes()
	if len(classes) != len(KnownClasses()) {
		t.Fatalf("Classes() has %d entries", len(classes))
	}
	for _, cp := range classes {
		k := cp.Knobs
		switch {
		case k.Approvals < minApprovals(cp.Class) || k.Approvals > maxApprovals:
			t.Fatalf("%s: approvals %d out of bounds", cp.Class, k.Approvals)
		case cp.Class == Manual && (k.Bulk || !k.TypedConfirmation || k.Approvals < 2):
			t.Fatalf("manual is not strict: %+v", k)
		case k.BulkCap < 1 || k.BulkCap > maxBulkCap || (!k.Bulk && k.BulkCap != 1):
			t.Fatalf("%s: bulk_cap %d with bulk %t", cp.Class, k.BulkCap, k.Bulk)
		case !(k.DefaultRate > 0) || k.DefaultRate > k.MaxRate || k.MaxRate > maxRate || math.IsNaN(k.MaxRate):
			t.Fatalf("%s: rates %v/%v", cp.Class, k.DefaultRate, k.MaxRate)
		case k.ApprovalExpiry < minApprovalExpiry || k.ApprovalExpiry > maxApprovalExpiry:
			t.Fatalf("%s: expiry %s", cp.Class, k.ApprovalExpiry)
		}
	}
	for i, r := range tbl.Rules() {
		if !r.Class.Valid() {
			t.Fatalf("rule %d: class %q", i, r.Class)
		}
		// An instance of the globs must be matched by this rule or an
		// earlier one of its kind (item-type rules, subject rules), and
		// never fall through to a later rule or to the default.
		inst := func(glob string) string { return strings.ReplaceAll(strings.ReplaceAll(glob, "*", "x"), ">", "x.y") }
		c := tbl.ClassOf(inst(r.ItemType), inst(r.Subject))
		got := c.TypeRule
		if r.ItemType == "" {
			got = c.SubjectRule
		}
		if got < 0 || got > i {
			t.Fatalf("ClassOf(%q, %q) = rule %d, want rule %d or earlier", inst(r.ItemType), inst(r.Subject), got, i)
		}
		if Stricter(c.TypeClass, c.Class) || (c.SubjectRule >= 0 && Stricter(c.SubjectClass, c.Class)) {
			t.Fatalf("ClassOf(%q, %q) = %+v: not the stricter", inst(r.ItemType), inst(r.Subject), c)
		}
	}
}

// The people FuzzDecide picks approvers from; index 0 is the requester.
func fuzzActors() []quarantine.Actor {
	return []quarantine.Actor{alice, aliceElsewhere, bob, bobElsewhere, carol, otherAlice, {Email: "nobody@example.com"}}
}

// fuzzItem is testItem of one of the fuzzed item types, with the facts the
// flag bits 0 to 5 leave out taken away: operation id, principal, message
// id, an unchanged payload, original subject, and (reversed) a replay the
// ledger does not know.
func fuzzItem(typeSel uint8, bit func(int) bool) Item {
	types := []string{"search.x", "analytics.event", "email.send", "accounts.permission_grant", "orders.refund", "billing.charge", ""}
	item := testItem(types[int(typeSel)%len(types)])
	if !bit(0) {
		item.OperationID = ""
	}
	if !bit(1) {
		item.Principal = ""
	}
	if !bit(2) {
		item.MsgID = ""
	}
	if !bit(3) {
		item.PayloadSHA256 = "changed"
	}
	if !bit(4) {
		item.OriginalSubject = ""
	}
	item.AlreadyReplayed = !bit(5)
	return item
}

// FuzzDecide drives Decide with arbitrary items, requests and approvals and
// checks the safety properties against an independent count of valid
// approvals: nothing is Ready while refused or skipped; manual is never Ready
// with fewer than two distinct approvers other than the requester, in bulk,
// or unconfirmed; same_operation is never Ready without an operation id or
// with a changed payload; revalidate never without a principal; dedupe never
// for an item already replayed; nothing under a stale policy version.
func FuzzDecide(f *testing.F) {
	f.Add(uint8(4), uint16(0xFFFF), []byte{2, 1, 10, 4, 1, 20}, "REPLAY ORDERS:42", 1, 0.0, uint8(60))
	f.Add(uint8(4), uint16(0xFFFF), []byte{2, 1, 10, 3, 1, 20}, "REPLAY ORDERS:42", 1, 0.0, uint8(60))
	f.Add(uint8(4), uint16(0xFFFF), []byte{1, 1, 10, 4, 1, 20}, "REPLAY ORDERS:42", 1, 0.0, uint8(60))
	f.Add(uint8(2), uint16(0xFFFF), []byte{2, 1, 10}, "", 1, 10.0, uint8(60))
	f.Add(uint8(2), uint16(0xFFFE), []byte{2, 1, 10}, "", 1, 10.0, uint8(60))
	f.Add(uint8(3), uint16(0xFFFF), []byte{4, 0, 10}, "", 5, 0.0, uint8(60))
	f.Add(uint8(1), uint16(0x0FFF), []byte{}, "", 100, 100.0, uint8(1))
	f.Add(uint8(0), uint16(0xFFFF), []byte{}, "", 10001, 0.0, uint8(1))
	f.Add(uint8(5), uint16(0xFFFF), []byte{2, 1, 0, 4, 1, 250}, "REPLAY ORDERS:42", 1, 0.0, uint8(255))

	tbl := mustParse(f, testPolicy)
	statuses := []string{"quarantined", "", "replay_failed", "replayed", "discarded", "resolved", "replaying", "frozen"}
	f.Fuzz(func(t *testing.T, typeSel uint8, flags uint16, spec []byte, typed string, items int, rate float64, requestAgeMin uint8) {
		bit := func(i int) bool { return flags&(1<<i) != 0 }
		item := fuzzItem(typeSel, bit)
		item.MsgIDDerived = bit(6)
		item.Status = statuses[int(flags>>12)%len(statuses)]

		req := testRequest(tbl)
		req.Items, req.Rate, req.TypedConfirmation = items, rate, typed
		req.Bulk = !bit(7)
		req.PayloadEdited = !bit(8)
		if !bit(9) {
			req.PolicyVersion = "stale"
		}
		if !bit(10) {
			req.Reason = ""
		}
		if !bit(11) {
			req.IntentHash = ""
		}
		req.RequestedAt = testNow.Add(-time.Duration(requestAgeMin) * 5 * time.Minute)
		actors := fuzzActors()
		for i := 0; i+2 < len(spec); i += 3 {
			a := Approval{Approver: actors[int(spec[i])%len(actors)], At: testNow.Add(-time.Duration(int8(spec[i+2])) * 3 * time.Minute), IntentHash: testIntent}
			if spec[i+1]%2 == 0 {
				a.IntentHash = "other"
			}
			req.Approvals = append(req.Approvals, a)
		}
		actor := actors[int(typeSel>>4)%len(actors)]

		d := Decide(tbl, item, actor, req, testNow)

		if strings.TrimSpace(d.Reason) == "" {
			t.Fatalf("empty reason: %+v", d)
		}
		k, _ := tbl.Knobs(d.Class)
		if want := referenceApprovals(k, req, testNow); d.Requirement != Refused && d.Requirement != Skip && d.ApprovalsHave != want {
			t.Fatalf("ApprovalsHave = %d, reference count %d: %+v", d.ApprovalsHave, want, d)
		}
		if !d.Ready {
			return
		}
		bulk := req.Bulk || req.Items > 1
		switch {
		case d.Requirement == Refused || d.Requirement == Skip:
			t.Fatalf("ready with requirement %s", d.Requirement)
		case req.PolicyVersion != tbl.Version():
			t.Fatal("ready under a stale policy version")
		case strings.TrimSpace(req.Reason) == "" || item.OriginalSubject == "" || item.MsgID == "" || req.Items < 1:
			t.Fatalf("ready without reason, subject, message id or items: %+v %+v", item, req)
		case referenceApprovals(k, req, testNow) < k.Approvals:
			t.Fatalf("ready with %d valid approvals, %d needed", referenceApprovals(k, req, testNow), k.Approvals)
		case item.Status == "replayed" || item.Status == "discarded" || item.Status == "resolved":
			t.Fatalf("ready with status %q", item.Status)
		case req.Items > k.BulkCap || (bulk && !k.Bulk):
			t.Fatalf("ready over the bulk limits: %d items, bulk %t, knobs %+v", req.Items, bulk, k)
		}
		switch d.Class {
		case Manual:
			if referenceApprovals(k, req, testNow) < 2 || bulk || strings.TrimSpace(typed) != "REPLAY "+item.MsgID {
				t.Fatalf("manual ready without two approvers, single item and confirmation: %+v", req)
			}
		case SameOperation:
			if item.OperationID == "" || req.PayloadEdited || item.PayloadSHA256 != item.OriginalPayloadSHA256 {
				t.Fatalf("same_operation ready without operation id or with a changed payload: %+v", item)
			}
		case Revalidate:
			if item.Principal == "" {
				t.Fatal("revalidate ready without a principal")
			}
		case Dedupe:
			if item.AlreadyReplayed {
				t.Fatal("dedupe ready for an item already replayed")
			}
		}
	})
}

// referenceApprovals counts valid approvals the plain way, as the design
// states the rule, to check Decide against.
func referenceApprovals(k Knobs, req Request, now time.Time) int {
	var people []string
	for _, a := range req.Approvals {
		id := a.Approver.Issuer + "\x00" + a.Approver.Subject
		switch {
		case a.Approver.Issuer == "" || a.Approver.Subject == "":
		case a.Approver.Issuer == req.Requester.Issuer && a.Approver.Subject == req.Requester.Subject:
		case req.IntentHash == "" || a.IntentHash != req.IntentHash:
		case a.At.IsZero() || a.At.After(now) || a.At.Before(req.RequestedAt):
		case now.Sub(a.At) >= k.ApprovalExpiry:
		case slices.Contains(people, id):
		default:
			people = append(people, id)
		}
	}
	return len(people)
}

// FuzzJudgeItem judges arbitrary items at draft and at request, and a
// selection of them, and checks that no item goes that a rule refuses:
// not closed, replayed or unknown statuses, not one another request holds
// at draft, not without a subject or message id, a payload, an allowed
// subject, and each class's own facts; and that the selection never
// exceeds the class's bulk rules or goes for a requester who may not.
func FuzzJudgeItem(f *testing.F) {
	f.Add(uint8(0), uint16(0xFFFF), uint8(0), uint16(3), true)
	f.Add(uint8(2), uint16(0xFFFE), uint8(3), uint16(1), true)
	f.Add(uint8(4), uint16(0x0FFF), uint8(5), uint16(2), false)
	f.Add(uint8(1), uint16(0xFF7F), uint8(7), uint16(10001), true)
	tbl := mustParse(f, testPolicy)
	statuses := []string{"quarantined", "", "replay_failed", "replayed", "discarded", "resolved", "replaying", "replay_requested", "frozen"}
	f.Fuzz(func(t *testing.T, typeSel uint8, flags uint16, statusSel uint8, n uint16, may bool) {
		bit := func(i int) bool { return flags&(1<<i) != 0 }
		item := fuzzItem(typeSel, bit)
		item.Status = statuses[int(statusSel)%len(statuses)]
		item.PayloadEdited = !bit(6)
		item.PayloadUnavailable = !bit(7)
		if !bit(8) {
			item.SubjectRefusal = "refused"
		}
		// Bits 9 to 11 pick the error class, 12 a fix after the dead letter
		// (else before it), 13 and 14 the generation.
		item.ErrorClass = append(ErrorClasses(), "")[int(flags>>9)&7]
		item.DeadLetteredAt = testNow.Add(-time.Hour)
		item.FixedAt = testNow.Add(-2 * time.Hour)
		if bit(12) {
			item.FixedAt = testNow
		}
		item.Generation = int(flags>>13) & 3
		for _, at := range []Step{AtDraft, AtRequest} {
			v := JudgeItem(tbl, item, at)
			if v.Outcome != Go {
				if v.Check == "" || strings.TrimSpace(v.Reason) == "" {
					t.Fatalf("%s without a check or a reason: %+v", v.Outcome, v)
				}
				continue
			}
			closed := item.Status == "replayed" || item.Status == "discarded" || item.Status == "resolved" || item.Status == "frozen"
			held := at == AtDraft && (item.Status == "replay_requested" || item.Status == "replaying")
			switch {
			case v.Check != "" || v.Reason != "":
				t.Fatalf("Go with a check: %+v", v)
			case closed || held:
				t.Fatalf("status %q goes at step %d", item.Status, at)
			case strings.TrimSpace(item.OriginalSubject) == "" || item.MsgID == "" || item.PayloadUnavailable || item.SubjectRefusal != "":
				t.Fatalf("goes without a subject, message id, payload or allowed subject: %+v", item)
			case v.Class == Dedupe && item.AlreadyReplayed:
				t.Fatal("dedupe goes for an item already replayed")
			case v.Class == SameOperation && (item.OperationID == "" || item.PayloadEdited || item.PayloadSHA256 != item.OriginalPayloadSHA256):
				t.Fatalf("same_operation goes without its operation or with another payload: %+v", item)
			case v.Class == Revalidate && item.Principal == "":
				t.Fatal("revalidate goes without a principal")
			case tbl.ErrorRule(item.ErrorClass).Replay == Never:
				t.Fatalf("error class %q goes", item.ErrorClass)
			case tbl.ErrorRule(item.ErrorClass).Replay == AfterFix && !item.PayloadEdited && !bit(12):
				t.Fatalf("error class %q goes unedited and unfixed", item.ErrorClass)
			case item.Generation >= tbl.GenerationLimit() && v.Class != Manual:
				t.Fatalf("generation %d goes as %s", item.Generation, v.Class)
			case tbl.ErrorRule(item.ErrorClass).MinClass != "" && Stricter(tbl.ErrorRule(item.ErrorClass).MinClass, v.Class):
				t.Fatalf("error class %q goes as %s", item.ErrorClass, v.Class)
			}
		}
		verdicts := make([]Verdict, int(n)%20_000)
		for i := range verdicts {
			verdicts[i] = JudgeItem(tbl, item, AtDraft)
		}
		class := tbl.Classify(Key{ItemType: item.ItemType, Subject: item.OriginalSubject, ErrorClass: item.ErrorClass, Generation: item.Generation}).Class
		k, _ := tbl.Knobs(class)
		out := JudgeDraft(tbl, class, "acme", may, verdicts)
		goes := 0
		for _, v := range out {
			if v.Outcome == Go {
				goes++
			}
		}
		if goes > 0 && (!may || goes > k.BulkCap || (goes > 1 && !k.Bulk)) {
			t.Fatalf("%d items of %s go (may %t, knobs %+v)", goes, class, may, k)
		}
	})
}

// FuzzExecution judges arbitrary requests and jobs at execution and checks
// that nothing is published that a rule stops: a request not approved or
// running, under another policy, approved too long ago before it started,
// or of people who lost their rights or whose rights could not be read; a
// job whose subject is refused, whose identity the ledger has (or could
// not be read, or another job holds), or whose principal is not confirmed.
func FuzzExecution(f *testing.F) {
	f.Add(uint8(0), uint16(0xFFFF), uint8(60), uint8(2))
	f.Add(uint8(3), uint16(0x00FF), uint8(250), uint8(1))
	f.Add(uint8(1), uint16(0xF0F0), uint8(0), uint8(3))
	tbl := mustParse(f, testPolicy)
	statuses := []string{"approved", "running", "cancelled", "done", "pending_approval", "draft", "void", ""}
	classes := KnownClasses()
	f.Fuzz(func(t *testing.T, sel uint8, flags uint16, approvedHoursAgo uint8, approvers uint8) {
		bit := func(i int) bool { return flags&(1<<i) != 0 }
		r := Run{Tenant: "acme", Class: classes[int(sel)%len(classes)], Status: statuses[int(sel>>3)%len(statuses)],
			PolicyVersion: tbl.Version(), ApprovedAt: testNow.Add(-time.Duration(approvedHoursAgo) * time.Hour), Requester: alice}
		if !bit(0) {
			r.PolicyVersion = "stale"
		}
		if bit(1) {
			r.Authority = &Authority{RequesterMay: bit(2)}
			if !bit(3) {
				r.Authority.Unreadable = "timeout"
			}
			for i := range int(approvers) % 4 {
				r.Authority.Approvers = append(r.Authority.Approvers, Standing{Who: bob, May: bit(4 + i)})
			}
		}
		rv := JudgeRun(tbl, r, testNow)
		if rv.Outcome == Go {
			k, _ := tbl.Knobs(r.Class)
			a := r.Authority
			switch {
			case r.Status != "approved" && r.Status != "running":
				t.Fatalf("a %q request runs", r.Status)
			case tbl.Stale(r.PolicyVersion):
				t.Fatal("a request of another policy runs")
			case r.Status == "approved" && testNow.After(r.ApprovedAt.Add(k.ApprovalExpiry)):
				t.Fatal("an expired approval starts")
			case a != nil && (a.Unreadable != "" || !a.RequesterMay):
				t.Fatalf("runs without the requester's rights: %+v", a)
			case a != nil && slices.ContainsFunc(a.Approvers, func(s Standing) bool { return !s.May }):
				t.Fatalf("runs without an approver's rights: %+v", a)
			}
		}
		j := Job{Class: r.Class}
		if !bit(8) {
			j.SubjectRefusal = "refused"
		}
		if bit(9) {
			j.Ledger = &Ledger{HeldEarlier: !bit(10), Replayed: !bit(11)}
			if !bit(12) {
				j.Ledger.Unreadable = "timeout"
			}
		}
		if bit(13) {
			j.Revalidation = &Revalidation{Allow: bit(14)}
			if !bit(15) {
				j.Revalidation.Unanswered = "no answer"
			}
		}
		v := JudgeJob(j)
		if v.Needs != NeedNothing && v.Outcome != Wait {
			t.Fatalf("needs a fact but decided %s", v.Outcome)
		}
		if v.Outcome != Go {
			return
		}
		l, rev := j.Ledger, j.Revalidation
		switch {
		case j.SubjectRefusal != "":
			t.Fatal("a refused subject is published")
		case (j.Class == Dedupe || j.Class == SameOperation) && (l == nil || l.HeldEarlier || l.Replayed || l.Unreadable != ""):
			t.Fatalf("%s published without a clear ledger: %+v", j.Class, l)
		case j.Class == Revalidate && (rev == nil || !rev.Allow || rev.Unanswered != ""):
			t.Fatalf("revalidate published without a yes: %+v", rev)
		}
	})
}
