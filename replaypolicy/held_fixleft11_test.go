package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFixLeft11HeldFreedByNamesThePageActions: what frees a held dead
// letter is said by the actions the holding request's page offers for its
// status: a running or approved one is stopped (Emergency stop), not
// cancelled by whoever reads the advice; one waiting for approval is
// rejected or cancelled; one done with problems is settled.
func TestFixLeft11HeldFreedByNamesThePageActions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status      string
		has, hasNot []string
	}{
		{"running", []string{"wait for it to finish", "Emergency stop", "request 7"}, []string{"reject"}},
		{"approved", []string{"Emergency stop", "request 7"}, []string{"reject"}},
		{"pending_approval", []string{"rejects it", "Reject request", "Cancel replay", "request 7"}, []string{"stop"}},
		{"done_with_problems", []string{"other than its requester settles", "request 7"}, []string{"cancel", "stop"}},
		{"", []string{"request 7"}, []string{"cancel"}},
	} {
		t.Run(tc.status, func(t *testing.T) {
			t.Parallel()
			got := HeldFreedBy(7, tc.status, "acme")
			for _, s := range tc.has {
				assert.Contains(t, got, s)
			}
			for _, s := range tc.hasNot {
				assert.NotContains(t, got, s)
			}
			// The verdict on an item held by such a request says the same.
			v := heldElsewhere(Verdict{}, Item{Tenant: "acme", HeldBy: 7, HeldByStatus: tc.status})
			assert.Contains(t, v.Reason, got)
		})
	}
}
