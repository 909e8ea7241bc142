package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRev41EarlierReplayOfTheItemCountsWhateverTheClocks: another
// request's replay of this same dead letter goes to a person even when
// the DLQ stream's server, ahead of the target's and the database's,
// dated the dead letter after that replay was stored or handed: a replay
// of a dead letter can only come after it. Deferring published the item
// again once the window had passed, a second effect. A replay of another
// dead letter of the message stored "before" this dead letter is still
// taken for one this dead letter may have come back from.
func TestRev41EarlierReplayOfTheItemCountsWhateverTheClocks(t *testing.T) {
	t.Parallel()
	now := testNow
	ahead := now.Add(9 * time.Minute) // the DLQ stream's server 10 minutes ahead, a minute ago
	kept := Kept{SameItem: true, Replay: true, Of: "17", Request: "41", StoredAt: now.Add(-30 * time.Second), PayloadSHA256: "abcd",
		Subject: "app.acme.x", StoresAs: "app.acme.x"}

	read := keptDuplicate(now, kept)
	read.DeadLetteredAt = ahead
	v := JudgeAck(read, now)
	assert.Equal(t, Reconcile, v.Outcome, v.Reason)
	assert.Contains(t, v.Reason, "an earlier replay of this dead letter, by replay request 41")

	gone := keptDuplicate(now, Kept{Unreadable: "message not found"})
	gone.DeadLetteredAt = ahead
	gone.EarlierItemReplayAt = now.Add(-30 * time.Second)
	v = JudgeAck(gone, now)
	assert.Equal(t, Reconcile, v.Outcome, v.Reason)
	assert.Contains(t, v.Reason, "at "+formatTime(gone.EarlierItemReplayAt))
	gone.EarlierItemReplayAt = now.Add(-3 * time.Minute)
	assert.Equal(t, Defer, JudgeAck(gone, now).Outcome, "past the window the kept message is not that replay")

	sibling := kept
	sibling.SameItem, sibling.Of = false, "18"
	a := keptDuplicate(now, sibling)
	a.DeadLetteredAt = ahead
	assert.Equal(t, Defer, JudgeAck(a, now).Outcome, "another dead letter's replay stored before this one may be what it came back from")
	siblingGone := keptDuplicate(now, Kept{Unreadable: "message not found"})
	siblingGone.DeadLetteredAt = ahead
	siblingGone.EarlierReplayAt = now.Add(-30 * time.Second)
	assert.Equal(t, Defer, JudgeAck(siblingGone, now).Outcome)
}
