package replaypolicy

import (
	"strings"
	"testing"
	"time"
)

// TestRev44bRetryStoredAsNewAfterItsStreamLostAMessage (review round
// 44b): a restarted broker rebuilds its duplicate window from the
// messages its streams still hold, so a retry stored as new says nothing
// of its first attempt when the stream no longer holds a message stored
// since that attempt was sent (FirstSentTo.NextSeq) and before the retry:
// the first attempt may have been it, and a person decides. A retry
// stored at the very sequence the first attempt would have taken, or
// with every message between still held (whatever went before), is
// replayed; so is one with nothing recorded of the stream's sequences
// (a job from before), or judged without a read (NeedsRemoved).
func TestRev44bRetryStoredAsNewAfterItsStreamLostAMessage(t *testing.T) {
	t.Parallel()
	first := testNow.Add(-time.Minute)
	created := first.Add(-time.Hour)
	retry := func(next, seq uint64, r Removed) Ack {
		return Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: seq, FirstAttemptAt: first, FirstPublishedAt: first,
			FirstSentTo: SentTo{Stream: "APP", Created: created, Duplicates: 2 * time.Minute, NextSeq: next},
			Window:      Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "limits", Storage: "file", Created: created},
			Margin:      time.Second, Removed: r}
	}
	for _, tc := range []struct {
		name    string
		ack     Ack
		needs   bool
		outcome Outcome
		reason  string
	}{
		{"FirstSequencesGone", retry(5, 6, Removed{FirstSeq: 6}), true, Reconcile,
			"stream APP no longer holds 1 of the messages it stored between that publish and this one (APP:5 to APP:5)"},
		{"DeletedBetween", retry(5, 9, Removed{FirstSeq: 1, Deleted: []uint64{6, 7}}), true, Reconcile,
			"no longer holds 2 of the messages it stored between that publish and this one (APP:5 to APP:8)"},
		{"SequencesWentBack", retry(5, 3, Removed{}), false, Reconcile, "it lost its messages from APP:3 on"},
		{"StreamUnread", retry(5, 9, Removed{Unread: "nats: timeout"}), true, Reconcile, "could not be read (nats: timeout)"},
		{"AtTheFirstAttemptsSequence", retry(5, 5, Removed{}), false, Replayed, "replayed: published to app.acme.x and stored as APP:5"},
		{"EveryMessageBetweenHeld", retry(5, 9, Removed{FirstSeq: 1}), true, Replayed, "stored as APP:9"},
		{"OnlyMessagesBeforeItGone", retry(5, 9, Removed{FirstSeq: 3, Deleted: []uint64{4}}), true, Replayed, "stored as APP:9"},
		{"NothingRecorded", retry(0, 9, Removed{}), false, Replayed, "stored as APP:9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ack.NeedsRemoved(); got != tc.needs {
				t.Errorf("NeedsRemoved = %v, want %v", got, tc.needs)
			}
			v := JudgeAck(tc.ack, testNow)
			wantCheck := ""
			if tc.outcome == Reconcile {
				wantCheck = CheckMaybePublished
			}
			if v.Outcome != tc.outcome || v.Check != wantCheck || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict = %s by %q: %q; want %s by %q containing %q", v.Outcome, v.Check, v.Reason, tc.outcome, wantCheck, tc.reason)
			}
			if tc.outcome == Reconcile && !strings.Contains(v.Reason, "Check the target") {
				t.Errorf("reason %q says nothing of what to do", v.Reason)
			}
		})
	}
	// A retry dropped as a duplicate, a first attempt, or a retry answered
	// by another stream than its first attempt was sent to: never read.
	for name, a := range map[string]Ack{
		"Duplicate":     func() Ack { a := retry(5, 9, Removed{}); a.Duplicate = true; return a }(),
		"FirstAttempt":  func() Ack { a := retry(5, 9, Removed{}); a.FirstAttempt = true; return a }(),
		"AnotherStream": func() Ack { a := retry(5, 9, Removed{}); a.FirstSentTo.Stream = "OLD"; return a }(),
	} {
		if a.NeedsRemoved() {
			t.Errorf("%s: NeedsRemoved", name)
		}
	}
}
