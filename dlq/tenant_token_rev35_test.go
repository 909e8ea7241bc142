package dlq

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev35TenantTokenThatIsAConsoleKeyIsNoTenant: the subject's tenant
// token was taken as the tenant unless it was a whole wildcard or not
// text. Three kinds named a tenant they should not:
//   - a token shaped as the key a longer tenant's name is stored as
//     (BoundedKey: 108 bytes, "…#", 16 hex digits): a producer allowed on
//     dlq.<that key>.> wrote into the longer tenant, unflagged, seen by
//     its people and replayed to its subjects;
//   - "unknown", the console's tenant of dead letters of no tenant, which
//     holds other tenants' unmapped give-ups with their payloads;
//   - a partial wildcard ("acme*"), which no role can name, so only those
//     with a role in every tenant saw its dead letters, unflagged.
//
// Each is now stored under "unknown", flagged invalid:tenant; the
// producer helper refuses them where they can be fixed.
func TestRev35TenantTokenThatIsAConsoleKeyIsNoTenant(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("tenant-of-a-saas-customer-", 8)
	key := BoundedKey(long, MaxTenantBytes)
	require.Len(t, key, MaxTenantBytes)
	require.Equal(t, key, ParseDLQ("dlq", Received{Subject: "dlq." + long + ".orders", Stream: "DLQ", Seq: 1}).Tenant,
		"the premise: the long tenant is stored as its key")

	for _, tok := range []string{key, UnknownTenant, "acme*", "ac>me"} {
		rec := ParseDLQ("dlq", Received{Subject: "dlq." + tok + ".orders", Stream: "DLQ", Seq: 2})
		assert.Equal(t, UnknownTenant, rec.Tenant, "token %q", tok)
		assert.True(t, slices.Contains(rec.Flags, "invalid:tenant"), "token %q is taken unflagged: %v", tok, rec.Flags)
	}
	ok := ParseDLQ("dlq", Received{Subject: "dlq.acme.orders", Stream: "DLQ", Seq: 3})
	assert.Equal(t, "acme", ok.Tenant)
	assert.False(t, slices.Contains(ok.Flags, "invalid:tenant"), "an ordinary tenant is taken as it is: %v", ok.Flags)

	orig := &nats.Msg{Subject: "app.acme.orders", Header: nats.Header{"Nats-Msg-Id": {"o-1"}}, Data: []byte(`{}`)}
	for _, tenant := range []string{key, UnknownTenant} {
		_, err := NewMessage("dlq", tenant, "orders", orig, Origin{}, Failure{Err: errors.New("refused")})
		assert.Error(t, err, "the producer helper takes tenant %q", tenant)
	}
}
