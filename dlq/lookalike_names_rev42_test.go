package dlq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev42LookalikeHeaderNamesAreNotTheContract: a contract header sent
// under another ASCII case is read, flagged; a name that only Unicode
// folding makes one (İ for i, the Kelvin sign for k, ſ for s) is no
// contract client's and is stored as the ordinary header it is: it
// fills no field and is flagged as no spelling of one.
func TestRev42LookalikeHeaderNamesAreNotTheContract(t *testing.T) {
	t.Parallel()
	sent := map[string][]string{
		"Dlq-Pr\u0130ncipal":        {"root"},
		"Dlq-Or\u0130ginal-Subject": {"orders.refund"},
		"Dlq-Stac\u212a":            {"forged.frame()"},
		"Dlq-Error-Cla\u017fs":      {"transient"},
		HeaderErrorClass:            {"permanent"},
	}
	r := ParseDLQ("dlq", received("dlq.acme.orders.refund", sent, `{}`))
	assert.Empty(t, r.Principal)
	assert.Empty(t, r.OriginalSubject)
	assert.Empty(t, r.Stack)
	assert.Equal(t, ClassPermanent, r.ErrorClass, "the long s spelling is no class the producer sent")
	for _, f := range r.Flags {
		assert.NotContains(t, f, "header_name_case:")
	}
	back, err := DecodeHeaders(r.Headers)
	require.NoError(t, err)
	assert.Equal(t, sent, back, "every header is stored as it was sent")

	// An ASCII case of the same names is read, as before.
	r = ParseDLQ("dlq", received("dlq.acme.orders.refund", map[string][]string{"dlq-principal": {"user:7"}, "DLQ-STACK": {"main.f()"}}, `{}`))
	assert.Equal(t, "user:7", r.Principal)
	assert.Equal(t, "main.f()", r.Stack)
	assert.Contains(t, r.Flags, "header_name_case:principal")
}
