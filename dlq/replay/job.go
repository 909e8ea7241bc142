package replay

import (
	"context"
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
	status                             Status
	policy                             string
	rate                               float64
	approvedAt                         *time.Time
	requester                          quarantine.Actor
	msgID, opID, corrID, subject       string
	headers                            []dlq.HeaderValue
	payload                            []byte
	principal, itemType                string

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

const claimJobs = `
WITH c AS (
    SELECT id FROM replay_jobs
    WHERE not_before <= now()
      AND (state IN ('pending', 'unknown') OR (state = 'claimed' AND lease_until < now())) -- a live lease is someone else's
    ORDER BY not_before, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE replay_jobs j SET state = 'claimed', lease_owner = $2, lease_until = now() + $3::interval,
    fence = nextval('replay_fence_seq'), attempts = j.attempts + 1, updated_at = now()
FROM c WHERE j.id = c.id
RETURNING j.id, j.fence`

const loadJobs = `
SELECT j.id, j.request_id, j.dead_letter_id, r.tenant, r.class, r.status, r.policy_version, r.rate, r.approved_at,
       r.requester_issuer, r.requester_subject, r.requester_email,
       i.msg_id, i.operation_id, i.correlation_id, i.subject, i.headers, i.payload, d.principal, d.item_type
FROM replay_jobs j
JOIN replay_requests r ON r.id = j.request_id
JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
JOIN dead_letters d ON d.id = j.dead_letter_id
WHERE j.id = ANY($1)
ORDER BY j.not_before, j.id`

// claim takes up to Batch due jobs under a lease and a new fencing token
// each, and loads them.
func (w *Worker) claim(ctx context.Context) ([]*job, error) {
	rows, err := w.svc.pool.Query(ctx, claimJobs, w.cfg.Batch, w.cfg.Owner, w.cfg.Lease.String())
	if err != nil {
		return nil, fmt.Errorf("claim replay jobs: %w", err)
	}
	fences := map[int64]int64{}
	var id, fence int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &fence}, func() error { fences[id] = fence; return nil }); err != nil {
		return nil, fmt.Errorf("claim replay jobs: %w", err)
	}
	if len(fences) == 0 {
		return nil, nil
	}
	ids := make([]int64, 0, len(fences))
	for id := range fences {
		ids = append(ids, id)
	}
	rows, err = w.svc.pool.Query(ctx, loadJobs, ids)
	if err != nil {
		return nil, fmt.Errorf("load replay jobs: %w", err)
	}
	var out []*job
	for rows.Next() {
		j := &job{}
		var hs []byte
		if err := rows.Scan(&j.id, &j.requestID, &j.deadLetterID, &j.tenant, &j.class, &j.status, &j.policy, &j.rate, &j.approvedAt,
			&j.requester.Issuer, &j.requester.Subject, &j.requester.Email, &j.msgID, &j.opID, &j.corrID, &j.subject,
			&hs, &j.payload, &j.principal, &j.itemType); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load replay jobs: %w", err)
		}
		if err := json.Unmarshal(hs, &j.headers); err != nil {
			j.state, j.result = JobFailed, "stored headers unreadable: "+err.Error()
		}
		j.fence = fences[j.id]
		out = append(out, j)
	}
	return out, rows.Err()
}
