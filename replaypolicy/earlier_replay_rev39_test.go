package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRev39EarlierRequestsReplayOfTheItemIsLeftForAPerson: a new request's
// publish of a dead letter, answered Duplicate for a message that is an
// earlier request's replay of the same dead letter (its Dlq-Replay-Of this
// item's, its Dlq-Replay-Request another's) with the approved or original
// payload on the subject, goes to a person. The broker stored that replay
// whatever a person said of it since ("not applied, leave it" writes no
// ledger row), and deferring published the item again once the window
// had passed: a second effect. Whatever its payload: the earlier request
// may have replayed an edit this one no longer carries. A replay of the
// dead letter this one came back from, or a message on another subject,
// is not this.
func TestRev39EarlierRequestsReplayOfTheItemIsLeftForAPerson(t *testing.T) {
	t.Parallel()
	now := testNow
	base := func(k Kept) Ack { return keptDuplicate(now, k) }
	earlier := Kept{SameItem: true, Request: "41", Replay: true, StoredAt: now.Add(-30 * time.Second), PayloadSHA256: "abcd",
		Subject: "app.acme.x", StoresAs: "app.acme.x"}

	for name, a := range map[string]Ack{"FirstAttempt": base(earlier), "Retry": func() Ack {
		a := base(earlier)
		a.FirstAttempt, a.FirstAttemptAt = false, now.Add(-10*time.Second)
		return a
	}()} {
		v := JudgeAck(a, now)
		assert.Equal(t, Reconcile, v.Outcome, "%s: %s", name, v.Reason)
		assert.Equal(t, CheckMaybePublished, v.Check, name)
		assert.Contains(t, v.Reason, "earlier replay of this dead letter, by replay request 41", name)
	}

	original := earlier
	original.PayloadSHA256 = "ef01"
	a := base(original)
	a.ApprovedSHA256 = "9999"
	a.OriginalSHA256 = "ef01"
	assert.Equal(t, Reconcile, JudgeAck(a, now).Outcome, "an earlier replay of the original payload, before an edit")

	origin := earlier
	origin.SameItem, origin.StoredAt = false, now.Add(-2*time.Hour)
	assert.Equal(t, Defer, JudgeAck(base(origin), now).Outcome, "a replay stored before this dead letter, which it may have come back from, waits for its window")
	edited := earlier
	edited.PayloadSHA256 = "ffff"
	assert.Equal(t, Reconcile, JudgeAck(base(edited), now).Outcome, "an earlier replay of an edit this request no longer carries")
	elsewhere := earlier
	elsewhere.Subject = "app.acme.y"
	assert.NotEqual(t, Replayed, JudgeAck(base(elsewhere), now).Outcome)
	assert.NotContains(t, JudgeAck(base(elsewhere), now).Reason, "earlier replay of this dead letter")
}

// TestRev39EarlierReplayHandedWithinTheWindowIsLeftForAPerson: a Duplicate
// answer whose kept message cannot be read back (a work-queue or interest
// stream's consumer took it, a limit evicted it) goes to a person when
// another request handed this dead letter's replay to NATS within the
// window: the broker most likely keeps that replay. Past the window, or
// with no such replay, it waits for the window as before.
func TestRev39EarlierReplayHandedWithinTheWindowIsLeftForAPerson(t *testing.T) {
	t.Parallel()
	now := testNow
	a := Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 9, Duplicate: true, FirstAttempt: true,
		ApprovedSHA256: "abcd", OriginalSHA256: "abcd", DeadLetteredAt: now.Add(-time.Hour), Margin: time.Second,
		Window: Window{Stream: "APP", Duplicates: 2 * time.Minute}, Kept: Kept{Unreadable: "message not found"},
		EarlierReplayAt: now.Add(-30 * time.Second)}
	v := JudgeAck(a, now)
	assert.Equal(t, Reconcile, v.Outcome, v.Reason)
	assert.Equal(t, CheckMaybePublished, v.Check)
	assert.Contains(t, v.Reason, "another replay request handed this dead letter's replay to NATS")

	a.EarlierReplayAt = now.Add(-3 * time.Minute)
	assert.Equal(t, Defer, JudgeAck(a, now).Outcome, "past the window the kept message is not that replay")
	a.EarlierReplayAt = time.Time{}
	assert.Equal(t, Defer, JudgeAck(a, now).Outcome, "no earlier replay handed")
}

// keptDuplicate is a first attempt's Duplicate answer, at now, for a
// message the broker kept (k) on APP's app.acme.x, a 2 minute window, of a
// dead letter stored an hour before, approved payload "abcd".
func keptDuplicate(now time.Time, k Kept) Ack {
	return Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 9, Duplicate: true, FirstAttempt: true,
		ApprovedSHA256: "abcd", OriginalSHA256: "abcd", DeadLetteredAt: now.Add(-time.Hour), Margin: time.Second,
		Window: Window{Stream: "APP", Duplicates: 2 * time.Minute}, Kept: k}
}
