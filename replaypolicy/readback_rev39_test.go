package replaypolicy

import (
	"strings"
	"testing"
	"time"
)

// TestRev39PublishWhoseSubjectCouldNotBeReadBackNeedsAPerson: a publish
// the stream that takes the subject stored as new, but whose message
// could not be read back for the subject it was stored under (gone, or
// unreadable, and no other of the subject in the claim read in its
// place), is no proof that it reached the subject's consumers: a person
// decides, told that a retry's earlier publish may have landed too. One
// read back on its subject is replayed.
func TestRev39PublishWhoseSubjectCouldNotBeReadBackNeedsAPerson(t *testing.T) {
	t.Parallel()
	app := Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "workqueue", Storage: "file"}
	ack := func(first bool, unread string) Ack {
		a := Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 7, FirstAttempt: first, FirstAttemptAt: testNow, Window: app, UnreadBack: unread}
		if !first {
			a.FirstAttemptAt = testNow.Add(-time.Second)
		}
		return a
	}
	for _, tc := range []struct {
		name    string
		a       Ack
		outcome Outcome
		check   string
		reason  string
	}{
		{"ReadBackOnTheSubject", ack(true, ""), Replayed, "", "replayed: published to app.acme.x and stored as APP:7"},
		{"FirstAttemptGone", ack(true, "stream APP holds no message at 7 now"), Reconcile, CheckAckUnproven,
			"could not be read back for the subject it was stored under (stream APP holds no message at 7 now)"},
		{"RetryGone", ack(false, "stream APP holds no message at 7 now"), Reconcile, CheckAckUnproven, "This was a retry: an earlier publish of"},
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
