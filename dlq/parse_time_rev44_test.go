package dlq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRev44FailureTimesInEveryRFC3339Spelling: RFC 3339 allows a
// lowercase t and z, a space for the T, and a leap second; Go's parser
// refuses them, and such failure times were stored as none and flagged
// "not an RFC 3339 time" (review round 44). They are read; what is not a
// time is still flagged.
func TestRev44FailureTimesInEveryRFC3339Spelling(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Time
	}{
		{"2026-11-29T09:00:00Z", at},
		{"2026-11-29t09:00:00z", at},
		{"2026-11-29 09:00:00Z", at},
		{"2026-11-29 10:00:00.5+01:00", at.Add(500 * time.Millisecond)},
		{"2026-11-29T08:59:60Z", at},
		{"2026-11-29T08:59:60.25Z", at.Add(250 * time.Millisecond)},
	} {
		t.Run(tc.value, func(t *testing.T) {
			r := ParseDLQ("dlq", Received{Subject: "dlq.acme.email.send", Data: []byte("{}"), Header: map[string][]string{
				HeaderNatsMsgID: {"m-1"}, HeaderFirstFailedAt: {tc.value}, HeaderLastFailedAt: {tc.value}}})
			require.NotNil(t, r.FirstFailedAt, "flags %v", r.Flags)
			require.NotNil(t, r.LastFailedAt, "flags %v", r.Flags)
			assert.True(t, tc.want.Equal(*r.FirstFailedAt), "read as %s", r.FirstFailedAt)
			assert.True(t, tc.want.Equal(*r.LastFailedAt), "read as %s", r.LastFailedAt)
			assert.NotContains(t, r.Flags, "invalid:first_failed_at")
		})
	}
	for _, bad := range []string{"2026-11-29", "2026-11-29x09:00:00Z", "2026-11-29T09:00:61Z", "yesterday", "2026-11-29T09:00:00"} {
		r := ParseDLQ("dlq", Received{Subject: "dlq.acme.email.send", Data: []byte("{}"), Header: map[string][]string{
			HeaderNatsMsgID: {"m-1"}, HeaderFirstFailedAt: {bad}}})
		assert.Nil(t, r.FirstFailedAt, bad)
		assert.Contains(t, r.Flags, "invalid:first_failed_at", bad)
	}
}
