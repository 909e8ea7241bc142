package replay

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

const recordJobs = `
UPDATE replay_jobs j SET state = u.state, result = u.result, pub_stream = u.stream, pub_seq = u.seq,
    duplicate = u.dup, lease_owner = '', lease_until = NULL, updated_at = now(),
    not_before = CASE WHEN u.state IN ('unknown', 'pending') THEN now() + $8::interval ELSE j.not_before END
FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bool[])
    AS u(id, fence, state, result, stream, seq, dup)
WHERE j.id = u.id
  AND j.fence = u.fence      -- a worker whose lease was taken over records nothing
  AND j.state = 'claimed'    -- nor does anyone after a cancel
RETURNING j.id`

const (
	// One statement; the unique ledger keys decide races between two
	// requests for the same dedupe or operation key: the first wins.
	insertLedger = `INSERT INTO replay_ledger (job_id, request_id, dead_letter_id, tenant, class, msg_id,
        operation_id, subject, stream, seq, duplicate)
        SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[],
            $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bool[])
        ON CONFLICT DO NOTHING`
	markReplayed = `UPDATE dead_letters SET status = 'replayed', version = version + 1, updated_at = now()
        WHERE id = ANY($1) AND status IN ('replay_requested', 'replaying', 'replay_failed', 'quarantined')` // never over discarded or resolved
	markFailed = `UPDATE dead_letters SET status = 'replay_failed', version = version + 1, updated_at = now()
        WHERE id = ANY($1) AND status IN ('replay_requested', 'replaying')` // a success elsewhere wins
	markRequeued = `UPDATE dead_letters SET status = 'quarantined', version = version + 1, updated_at = now()
        WHERE id = ANY($1) AND status IN ('replay_requested', 'replaying')` // only what a replay holds goes back
	// An item whose job ended lets go of its dead letter: another request
	// may take it (a failed or blocked one, say).
	releaseEnded = `UPDATE replay_items i SET held = false
        FROM unnest($1::bigint[], $2::bigint[]) AS u(request_id, dead_letter_id)
        WHERE i.request_id = u.request_id AND i.dead_letter_id = u.dead_letter_id AND i.held`
	markRunning = `UPDATE replay_requests SET status = 'running', version = version + 1
        WHERE id = ANY($1) AND status = 'approved'` // once, from approved
	// Done when no job is left to run; a cancelled or voided request stays so.
	markDone = `UPDATE replay_requests r SET status = 'done', finished_at = now(), version = version + 1
        WHERE id = ANY($1) AND status IN ('approved', 'running')
          AND NOT EXISTS (SELECT 1 FROM replay_jobs j WHERE j.request_id = r.id AND j.state IN ('pending', 'claimed', 'unknown'))
        RETURNING id, tenant`
)

// record writes the outcomes under the fencing tokens, and with them the
// ledger, the dead letters' statuses, the audit rows and the requests'
// progress, in one transaction.
func (w *Worker) record(ctx context.Context, jobs []*job) error {
	n := len(jobs)
	ids, fences, seqs := make([]int64, n), make([]int64, n), make([]int64, n)
	states, results, streams := make([]string, n), make([]string, n), make([]string, n)
	dups := make([]bool, n)
	byID := map[int64]*job{}
	for i, j := range jobs {
		ids[i], fences[i], states[i], results[i], streams[i], seqs[i], dups[i] = j.id, j.fence, string(j.state), j.result, j.stream, int64(j.seq), j.duplicate
		byID[j.id] = j
	}
	return pgx.BeginFunc(ctx, w.svc.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, recordJobs, ids, fences, states, results, streams, seqs, dups, w.cfg.Retry.String())
		if err != nil {
			return fmt.Errorf("record replay jobs: %w", err)
		}
		kept, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("record replay jobs: %w", err)
		}
		if len(kept) < n {
			w.log.Warn("replay results not recorded: lease lost to another worker", "owner", w.cfg.Owner, "lost", n-len(kept))
		}
		var events []audit.Event
		var ledger ledgerColumns
		var replayed, failed, requeued []int64
		var endedReqs, endedDLs []int64
		requests := map[int64]bool{}
		for _, id := range kept {
			j := byID[id]
			requests[j.requestID] = true
			if j.state == JobPending {
				continue // released untouched: nothing happened to record
			}
			if j.state != JobUnknown {
				endedReqs, endedDLs = append(endedReqs, j.requestID), append(endedDLs, j.deadLetterID)
			}
			e := audit.Event{
				Actor: quarantine.Actor{Subject: "replay-worker:" + w.cfg.Owner}, Tenant: j.tenant, Action: "replay.item." + string(j.state),
				ObjectType: "dead_letter", ObjectID: strconv.FormatInt(j.deadLetterID, 10), MessageID: j.msgID,
				OperationID: j.opID, Reason: j.result, Outcome: audit.OutcomeOK,
				After: map[string]any{"request": j.requestID, "job": j.id, "subject": j.subject, "stream": j.stream, "seq": j.seq, "duplicate": j.duplicate},
			}
			switch j.state {
			case JobPublished:
				ledger.add(j)
				replayed = append(replayed, j.deadLetterID)
			case JobSkipped:
				replayed = append(replayed, j.deadLetterID)
			case JobFailed, JobBlocked:
				e.Outcome = audit.OutcomeError
				failed = append(failed, j.deadLetterID)
			case JobCancelled:
				requeued = append(requeued, j.deadLetterID)
			case JobUnknown:
				e.Outcome = audit.OutcomeError
			}
			events = append(events, e)
		}
		if len(ledger.jobIDs) > 0 {
			l := &ledger
			if _, err := tx.Exec(ctx, insertLedger, l.jobIDs, l.reqIDs, l.dlIDs, l.tenants, l.classes, l.msgIDs, l.opIDs,
				l.subjects, l.streams, l.seqs, l.dups); err != nil {
				return fmt.Errorf("record replay ledger: %w", err)
			}
		}
		for _, u := range []struct {
			ids  []int64
			sql  string
			what string
		}{
			{replayed, markReplayed, "replayed"}, {failed, markFailed, "failed"}, {requeued, markRequeued, "requeued"},
		} {
			if len(u.ids) == 0 {
				continue
			}
			if _, err := tx.Exec(ctx, u.sql, u.ids); err != nil {
				return fmt.Errorf("mark dead letters %s: %w", u.what, err)
			}
		}
		if len(endedReqs) > 0 {
			if _, err := tx.Exec(ctx, releaseEnded, endedReqs, endedDLs); err != nil {
				return fmt.Errorf("release ended replay items: %w", err)
			}
		}
		reqIDs := make([]int64, 0, len(requests))
		for id := range requests {
			reqIDs = append(reqIDs, id)
		}
		if _, err := tx.Exec(ctx, markRunning, reqIDs); err != nil {
			return fmt.Errorf("mark requests running: %w", err)
		}
		rows, err = tx.Query(ctx, markDone, reqIDs)
		if err != nil {
			return fmt.Errorf("mark requests done: %w", err)
		}
		var doneID int64
		var tenant string
		_, err = pgx.ForEachRow(rows, []any{&doneID, &tenant}, func() error {
			events = append(events, audit.Event{Actor: quarantine.Actor{Subject: "replay-worker:" + w.cfg.Owner}, Tenant: tenant,
				Action: "replay.done", ObjectType: "replay_request", ObjectID: strconv.FormatInt(doneID, 10), Outcome: audit.OutcomeOK})
			return nil
		})
		if err != nil {
			return fmt.Errorf("mark requests done: %w", err)
		}
		if _, err := audit.AppendBatch(ctx, tx, events); err != nil {
			return fmt.Errorf("audit replay results: %w", err)
		}
		return nil
	})
}

// ledgerColumns are ledger rows as one array per column, for unnest.
type ledgerColumns struct {
	jobIDs, reqIDs, dlIDs, seqs                        []int64
	tenants, classes, msgIDs, opIDs, subjects, streams []string
	dups                                               []bool
}

func (l *ledgerColumns) add(j *job) {
	l.jobIDs, l.reqIDs, l.dlIDs = append(l.jobIDs, j.id), append(l.reqIDs, j.requestID), append(l.dlIDs, j.deadLetterID)
	l.tenants, l.classes, l.msgIDs = append(l.tenants, j.tenant), append(l.classes, string(j.class)), append(l.msgIDs, j.msgID)
	l.opIDs, l.subjects, l.streams = append(l.opIDs, j.opID), append(l.subjects, j.subject), append(l.streams, j.stream)
	l.seqs, l.dups = append(l.seqs, int64(j.seq)), append(l.dups, j.duplicate)
}
