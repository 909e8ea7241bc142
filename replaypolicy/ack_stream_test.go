package replaypolicy

import (
	"strings"
	"testing"
	"time"
)

// TestFirstAttemptAckCountsOnlyFromTheSubjectsStream: a first attempt's
// answer is the broker's word only when it names the stream that stores
// the subject (the window read for it); one naming another stream (an
// account subject mapping), or any stream for a subject no stream stores
// (a subscriber answering the reply inbox), or a Duplicate from another
// stream, goes to a person: the message went out on the subject, and its
// subscribers may have applied it.
func TestFirstAttemptAckCountsOnlyFromTheSubjectsStream(t *testing.T) {
	t.Parallel()
	ack := func(stream string, w Window, dup bool) Ack {
		return Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: stream, Seq: 7, Duplicate: dup, FirstAttempt: true, FirstAttemptAt: testNow, Window: w}
	}
	app := Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "limits", Storage: "file"}
	for _, tc := range []struct {
		name    string
		a       Ack
		outcome Outcome
		check   string
		reason  string
	}{
		{"Success", ack("APP", app, false), Replayed, "", "replayed: published to app.acme.x and stored as APP:7"},
		{"AnotherStream", ack("OTHER", app, false), Reconcile, CheckAckUnproven, "names OTHER:7, but stream APP stores app.acme.x, and the publish was sent expecting it"},
		{"NoStream", ack("EVENTS", Window{}, false), Reconcile, CheckAckUnproven, "names EVENTS:7, but no stream stores app.acme.x"},
		{"StreamUnread", ack("APP", Window{Unreadable: "nats: timeout"}, false), Reconcile, CheckAckUnproven, "could not be read (nats: timeout)"},
		{"DuplicateFromAnotherStream", ack("OTHER", app, true), Reconcile, CheckAckUnproven, "may have applied it"},
		{"StoredUnderAnotherSubject", func() Ack { a := ack("APP", app, false); a.StoredUnder = "app.acme.y"; return a }(), Reconcile, CheckAckUnproven,
			`under subject "app.acme.y", not "app.acme.x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := JudgeAck(tc.a, testNow)
			if v.Outcome != tc.outcome || v.Check != tc.check || !strings.Contains(v.Reason, tc.reason) {
				t.Fatalf("JudgeAck = %v %q %q, want %v %q containing %q", v.Outcome, v.Check, v.Reason, tc.outcome, tc.check, tc.reason)
			}
		})
	}
}
