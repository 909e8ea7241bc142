package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRev40ReplayOfAnotherDeadLetterOfTheMessageIsLeftForAPerson: two
// consumers gave up on one message, dead letters A and A2 (the same id,
// subject and payload). A request's replay of A was stored but its
// PubAck lost, and a person settled it "not applied, leave it" (no ledger
// row). A new request replays A2: the broker answers Duplicate for A's
// replay. Round 39 sent the job to a person only for a replay of the same
// dead letter; this one was deferred and published again once the window
// had passed, a second effect of the message. Now another request's
// replay of the message on its subject stored after this dead letter was
// goes to a person, readable or handed within the window. One stored
// before it may be the replay it came back from (that replay failed
// again, as this dead letter, linked or not), and another item of the
// same request's is a bulk replay's: both are waited for as before.
func TestRev40ReplayOfAnotherDeadLetterOfTheMessageIsLeftForAPerson(t *testing.T) {
	t.Parallel()
	now := testNow
	base := func(k Kept) Ack { return keptDuplicate(now, k) }
	sibling := Kept{Replay: true, Of: "17", Request: "41", StoredAt: now.Add(-30 * time.Second), PayloadSHA256: "abcd",
		Subject: "app.acme.x", StoresAs: "app.acme.x"}
	for name, a := range map[string]Ack{"FirstAttempt": base(sibling), "Retry": func() Ack {
		a := base(sibling)
		a.FirstAttempt, a.FirstAttemptAt = false, now.Add(-10*time.Second)
		return a
	}()} {
		v := JudgeAck(a, now)
		assert.Equal(t, Reconcile, v.Outcome, "%s: %s", name, v.Reason)
		assert.Equal(t, CheckMaybePublished, v.Check, name)
		assert.Contains(t, v.Reason, "a replay of dead letter 17, another dead letter of this message", name)
		assert.Contains(t, v.Reason, "by replay request 41", name)
	}
	unnamed := sibling
	unnamed.Of = ""
	assert.Contains(t, JudgeAck(base(unnamed), now).Reason, "or made to look like one")

	origin := sibling
	origin.StoredAt = now.Add(-2 * time.Hour) // before the dead letter (an hour ago)
	assert.Equal(t, Defer, JudgeAck(base(origin), now).Outcome, "a replay stored before this dead letter, which it may have come back from, is waited for")
	bulk := sibling
	bulk.SameRequest = true
	assert.Equal(t, Defer, JudgeAck(base(bulk), now).Outcome, "another item of this request's replay is waited for")

	// Unreadable (a work-queue consumer took it): another request handed a
	// replay of the message within the window.
	gone := base(Kept{Unreadable: "message not found"})
	gone.EarlierReplayAt = now.Add(-20 * time.Second)
	v := JudgeAck(gone, now)
	assert.Equal(t, Reconcile, v.Outcome, v.Reason)
	assert.Contains(t, v.Reason, "or one of another dead letter of the message")
	gone.EarlierReplayAt = now.Add(-2 * time.Hour)
	gone.Window.Duplicates = 3 * time.Hour
	assert.Equal(t, Defer, JudgeAck(gone, now).Outcome, "one handed before this dead letter was stored, which it may have come back from")

	// The message itself sent again by its producer (no replay header) is
	// judged as before.
	resent := base(Kept{StoredAt: now.Add(-30 * time.Second), PayloadSHA256: "abcd", Subject: "app.acme.x", StoresAs: "app.acme.x"})
	assert.Equal(t, CheckSentAgain, JudgeAck(resent, now).Check)
}
