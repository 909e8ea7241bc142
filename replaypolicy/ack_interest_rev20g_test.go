package replaypolicy

import (
	"strings"
	"testing"
	"time"
)

// TestFirstAttemptAckFromInterestStreamWithoutInterest: a first attempt
// answered with an ordinary PubAck by an interest stream none of whose
// consumers takes the subject (its window read after the answer, as for a
// stream made since the claim's list was read) was stored nowhere: it ends
// blocked by the check JudgeWindow blocks such a publish by before it goes,
// saying so in the same words, its dead letter let go. A consumer that
// takes the subject makes it replayed; a retry keeps its handling (a
// person decides), and a Duplicate is judged as one.
func TestFirstAttemptAckFromInterestStreamWithoutInterest(t *testing.T) {
	t.Parallel()
	const why = "stream APP keeps a message only for its consumers (interest retention), and none of them takes app.acme.x"
	interest := Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "interest", Storage: "file", NoInterest: why}
	taken := interest
	taken.NoInterest = ""
	ack := func(first, dup bool, w Window) Ack {
		a := Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 7, Duplicate: dup, FirstAttempt: first, FirstAttemptAt: testNow, Window: w,
			Kept: Kept{StoredAt: testNow.Add(-time.Minute)}}
		if !first {
			a.FirstAttemptAt = testNow.Add(-10 * time.Second)
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
		{"Blocked", ack(true, false, interest), Fail, CheckNoInterest, `message id "m-1" was not stored: ` + why +
			", so the broker acknowledged the replay (APP:7) and dropped it, keeping its message id for the stream's duplicate window (2m0s): " +
			"a replay inside it is dropped as a duplicate and deferred. Replay it again once a consumer takes the subject"},
		{"Replayed", ack(true, false, taken), Replayed, "", "replayed: published to app.acme.x and stored as APP:7"},
		{"RetryReconciles", ack(false, false, interest), Reconcile, CheckMaybePublished, "removes messages its consumers took (interest retention)"},
		{"DuplicateDeferred", ack(true, true, interest), Defer, CheckDuplicateKept, "a message stored at 2026-03-04 11:59:00 UTC that is not this replay's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := JudgeAck(tc.a, testNow)
			if v.Outcome != tc.outcome || v.Check != tc.check || !strings.Contains(v.Reason, tc.reason) {
				t.Fatalf("JudgeAck = %v %q %q, want %v %q containing %q", v.Outcome, v.Check, v.Reason, tc.outcome, tc.check, tc.reason)
			}
		})
	}

	// JudgeWindow says it in the same words, before the publish.
	v := JudgeWindow(Attempt{MsgID: "m-1", Window: interest}, testNow)
	if want := `message id "m-1" was not published: ` + why + ", so the broker would acknowledge the replay and drop it. Replay it again once a consumer takes the subject"; v.Outcome != Fail || v.Check != CheckNoInterest || v.Reason != want {
		t.Fatalf("JudgeWindow = %v %q %q, want %v %q %q", v.Outcome, v.Check, v.Reason, Fail, CheckNoInterest, want)
	}
}
