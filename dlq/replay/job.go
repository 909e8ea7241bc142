package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// JobState is where a replay job stands (replay_jobs.state).
type JobState string

// Job states. A job waits (pending), is held by a worker (claimed), and
// ends published, skipped, failed, blocked or cancelled; unknown means the
// last publish got no PubAck and it is retried under the same message id.
const (
	JobPending   JobState = "pending"
	JobClaimed   JobState = "claimed"
	JobPublished JobState = "published"
	JobSkipped   JobState = "skipped"
	JobFailed    JobState = "failed"
	JobUnknown   JobState = "unknown"
	JobBlocked   JobState = "blocked"
	JobCancelled JobState = "cancelled"
)

// jobStateFor is the state a job gets from a rule's outcome (Go leaves it
// to the publish).
func jobStateFor(o replaypolicy.Outcome) JobState {
	switch o {
	case replaypolicy.Go:
		return ""
	case replaypolicy.Done:
		return JobSkipped
	case replaypolicy.Cancel:
		return JobCancelled
	case replaypolicy.Fail:
		return JobFailed
	case replaypolicy.Wait:
		return JobPending
	case replaypolicy.Retry:
		return JobUnknown
	}
	return JobBlocked
}

// job is one claimed job with what publishing it needs and, once decided,
// its outcome.
type job struct {
	id, fence, requestID, deadLetterID int64
	tenant                             string
	class                              replaypolicy.Class
	reqStatus                          Status
	policy                             string
	rate                               float64
	approvedAt                         *time.Time
	requester                          quarantine.Actor
	msgID, opID, corrID, subject       string
	headers                            []dlq.HeaderValue
	payload                            []byte
	principal, itemType                string

	// What the rules judge of the item at execution: the dead letter as it
	// is (status, and which request holds it), whether the payload was
	// edited, the hash the intent holds and the one taken at ingest.
	status                           dlq.Status
	heldBy                           int64
	edited                           bool
	msgIDDerived, payloadUnavailable bool
	approvedSHA256, originalSHA256   []byte

	// outcome
	state     JobState
	result    string
	stream    string
	seq       uint64
	duplicate bool
}

// decide gives j the state and result of a rule's verdict.
func (j *job) decide(v replaypolicy.Verdict) {
	j.state, j.result = jobStateFor(v.Outcome), v.Reason
}

// claimJobs takes due jobs under a lease: at most $1 of them, and no more
// payload bytes than $4 (but always one), so a claim of big payloads stays
// bounded in memory. Sizes come from the stored lengths, not the payloads.
const claimJobs = `
WITH c AS (
    SELECT j.id, j.not_before, j.request_id, j.dead_letter_id FROM replay_jobs j
    WHERE j.not_before <= now()
      AND (j.state IN ('pending', 'unknown') OR (j.state = 'claimed' AND j.lease_until < now())) -- a live lease is someone else's
    ORDER BY j.not_before, j.id
    LIMIT $1
    FOR UPDATE OF j SKIP LOCKED
), sized AS (
    SELECT c.id, row_number() OVER w AS n,
           sum(coalesce(octet_length(i.payload), d.payload_size)) OVER w AS upto
    FROM c
    JOIN replay_items i ON i.request_id = c.request_id AND i.dead_letter_id = c.dead_letter_id
    JOIN dead_letters d ON d.id = c.dead_letter_id
    WINDOW w AS (ORDER BY c.not_before, c.id)
)
UPDATE replay_jobs j SET state = 'claimed', lease_owner = $2, lease_until = now() + $3::interval,
    fence = nextval('replay_fence_seq'), attempts = j.attempts + 1, updated_at = now()
FROM sized s WHERE j.id = s.id AND (s.upto <= $4 OR s.n = 1)
RETURNING j.id, j.fence`

// loadJobs reads the claimed jobs with everything publishing them needs,
// and the dead letters as they are now, locked until the claim commits so
// that the status read is the one a concurrent change left. The payload is
// the edited one, else the dead letter's.
const loadJobs = `
SELECT j.id, j.request_id, j.dead_letter_id, r.tenant, r.class, r.status, r.policy_version, r.rate, r.approved_at,
       r.requester_issuer, r.requester_subject, r.requester_email, r.requester_email_verified,
       i.msg_id, i.operation_id, i.correlation_id, i.subject, i.headers, coalesce(i.payload, d.payload), d.principal, d.item_type,
       d.status, CASE WHEN i.held THEN i.request_id
                      ELSE coalesce((SELECT h.request_id FROM replay_items h WHERE h.dead_letter_id = i.dead_letter_id AND h.held), 0) END,
       i.payload IS NOT NULL, d.msg_id_derived, d.payload_unavailable, i.payload_sha256, d.payload_sha256
FROM replay_jobs j
JOIN replay_requests r ON r.id = j.request_id
JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
JOIN dead_letters d ON d.id = j.dead_letter_id
WHERE j.id = ANY($1)
ORDER BY j.not_before, j.id
FOR SHARE OF d`

// claim takes up to Batch due jobs (and up to BatchBytes of payload) under
// a lease and a new fencing token each, and loads them with their dead
// letters, in one transaction.
func (w *Worker) claim(ctx context.Context) ([]*job, error) {
	var out []*job
	err := pgx.BeginFunc(ctx, w.svc.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, claimJobs, w.cfg.Batch, w.cfg.Owner, w.cfg.Lease.String(), w.cfg.BatchBytes)
		if err != nil {
			return fmt.Errorf("claim replay jobs: %w", err)
		}
		fences := map[int64]int64{}
		var id, fence int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &fence}, func() error { fences[id] = fence; return nil }); err != nil {
			return fmt.Errorf("claim replay jobs: %w", err)
		}
		if len(fences) == 0 {
			return nil
		}
		ids := make([]int64, 0, len(fences))
		for id := range fences {
			ids = append(ids, id)
		}
		rows, err = tx.Query(ctx, loadJobs, ids)
		if err != nil {
			return fmt.Errorf("load replay jobs: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			j := &job{}
			var hs []byte
			if err := rows.Scan(&j.id, &j.requestID, &j.deadLetterID, &j.tenant, &j.class, &j.reqStatus, &j.policy, &j.rate, &j.approvedAt,
				&j.requester.Issuer, &j.requester.Subject, &j.requester.Email, &j.requester.EmailVerified, &j.msgID, &j.opID, &j.corrID, &j.subject,
				&hs, &j.payload, &j.principal, &j.itemType, &j.status, &j.heldBy, &j.edited, &j.msgIDDerived, &j.payloadUnavailable,
				&j.approvedSHA256, &j.originalSHA256); err != nil {
				return fmt.Errorf("load replay jobs: %w", err)
			}
			if err := json.Unmarshal(hs, &j.headers); err != nil {
				j.state, j.result = JobFailed, "stored headers unreadable: "+err.Error()
			}
			j.fence = fences[j.id]
			out = append(out, j)
		}
		return rows.Err()
	})
	return out, err
}

// item is the item of j as the rules judge it at execution; the subject is
// the job's rule (JudgeJob), not the item's.
func (j *job) item() replaypolicy.Item {
	sum := sha256.Sum256(j.payload)
	return replaypolicy.Item{
		Tenant: j.tenant, ItemType: j.itemType, MsgID: j.msgID, MsgIDDerived: j.msgIDDerived, OperationID: j.opID, Principal: j.principal,
		OriginalSubject: j.subject, PayloadSHA256: hex.EncodeToString(sum[:]), OriginalPayloadSHA256: hex.EncodeToString(j.originalSHA256),
		PayloadEdited: j.edited, PayloadUnavailable: j.payloadUnavailable, Status: string(j.status), Request: j.requestID, HeldBy: j.heldBy,
		ApprovedSHA256: hex.EncodeToString(j.approvedSHA256),
	}
}
