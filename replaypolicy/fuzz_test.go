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
		// An instance of the glob must be matched by this rule or an earlier
		// one, and never fall through to a later rule or to the default.
		instance := strings.ReplaceAll(strings.ReplaceAll(r.ItemType, "*", "x"), ">", "x.y")
		if _, got := tbl.ClassFor(instance); got < 0 || got > i {
			t.Fatalf("ClassFor(%q) = rule %d, want rule %d or earlier", instance, got, i)
		}
	}
}

// The people FuzzDecide picks approvers from; index 0 is the requester.
func fuzzActors() []quarantine.Actor {
	return []quarantine.Actor{alice, aliceElsewhere, bob, bobElsewhere, carol, otherAlice, {Email: "nobody@example.com"}}
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
	types := []string{"search.x", "analytics.event", "email.send", "accounts.permission_grant", "orders.refund", "billing.charge", ""}
	statuses := []string{"quarantined", "", "replay_failed", "replayed", "discarded", "resolved", "replaying", "frozen"}
	f.Fuzz(func(t *testing.T, typeSel uint8, flags uint16, spec []byte, typed string, items int, rate float64, requestAgeMin uint8) {
		bit := func(i int) bool { return flags&(1<<i) != 0 }
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
