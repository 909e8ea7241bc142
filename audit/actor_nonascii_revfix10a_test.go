package audit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// TestRevFix10aActorFilterNonASCIIEmailGivesEmptyLog: since d905dd6 the
// actor filter takes an email only by its EmailKey, and an address that is
// not all ASCII has none: it is compared with subjects only, so the
// auditor who types the very address the revgov10 finding is about
// (ops@kİwİ.example, the look-alike that held ops@kiwi.example's roles
// until today) gets an empty log with no word on the field, although the
// log holds that actor's entries under exactly that verified address. The
// filter grants nothing, so an exact match of the address is safe; and the
// audit page's own rule (docs/access.md, "Searching the log") is that text
// it cannot use comes back as an error on the field, never as an empty log.
func TestRevFix10aActorFilterNonASCIIEmailGivesEmptyLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	idn := quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-idn-revfix10a", Email: "ops@k\u0130w\u0130.example", EmailVerified: true}
	entries := appendAll(t, b, audit.Event{Actor: idn, Tenant: "acme", Action: "login", Outcome: audit.OutcomeOK})

	pg, err := audit.List(b.ctx, b.db.Pool, audit.Filter{Actor: idn.Email})
	if err != nil {
		// Told: the field says why (a fix may choose this), as an
		// invalid error for the person, not an internal one.
		assert.Equal(t, quarantine.EINVALID, quarantine.ErrorCode(err), "%v", err)
		return
	}
	assert.Equal(t, []int64{entries[0].Seq}, nilIfEmpty(seqsOf(pg.Entries)),
		"filtering the log by a verified address, byte for byte as recorded, shows an empty log and says nothing")
}
