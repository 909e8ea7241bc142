package dlq

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixIngest8DerivedIDSameInEveryForm: the raw and the position form of
// a record derive their message id from the time the parsed form's was
// derived from: an advisory's original's stored time, not the advisory's.
func TestFixIngest8DerivedIDSameInEveryForm(t *testing.T) {
	t.Parallel()
	capturedAt := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	storedAt := capturedAt.Add(-time.Minute)
	w := WatchStream{Name: "ORDERS", Template: []string{"*", "{tenant}", "{item_type}"}}
	adv := Advisory{Type: "io.nats.jetstream.advisory.v1.terminated", Timestamp: capturedAt, Stream: "ORDERS", Consumer: "c1", StreamSeq: 7, Deliveries: 2}
	via := Received{Subject: AdvisoryTerminated + ".ORDERS.c1", Stream: "DLQ_ADVISORIES", Seq: 3, Time: capturedAt}
	for _, tc := range []struct {
		name string
		orig *Original
		want string
	}{
		{"OriginalTaken", &Original{Subject: "app.acme.orders.refund", Data: []byte("x"), Time: storedAt}, DerivedMsgID("ORDERS", 7, storedAt)},
		{"OriginalGone", nil, DerivedMsgID("ORDERS", 7, capturedAt)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ParseAdvisory(w, adv, tc.orig, []byte("{}"), via)
			require.True(t, r.MsgIDDerived)
			require.Equal(t, tc.want, r.MsgID)
			cause := errors.New("refused")
			assert.Equal(t, tc.want, RawForm(r, cause).MsgID)
			assert.Equal(t, tc.want, contentRefusedForm(r, cause, "on its delivery 5", "DLQ_ADVISORIES", 3).MsgID)
		})
	}
}
