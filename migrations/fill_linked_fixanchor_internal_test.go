package migrations

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixAnchorLinkedByIsBounded: a re-keying's audit entry lists the
// mailboxes that now link identities they did not, the first
// maxLinkedListed in mailbox order with at most maxHoldersListed names on
// each side, and counts them all; a mailbox an identity joined alone, or
// one whose holders were all there before (an address there newly
// verified), links no one new and is neither listed nor counted. Even at
// its bounds, with ids of a usual length, the entry stays under the 32 KiB
// past which the log keeps only its digest.
func TestFixAnchorLinkedByIsBounded(t *testing.T) {
	t.Parallel()
	const iss = "https://accounts.google.com"
	before, after := holders{}, holders{}
	for m := range maxLinkedListed + 2 {
		box := fmt.Sprintf("box%02d@example.com", m)
		for i := range maxHoldersListed + 5 {
			h := holder{Issuer: iss, Subject: fmt.Sprintf("%030d", 100*m+i), Verified: i%2 == 0}
			before[box] = append(before[box], h)
			after[box] = append(after[box], h)
			after[box] = append(after[box], holder{Issuer: iss, Subject: fmt.Sprintf("%030d", 10000+100*m+i), Verified: true})
		}
	}
	after["alone@example.com"] = []holder{{Issuer: iss, Subject: "alone", Verified: true}}
	before["reverified@example.com"] = []holder{{Issuer: iss, Subject: "a"}, {Issuer: iss, Subject: "b"}}
	after["reverified@example.com"] = []holder{{Issuer: iss, Subject: "a", Verified: true}, {Issuer: iss, Subject: "b"}}

	n, listed := linkedBy(before, after)
	assert.Equal(t, maxLinkedListed+2, n, "every mailbox that links someone new is counted")
	require.Len(t, listed, maxLinkedListed)
	assert.Equal(t, "box00@example.com", listed[0].Mailbox)
	for _, l := range listed {
		assert.Len(t, l.Joined, maxHoldersListed)
		assert.Len(t, l.Already, maxHoldersListed)
		assert.Equal(t, 2*(maxHoldersListed+5), l.Count)
	}
	assert.Contains(t, listed[0].Already, iss+"|"+fmt.Sprintf("%030d", 1)+" (unverified)")
	b, err := json.Marshal(map[string]any{"addresses": 1000, "mailboxes_linking": n, "linked": listed})
	require.NoError(t, err)
	assert.Less(t, len(b), 32<<10)

	n, listed = linkedBy(holders{}, holders{})
	assert.Zero(t, n)
	assert.NotNil(t, listed, "an empty list, not null")
}
