package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRevIngest32NotWholeIsNeverSent: a dead letter whose producer could
// not send its original whole (a part left out to fit the DLQ stream, a
// header block the client could not read, header names NATS cannot
// send) was judged like any other, and a replay would have published
// something else (an empty payload, missing headers) under the
// original's identity. Now every step blocks it, naming the flag.
func TestRevIngest32NotWholeIsNeverSent(t *testing.T) {
	for _, flag := range []string{"left_out:payload", "left_out:headers", "left_out:header_block", "unsendable:header_name"} {
		v := JudgeSend(Verdict{}, Send{NotWhole: flag})
		assert.Equal(t, Block, v.Outcome, flag)
		assert.Equal(t, CheckUnsendable, v.Check, flag)
		assert.Contains(t, v.Reason, "flag "+flag, flag)
	}
	assert.Equal(t, Go, JudgeSend(Verdict{}, Send{}).Outcome, "a whole one goes")
}
