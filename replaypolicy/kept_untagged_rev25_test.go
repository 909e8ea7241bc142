package replaypolicy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRevReplay25KeptWithoutOurHeadersIsNotOurs: the broker answers
// Duplicate to a retry, and the message it keeps has the approved payload,
// was stored after this replay first published, on the subject the
// replay publishes to, but carries neither this item's Dlq-Replay-Of nor
// this request's Dlq-Replay-Request (the producer sent the same bytes
// again under the same message id). It is not this replay's publish, so
// the job is not "replayed". Every case of the rules table that reaches
// OursKept has Kept.Tagged true, so dropping the header check
// (copiedKept) went unnoticed.
func TestRevReplay25KeptWithoutOurHeadersIsNotOurs(t *testing.T) {
	t.Parallel()
	ours := Kept{Tagged: true, StoredAt: testNow.Add(-time.Minute), PayloadSHA256: "abcd", Subject: "app.acme.x", StoresAs: "app.acme.x"}
	a := Ack{Stream: "APP", Seq: 9, Duplicate: true, FirstPublishedAt: testNow.Add(-time.Minute), ApprovedSHA256: "abcd", Subject: "app.acme.x",
		Window: Window{Stream: "APP", Duplicates: 2 * time.Minute}, Kept: ours}
	v := JudgeAck(a, testNow)
	assert.Equal(t, Replayed, v.Outcome, "the control: with our headers it is our own earlier publish: %s", v.Reason)

	a.Kept.Tagged = false
	assert.False(t, OursKept(a), "a kept message without this replay's headers is not ours")
	v = JudgeAck(a, testNow)
	assert.NotEqual(t, Replayed, v.Outcome, "a message the producer sent again under the id is not this replay: %s", v.Reason)
	assert.NotEqual(t, CheckOwnDuplicate, v.Check)
	assert.Contains(t, v.Reason, "not this replay's")
}
