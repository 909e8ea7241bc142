package audit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// TestActorFilterComparesEmailKeys: the actor filter compares emails as
// email bindings do (replaypolicy.EmailKey): ASCII case only. An address at
// kİwİ.example (xn--kiwi-rwcc, another domain) is not ops@kiwi.example,
// which lower() in most locales and Go's strings.ToLower would make it; an
// address that is not ASCII is found by its actor's subject, or as
// recorded, byte for byte (another spelling of it is not).
func TestActorFilterComparesEmailKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ops := quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-ops", Email: "Ops@Kiwi.example", EmailVerified: true}
	idn := quarantine.Actor{Issuer: "https://idp.example", Subject: "sub-idn", Email: "ops@k\u0130w\u0130.example", EmailVerified: true}
	entries := appendAll(t, b,
		audit.Event{Actor: ops, Tenant: "acme", Action: "login", Outcome: audit.OutcomeOK},
		audit.Event{Actor: idn, Tenant: "acme", Action: "login", Outcome: audit.OutcomeOK},
	)
	for _, tc := range []struct {
		actor string
		want  []int64
	}{
		{"ops@kiwi.example", []int64{entries[0].Seq}},
		{"OPS@KIWI.EXAMPLE", []int64{entries[0].Seq}},
		{"ops@k\u0130w\u0130.example", []int64{entries[1].Seq}}, // itself, byte for byte, and not ops@kiwi.example
		{"ops@ki\u0307wi\u0307.example", nil},
		{"sub-idn", []int64{entries[1].Seq}},
	} {
		pg, err := audit.List(b.ctx, b.db.Pool, audit.Filter{Actor: tc.actor})
		require.NoError(t, err, tc.actor)
		assert.Equal(t, tc.want, nilIfEmpty(seqsOf(pg.Entries)), tc.actor)
	}
}
