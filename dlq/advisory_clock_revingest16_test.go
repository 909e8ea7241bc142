package dlq

import (
	"strings"
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

// TestFixIngest16ImplausibleAdvisoryClockStillRefusesALaterOriginal: an
// advisory stored at an implausible time (a reset clock, or one far
// ahead) has the original judged against when the console received it:
// one stored after that (more than OriginalClockAllowance) is another
// message at the sequence of a stream made again, refused and flagged
// original_replaced as before, its derived id naming the advisory's
// stored time as the server gave it (a redelivery derives the same); one
// stored within the allowance is taken. A clock far ahead used to take
// any original at all, however much later stored.
func TestFixIngest16ImplausibleAdvisoryClockStillRefusesALaterOriginal(t *testing.T) {
	t.Parallel()
	ws, err := ParseWatchStreams("ORDERS")
	require.NoError(t, err)
	for _, captured := range []struct {
		name string
		at   time.Time
	}{
		{"ResetTo2001", time.Date(2001, 1, 3, 5, 0, 0, 0, time.UTC)},
		{"FarAhead", time.Now().Add(500 * 24 * time.Hour).UTC()},
	} {
		for _, tc := range []struct {
			name     string
			stored   time.Duration // after the console received the advisory
			replaced bool
		}{
			{"StoredAfterReceipt", OriginalClockAllowance + time.Minute, true},
			{"WithinClockAllowance", OriginalClockAllowance / 2, false},
		} {
			t.Run(captured.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				// Received now: taken here, not before the parallel
				// subtests wait for the package's others (minutes).
				now := time.Now()
				adv := Advisory{Type: "io.nats.jetstream.advisory.v1.terminated", Timestamp: now, Stream: "ORDERS", Consumer: "c1", StreamSeq: 9, Deliveries: 1}
				via := Received{Subject: AdvisoryTerminated + ".ORDERS.c1", Stream: "DLQ_ADVISORIES", Seq: 3, Time: captured.at}
				orig := &Original{Subject: "app.globex.orders.pay", Header: map[string][]string{HeaderNatsMsgID: {"pay-9"}}, Data: []byte("innocent"), Time: now.Add(tc.stored)}
				r := ParseAdvisory(ws[0], adv, orig, []byte(`{}`), via)
				assert.Contains(t, r.Flags, "implausible:dead_lettered_at")
				if !tc.replaced {
					assert.NotContains(t, r.Flags, "original_replaced")
					assert.Equal(t, "globex", r.Tenant)
					assert.Equal(t, "pay-9", r.MsgID)
					return
				}
				assert.Contains(t, r.Flags, "original_replaced")
				assert.Contains(t, strings.Join(r.MalformedReasons, "\n"), "after the console received this advisory (its stored time "+captured.at.Format(time.RFC3339Nano)+" is implausible)")
				assert.True(t, r.PayloadUnavailable)
				assert.Empty(t, r.Payload)
				assert.Empty(t, r.Headers)
				assert.Equal(t, "unknown", r.Tenant)
				assert.Empty(t, r.OriginalSubject)
				assert.Equal(t, DerivedMsgID("ORDERS", 9, captured.at), r.MsgID, "derived from the advisory's stored time, as the server gave it")
				assert.True(t, r.MsgIDDerived)
				assert.Equal(t, Day(now), r.DeadLetteredAt)
			})
		}
	}
}
