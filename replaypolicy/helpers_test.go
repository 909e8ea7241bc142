package replaypolicy

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/quarantine-console/quarantine"
)

// testPolicy is the fixture the decision tests run against. It spells out
// the knobs the tests depend on, so that changing DefaultKnobs or the shipped
// dev/policy.toml does not silently change what these tests check.
const testPolicy = `
[[rule]]
item_type = "search.*"
class = "rebuildable"

[[rule]]
item_type = "analytics.*"
class = "dedupe"

[[rule]]
item_type = "email.*"
class = "same_operation"

[[rule]]
item_type = "accounts.*"
class = "revalidate"

[[rule]]
item_type = "orders.>"
class = "manual"

[class.rebuildable]
approvals = 0
bulk = true
bulk_cap = 10000
default_rate = 500
max_rate = 5000
approval_expiry = "24h"

[class.dedupe]
approvals = 0
bulk = true
bulk_cap = 10000
default_rate = 200
max_rate = 2000

[class.same_operation]
approvals = 1
bulk = true
bulk_cap = 500
default_rate = 50
max_rate = 500
approval_expiry = "24h"

[class.revalidate]
approvals = 1
bulk = true
bulk_cap = 100
approval_expiry = "8h"

[class.manual]
approvals = 2
bulk = false
approval_expiry = "4h"
typed_confirmation = true
`

// mustParse parses src or fails the test.
func mustParse(t testing.TB, src string) *Table {
	t.Helper()
	tbl, err := Parse("test.toml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tbl
}

// lines joins its arguments with newlines, so a test's TOML shows its line
// numbers by position: the first argument is line 1.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// The people in the decision tests. Alice requests; bob and carol approve.
// aliceElsewhere is alice under another email (the same person);
// otherAlice has alice's subject at another issuer (another person).
var (
	testNow        = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	alice          = quarantine.Actor{Issuer: "https://idp.example", Subject: "u-alice", Email: "alice@example.com"}
	aliceElsewhere = quarantine.Actor{Issuer: "https://idp.example", Subject: "u-alice", Email: "a.liddell@example.org"}
	otherAlice     = quarantine.Actor{Issuer: "https://partner-idp.example", Subject: "u-alice", Email: "alice@partner.example"}
	bob            = quarantine.Actor{Issuer: "https://idp.example", Subject: "u-bob", Email: "bob@example.com"}
	bobElsewhere   = quarantine.Actor{Issuer: "https://idp.example", Subject: "u-bob", Email: "robert@example.com"}
	carol          = quarantine.Actor{Issuer: "https://idp.example", Subject: "u-carol", Email: "carol@example.com"}
)

const testIntent = "9f2c0a7e51d4b6c8a3e1f0d2b4c6a8e0f1d3b5c7a9e2f4d6b8c0a1e3f5d7b9c1"

// testItem returns a complete, replayable item of the given type.
func testItem(itemType string) Item {
	return Item{
		Tenant:                "acme",
		ItemType:              itemType,
		MsgID:                 "ORDERS:42",
		OperationID:           "op-7f3a",
		Principal:             "user:dana",
		OriginalSubject:       "svc.acme." + itemType,
		PayloadSHA256:         "ab12cd34",
		OriginalPayloadSHA256: "ab12cd34",
		Status:                "quarantined",
	}
}

// testRequest returns a complete single-item request by alice under tbl's
// current version, with no approvals.
func testRequest(tbl *Table) Request {
	return Request{
		Items:         1,
		Requester:     alice,
		Reason:        "the consumer bug is fixed in v1.4.2",
		IntentHash:    testIntent,
		RequestedAt:   testNow.Add(-time.Hour),
		PolicyVersion: tbl.Version(),
	}
}

// approval is a by a, given age before testNow, for the test intent.
func approval(a quarantine.Actor, age time.Duration) Approval {
	return Approval{Approver: a, At: testNow.Add(-age), IntentHash: testIntent}
}

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }
