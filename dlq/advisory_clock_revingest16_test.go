package dlq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevIngest16AdvisoryCapturedByAResetClockKeepsItsOriginal: the
// advisory stream's leader, its clock reset (to 2001, to 1970: an RTC's
// reset value, counted on from there), stores every give-up at a time
// checkStoredAt finds implausible. The original, stored by its own
// stream's leader at a normal time minutes before, is the message the
// advisory names; compared with the implausible stored time it looked
// stored after the advisory (a stream made again) and every dead letter
// lost its original: tenant unknown, no payload, original_replaced. It
// is kept: tenant, payload, its message id (and a derived id names the
// original's stored time, as for any advisory whose original is taken).
func TestRevIngest16AdvisoryCapturedByAResetClockKeepsItsOriginal(t *testing.T) {
	t.Parallel()
	ws, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	now := time.Now()
	origStored := now.Add(-2 * time.Minute).UTC()
	for _, tc := range []struct {
		name     string
		captured time.Time
		msgID    string
		wantID   string
	}{
		{"ResetTo2001", time.Date(2001, 1, 3, 5, 0, 0, 0, time.UTC), "refund-1", "refund-1"},
		{"ResetTo1970", time.Unix(0, 0).UTC(), "refund-1", "refund-1"},
		{"ResetTo2001/DerivedID", time.Date(2001, 1, 3, 5, 0, 0, 0, time.UTC), "", DerivedMsgID("ORDERS", 9, origStored)},
		{"FarAhead", now.Add(500 * 24 * time.Hour), "refund-1", "refund-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			adv := Advisory{Type: "io.nats.jetstream.advisory.v1.max_deliver", Timestamp: now, Stream: "ORDERS", Consumer: "refunder", StreamSeq: 9, Deliveries: 5}
			via := Received{Subject: AdvisoryMaxDeliveries + ".ORDERS.refunder", Stream: "DLQ_ADVISORIES", Seq: 3, Time: tc.captured}
			h := map[string][]string{}
			if tc.msgID != "" {
				h[HeaderNatsMsgID] = []string{tc.msgID}
			}
			orig := &Original{Subject: "app.acme.orders.refund", Header: h, Data: []byte("POISON refund 1"), Time: origStored}
			r := ParseAdvisory(ws[0], adv, orig, []byte(`{}`), via)
			assert.NotContains(t, r.Flags, "original_replaced", "the original stored minutes before the console received the advisory")
			assert.Equal(t, "acme", r.Tenant)
			assert.Equal(t, "orders.refund", r.ItemType)
			assert.False(t, r.PayloadUnavailable)
			assert.Equal(t, []byte("POISON refund 1"), r.Payload)
			assert.Equal(t, "app.acme.orders.refund", r.OriginalSubject)
			assert.Equal(t, tc.wantID, r.MsgID)
			assert.Equal(t, tc.msgID == "", r.MsgIDDerived)
			assert.Equal(t, ClassMaxDeliveries, r.ErrorClass)
			assert.Contains(t, r.Flags, "implausible:dead_lettered_at")
			assert.Equal(t, Day(now), r.DeadLetteredAt, "kept under the day it arrived (checkStoredAt)")
		})
	}
}
