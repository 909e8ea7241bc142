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
// had passed: a second effect. A replay of another dead letter, a
// message on another subject, or other bytes are not this.
func TestRev39EarlierRequestsReplayOfTheItemIsLeftForAPerson(t *testing.T) {
	t.Parallel()
	now := testNow
	base := func(k Kept) Ack {
		return Ack{MsgID: "m-1", Subject: "app.acme.x", Stream: "APP", Seq: 9, Duplicate: true, FirstAttempt: true,
			ApprovedSHA256: "abcd", OriginalSHA256: "abcd", DeadLetteredAt: now.Add(-time.Hour), Margin: time.Second,
			Window: Window{Stream: "APP", Duplicates: 2 * time.Minute}, Kept: k}
	}
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

	other := earlier
	other.SameItem = false
	assert.Equal(t, Defer, JudgeAck(base(other), now).Outcome, "a replay of another dead letter of the message waits for its window")
	bytes := earlier
	bytes.PayloadSHA256 = "ffff"
	assert.Equal(t, Defer, JudgeAck(base(bytes), now).Outcome, "other bytes under this item's headers wait for the window")
	elsewhere := earlier
	elsewhere.Subject = "app.acme.y"
	assert.NotEqual(t, Replayed, JudgeAck(base(elsewhere), now).Outcome)
	assert.NotContains(t, JudgeAck(base(elsewhere), now).Reason, "earlier replay of this dead letter")
}
