package replay

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Progress counts the items of a request by what became of them: its jobs
// by state, and the items left out when the selection was frozen or
// submitted (skipped: already replayed; blocked: anything else).
type Progress struct {
	Pending             int // waiting or held by a worker
	Deferred            int // inside a duplicate window
	Unknown             int // no PubAck: retried under the same message id
	Replayed            int
	Skipped             int
	Suppressed          int // the broker kept dropping it as a duplicate not ours
	Blocked             int
	NeedsReconciliation int
	Cancelled           int // cancelled before it ran, or stopped
	// NotApplied were settled "not applied, leave it" by a person
	// (Reconcile): stored as cancelled, their dead letters back in
	// quarantine (OutcomeNotApplied).
	NotApplied int
	// Applied were settled "applied" by a person (Reconcile): stored as
	// replayed, never counted so (OutcomeApplied).
	Applied        int
	LeftOutSkipped int
	LeftOutBlocked int
	// NotStored are the pending items whose last publish the broker did
	// not take or store (a full stream that discards new messages, a
	// closed connection: replaypolicy.NotSentLead), tried again until it
	// does; NotStoredWhy the reason of one of them. Service.Progress
	// reads them; the counts of many requests do not.
	NotStored    int
	NotStoredWhy string
}

// Total is the number of items.
func (p Progress) Total() int {
	return p.Pending + p.Deferred + p.Unknown + p.Replayed + p.Skipped + p.Suppressed + p.Blocked + p.NeedsReconciliation + p.Cancelled +
		p.NotApplied + p.Applied + p.LeftOutSkipped + p.LeftOutBlocked
}

// Ended is the number of items that came to an outcome: every item but
// those still to run.
func (p Progress) Ended() int { return p.Total() - p.Pending - p.Deferred - p.Unknown }

// Outcomes is p as the rules count a request's items.
func (p Progress) Outcomes() replaypolicy.Outcomes {
	return replaypolicy.Outcomes{
		Running: p.Pending + p.Deferred + p.Unknown, Deferred: p.Deferred, Replayed: p.Replayed, Skipped: p.Skipped + p.LeftOutSkipped,
		Suppressed: p.Suppressed, Blocked: p.Blocked + p.LeftOutBlocked, NeedsReconciliation: p.NeedsReconciliation, Cancelled: p.Cancelled,
		NotApplied: p.NotApplied, Applied: p.Applied,
	}
}

// outcomeCounts are the items of request r counted by outcome, in the
// order of Progress's fields (progressTargets): its jobs (j, joined on r)
// by state, and the items left out when the selection was frozen or
// submitted. Each column is named after its field, for sums over them.
const outcomeCounts = `
       count(j.id) FILTER (WHERE j.state IN ('pending', 'claimed')) AS pending, count(j.id) FILTER (WHERE j.state = 'deferred') AS deferred,
       count(j.id) FILTER (WHERE j.state = 'unknown') AS unknown, count(j.id) FILTER (WHERE j.state = 'replayed' AND NOT ` + settledApplied + `) AS replayed,
       count(j.id) FILTER (WHERE j.state = 'skipped') AS skipped, count(j.id) FILTER (WHERE j.state = 'suppressed_duplicate') AS suppressed,
       count(j.id) FILTER (WHERE j.state = 'blocked') AS blocked, count(j.id) FILTER (WHERE j.state = 'needs_reconciliation') AS reconcile,
       count(j.id) FILTER (WHERE j.state = 'cancelled' AND NOT ` + settledNotApplied + `) AS cancelled,
       count(j.id) FILTER (WHERE j.state = 'cancelled' AND ` + settledNotApplied + `) AS not_applied,
       count(j.id) FILTER (WHERE j.state = 'replayed' AND ` + settledApplied + `) AS applied,
       (SELECT count(*) FROM replay_items i WHERE i.request_id = r.id AND i.verdict = 'done') AS left_skipped,
       (SELECT count(*) FROM replay_items i WHERE i.request_id = r.id AND i.verdict = 'block') AS left_blocked`

// Every item of the requests ids, counted by outcome in one pass over each
// request's jobs (replay_jobs_request_idx) and items.
const selectOutcomes = `SELECT r.id, r.tenant, ` + outcomeCounts + `
FROM replay_requests r LEFT JOIN replay_jobs j ON j.request_id = r.id
WHERE r.id = ANY($1)
GROUP BY r.id`

// progressTargets are the scan targets of outcomeCounts's columns in p.
func progressTargets(p *Progress) []any {
	return []any{&p.Pending, &p.Deferred, &p.Unknown, &p.Replayed, &p.Skipped, &p.Suppressed,
		&p.Blocked, &p.NeedsReconciliation, &p.Cancelled, &p.NotApplied, &p.Applied, &p.LeftOutSkipped, &p.LeftOutBlocked}
}

// requestProgress is one request's progress and tenant.
type requestProgress struct {
	Tenant string
	Progress
}

// outcomes counts the items of the requests ids by outcome.
func outcomes(ctx context.Context, q querier, ids []int64) (map[int64]requestProgress, error) {
	rows, err := q.Query(ctx, selectOutcomes, ids)
	if err != nil {
		return nil, err
	}
	out := map[int64]requestProgress{}
	var id int64
	var r requestProgress
	_, err = pgx.ForEachRow(rows, append([]any{&id, &r.Tenant}, progressTargets(&r.Progress)...), func() error {
		out[id] = r
		return nil
	})
	return out, err
}

// ending is what a request whose items came to p ends as: its status ("":
// not yet) and the rules' sentence.
type ending struct {
	status Status
	reason string
	action string // the audit action that records it
}

// judgeOutcome applies JudgeRequestOutcome to p.
func judgeOutcome(p Progress) ending {
	v := replaypolicy.JudgeRequestOutcome(p.Outcomes())
	switch v.Outcome {
	case replaypolicy.Done:
		return ending{StatusDone, v.Reason, audit.ActionReplayDone}
	case replaypolicy.Block:
		return ending{StatusDoneWithProblems, v.Reason, audit.ActionReplayDoneProblems}
	}
	return ending{}
}
