package replaypolicy

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRetryReliesOnTheWindowThatSawTheFirstAttempt: a retry after an
// unknown outcome relies on the target stream's duplicate window having
// held its first publish. Before it is sent (JudgeWindow), and after the
// broker stored it as a new message (JudgeAck), a window of a stream
// created since that publish (or too close to it to tell by the clocks),
// one that no longer covers it, or another stream than the one that
// stored the retry means a person decides; so does a retry the broker
// dropped for a message not shown to be its own, in a stream created
// since (the earlier publish went to the stream before). A first attempt
// relies on no earlier publish, and a window that does not say when its
// stream was created is taken to be the stream that was there.
func TestRetryReliesOnTheWindowThatSawTheFirstAttempt(t *testing.T) {
	t.Parallel()
	first := testNow.Add(-time.Minute)
	app := func(created time.Time) Window {
		return Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "limits", Storage: "file", Created: created}
	}
	retry := func(w Window) Attempt {
		return Attempt{MsgID: "m-1", FirstAttemptAt: first, Window: w, Margin: time.Second}
	}
	stored := func(w Window, firstAttempt bool) Ack {
		return Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 7, FirstAttempt: firstAttempt, FirstAttemptAt: first,
			FirstPublishedAt: first, Window: w, Margin: time.Second}
	}
	dropped := func(w Window, k Kept) Ack {
		a := stored(w, false)
		a.Duplicate, a.Kept, a.ApprovedSHA256 = true, k, "abcd"
		return a
	}
	for _, tc := range []struct {
		name    string
		verdict Verdict
		outcome Outcome
		check   string
		reason  string
	}{
		{"RetryIntoTheStreamThatWasThere", JudgeWindow(retry(app(first.Add(-time.Hour))), testNow), Go, "", ""},
		{"RetryWhenCreationIsNotKnown", JudgeWindow(retry(app(time.Time{})), testNow), Go, "", ""},
		{"RetryIntoAStreamMadeAgain", JudgeWindow(retry(app(first.Add(10*time.Second))), testNow), Reconcile, CheckPastWindow,
			"stream APP was created at 2026-03-04 11:59:10 UTC, after the first publish of 2026-03-04 11:59:00 UTC"},
		{"RetryIntoAStreamCreatedWithinTheMargin", JudgeWindow(retry(app(first.Add(-500*time.Millisecond))), testNow), Reconcile, CheckPastWindow,
			"or too close to it to tell by the clocks"},
		{"RetryPastTheWindowLastReadWhileUnreadable", JudgeWindow(retry(Window{Stream: "APP", Duplicates: 30 * time.Second, Unreadable: "nats: timeout"}), testNow),
			Reconcile, CheckPastWindow, "(30s, as last read; it could not be read again: nats: timeout) no longer covers it"},
		{"RetryInsideTheWindowLastReadWhileUnreadable", JudgeWindow(retry(Window{Stream: "APP", Duplicates: 2 * time.Minute, Unreadable: "nats: timeout"}), testNow),
			Wait, CheckWindowUnread, "could not read the duplicate window"},
		{"RetryStoredInTheStreamThatWasThere", JudgeAck(stored(app(first.Add(-time.Hour)), false), testNow), Replayed, "", "replayed: published to app.acme.x"},
		{"RetryStoredInAStreamMadeAgain", JudgeAck(stored(app(first.Add(10*time.Second)), false), testNow), Reconcile, CheckMaybePublished,
			"was published again and stored as APP:7"},
		{"RetryStoredAfterTheWindowWasShortened", JudgeAck(stored(Window{Stream: "APP", Duplicates: time.Second, Created: first.Add(-time.Hour)}, false), testNow),
			Reconcile, CheckMaybePublished, "duplicate window (1s) no longer covers"},
		{"RetryStoredInAnotherStream", JudgeAck(stored(Window{Stream: "APP2", Duplicates: 2 * time.Minute, Created: first.Add(-time.Hour)}, false), testNow),
			Reconcile, CheckMaybePublished, `taken by stream "APP2" now, not by APP`},
		{"RetryStoredWithTheStreamUnread", JudgeAck(stored(Window{Unreadable: "nats: timeout"}, false), testNow), Reconcile, CheckMaybePublished,
			"could not be read again"},
		{"RetryStoredInAVolatileStream", JudgeAck(stored(Window{Stream: "APP", Duplicates: 2 * time.Minute, Storage: "memory"}, false), testNow),
			Reconcile, CheckMaybePublished, "keeps its messages in memory"},
		{"RetryDroppedForAnotherInAStreamMadeAgain", JudgeAck(dropped(app(first.Add(10*time.Second)), Kept{StoredAt: first.Add(20 * time.Second), PayloadSHA256: "ffff"}), testNow),
			Reconcile, CheckMaybePublished, "as a duplicate of APP:7, which is not shown to be this replay's"},
		{"RetryDroppedForAnUnreadableInAStreamMadeAgain", JudgeAck(dropped(app(first.Add(10*time.Second)), Kept{Unreadable: "no message"}), testNow),
			Reconcile, CheckMaybePublished, "its duplicate window never saw that publish"},
		{"RetryDroppedForAnotherInTheStreamThatWasThere", JudgeAck(dropped(app(first.Add(-time.Hour)), Kept{StoredAt: first.Add(20 * time.Second), PayloadSHA256: "ffff"}), testNow),
			Defer, CheckDuplicateKept, "that is not this replay's"},
		{"RetryDroppedForItsOwnInAStreamMadeAgain", JudgeAck(dropped(app(first.Add(-500*time.Millisecond)), Kept{Tagged: true, StoredAt: first.Add(time.Second), PayloadSHA256: "abcd", Subject: "app.acme.x", StoresAs: "app.acme.x"}), testNow),
			Replayed, CheckOwnDuplicate, "this replay's own earlier publish"},
		{"FirstAttemptStoredInANewStream", JudgeAck(stored(app(testNow.Add(-time.Second)), true), testNow), Replayed, "", "replayed: published to app.acme.x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.verdict
			if v.Outcome != tc.outcome || v.Check != tc.check || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict = %s by %q: %q; want %s by %q containing %q", v.Outcome, v.Check, v.Reason, tc.outcome, tc.check, tc.reason)
			}
		})
	}
}

// TestRetryReliesOnTheStreamItWasSentTo: when the stream the first attempt
// was sent to is known (SentTo), a retry goes to that very stream, by its
// name and creation time and by no clock: one created within the margin
// of the first publish, or after it by a broker clock ahead of the
// database's, is the one; one of the name made again at another time, or
// another stream, is not, even when the clocks would say it was there
// before.
func TestRetryReliesOnTheStreamItWasSentTo(t *testing.T) {
	t.Parallel()
	first := testNow.Add(-time.Minute)
	app := func(created time.Time) Window {
		return Window{Stream: "APP", Duplicates: 2 * time.Minute, Retention: "limits", Storage: "file", Created: created}
	}
	sent := func(created time.Time) SentTo { return SentTo{Stream: "APP", Created: created} }
	retry := func(w Window, s SentTo) Attempt {
		return Attempt{MsgID: "m-1", FirstAttemptAt: first, FirstSentTo: s, Window: w, Margin: time.Second}
	}
	stored := func(w Window, s SentTo) Ack {
		return Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 7, FirstAttemptAt: first, FirstSentTo: s,
			FirstPublishedAt: first, Window: w, Margin: time.Second}
	}
	dropped := func(w Window, s SentTo) Ack {
		a := stored(w, s)
		a.Duplicate, a.Kept, a.ApprovedSHA256 = true, Kept{StoredAt: first.Add(20 * time.Second), PayloadSHA256: "ffff"}, "abcd"
		return a
	}
	now, within, ahead, before := first, first.Add(-500*time.Millisecond), first.Add(10*time.Second), first.Add(-time.Hour)
	for _, tc := range []struct {
		name    string
		verdict Verdict
		outcome Outcome
		check   string
		reason  string
	}{
		{"RetryIntoTheStreamCreatedAsItWasSent", JudgeWindow(retry(app(now), sent(now)), testNow), Go, "", ""},
		{"RetryIntoTheStreamCreatedWithinTheMargin", JudgeWindow(retry(app(within), sent(within)), testNow), Go, "", ""},
		{"RetryIntoTheStreamCreatedAsStoredToTheMicrosecond", JudgeWindow(retry(app(now.Add(789)), sent(now)), testNow), Go, "", ""},
		{"RetryIntoAStreamMadeAgainAMicrosecondLater", JudgeWindow(retry(app(now.Add(time.Microsecond)), sent(now)), testNow), Reconcile, CheckPastWindow,
			"is not the stream the first publish"},
		{"RetryIntoTheStreamCreatedAfterByTheBrokersClock", JudgeWindow(retry(app(ahead), sent(ahead)), testNow), Go, "", ""},
		{"RetryIntoAStreamMadeAgainSinceItWasSent", JudgeWindow(retry(app(before.Add(time.Minute)), sent(before)), testNow), Reconcile, CheckPastWindow,
			"stream APP (created at 2026-03-04 11:00:00 UTC) is not the stream the first publish of 2026-03-04 11:59:00 UTC was sent to (APP, created at 2026-03-04 10:59:00 UTC"},
		{"RetryIntoAnotherStreamThanItWasSentTo", JudgeWindow(retry(app(before), SentTo{Stream: "OLD", Created: before}), testNow), Reconcile, CheckPastWindow,
			"its duplicate window never saw that publish"},
		{"RetryPastTheWindowOfTheStreamItWasSentTo", JudgeWindow(retry(Window{Stream: "APP", Duplicates: 30 * time.Second, Created: now}, sent(now)), testNow),
			Reconcile, CheckPastWindow, "no longer covers it"},
		{"RetryStoredInTheStreamCreatedWithinTheMargin", JudgeAck(stored(app(within), sent(within)), testNow), Replayed, "", "replayed: published to app.acme.x"},
		{"RetryStoredInAStreamMadeAgainSinceItWasSent", JudgeAck(stored(app(before.Add(time.Minute)), sent(before)), testNow), Reconcile, CheckMaybePublished,
			"is not the stream the first publish"},
		{"RetryDroppedForAnotherInTheStreamCreatedWithinTheMargin", JudgeAck(dropped(app(within), sent(within)), testNow), Defer, CheckDuplicateKept,
			"that is not this replay's"},
		{"RetryDroppedForAnotherInAStreamMadeAgainSinceItWasSent", JudgeAck(dropped(app(before.Add(time.Minute)), sent(before)), testNow), Reconcile, CheckMaybePublished,
			"is not the stream the first publish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.verdict
			if v.Outcome != tc.outcome || v.Check != tc.check || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict = %s by %q: %q; want %s by %q containing %q", v.Outcome, v.Check, v.Reason, tc.outcome, tc.check, tc.reason)
			}
		})
	}
}

// TestRetryCoveredByTheShorterWindow (review 19f): the broker forgets an
// id by the window in force as it goes, and a window raised since a first
// attempt does not bring back an id forgotten under the shorter one. A
// retry is covered by the shorter of the window the first attempt was
// judged by and the window read now; a lowered window is the one read now.
func TestRetryCoveredByTheShorterWindow(t *testing.T) {
	first := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	created := first.Add(-time.Hour)
	sent := SentTo{Stream: "APP", Created: created, Duplicates: 2 * time.Minute}
	raised := Window{Stream: "APP", Created: created, Duplicates: time.Hour, Retention: "limits", Storage: "file"}
	at := func() Attempt {
		return Attempt{MsgID: "m-1", FirstAttemptAt: first, FirstSentTo: sent, Window: raised, Margin: time.Second}
	}
	assert.Equal(t, 2*time.Minute, raised.Covers(sent))
	assert.Equal(t, Go, JudgeWindow(at(), first.Add(time.Minute)).Outcome, "inside the window it was sent under")
	v := JudgeWindow(at(), first.Add(5*time.Minute))
	assert.Equal(t, Reconcile, v.Outcome, "past the window it was sent under, though inside the raised one")
	assert.Contains(t, v.Reason, "a window raised since does not bring back an id the broker forgot")
	assert.Contains(t, raised.Forgets(first, sent, time.Second, first.Add(5*time.Minute)), "no longer covers")

	lowered := raised
	lowered.Duplicates = time.Minute
	assert.Equal(t, time.Minute, lowered.Covers(SentTo{Stream: "APP", Created: created, Duplicates: time.Hour}), "a lowered window is the one read now")
	assert.Equal(t, time.Hour, raised.Covers(SentTo{Stream: "APP", Created: created}), "not known (a job from before): the window read now")
}
