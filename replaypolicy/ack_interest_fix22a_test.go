package replaypolicy

import (
	"strings"
	"testing"
	"time"
)

// TestFirstAttemptAckFromInterestStreamUnseen: a first attempt an interest
// stream acknowledged as new while the claim's window named a consumer of
// the subject, the stream not showing it at the PubAck's sequence
// (Ack.Unseen), is judged by the window read after the answer: none of
// the consumers takes the subject now, and the stream dropped it (blocked,
// no-interest); one does, and it took the message (replayed, saying so);
// the consumers could not be read, and a person decides (never replayed
// on a guess). A publish the stream shows stays replayed as before. A
// first attempt acknowledged as new by a stream that could not be read
// again (Ack.StreamUnread: it may have turned to interest retention since
// the claim's list was read) needs a person as well.
func TestFirstAttemptAckFromInterestStreamUnseen(t *testing.T) {
	t.Parallel()
	const unseen = "stream APP holds no message at 7 now"
	taken := Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "interest", Storage: "file"}
	gone := taken
	gone.NoInterest = "stream APP keeps a message only for its consumers (interest retention), and none of them takes app.acme.x"
	unread := taken
	unread.Unreadable = `which stream stores "app.acme.x" now: nats: timeout`
	ack := func(w Window, unseen string) Ack {
		return Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 7, FirstAttempt: true, FirstAttemptAt: testNow, Window: w, Unseen: unseen}
	}
	for _, tc := range []struct {
		name    string
		a       Ack
		outcome Outcome
		check   string
		reason  string
	}{
		{"Dropped", ack(gone, unseen), Fail, CheckNoInterest, `message id "m-1" was not stored: ` + gone.NoInterest + ", so the broker acknowledged the replay (APP:7) and dropped it"},
		{"Consumed", ack(taken, unseen), Replayed, "", "replayed: published to app.acme.x and stored as APP:7; " + unseen +
			", and a consumer of the stream takes the subject: it took the message"},
		{"ConsumersUnread", ack(unread, unseen), Reconcile, CheckWindowUnread, `stream APP acknowledged the publish of message id "m-1" as APP:7, but ` + unseen +
			", and whether a consumer of the stream takes app.acme.x could not be read (" + unread.Unreadable + "): a consumer took it, or the stream stored nothing"},
		{"Shown", ack(taken, ""), Replayed, "", "replayed: published to app.acme.x and stored as APP:7"},
		{"StreamUnread", func() Ack {
			a := ack(Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "limits", Storage: "file"}, "")
			a.StreamUnread = "nats: timeout"
			return a
		}(), Reconcile, CheckWindowUnread, `stream APP acknowledged the publish of message id "m-1" as APP:7, but the stream could not be read again to tell whether it stored it (nats: timeout)`},
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
