package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// publishedAfter adds to after, the audit row of what became of j
// (Worker.itemEvent), what j published and when, where it is known: the
// SHA-256 of the payload it carries (what it published, or would have; an
// edit may have changed it since the dead letter was stored; none when the
// payload is gone), when its first attempt went (first_attempt_at, what
// the duplicate window is judged from; none once an answer said it did not
// land) and when it was first published ever (first_published_at), both
// on the database's clock. The row's own time is when the outcome was
// recorded, after the broker answered. Computed from the job as held: no
// statement more per job.
func (j *job) publishedAfter(after map[string]any) {
	switch {
	case j.payloadUnavailable:
	case j.keptSHA256 != nil:
		after["payload_sha256"] = hex.EncodeToString(j.keptSHA256)
	default:
		sum := sha256.Sum256(j.payload)
		after["payload_sha256"] = hex.EncodeToString(sum[:])
	}
	if j.firstAttemptAt != nil && !j.resetAttempt {
		after["first_attempt_at"] = j.firstAttemptAt.UTC().Format(time.RFC3339Nano)
	}
	if !j.firstPublishedAt.IsZero() {
		after["first_published_at"] = j.firstPublishedAt.UTC().Format(time.RFC3339Nano)
	}
}
