package replay

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// notReplayedWhere picks the items of request $1 that an emergency stop, a
// cancel, a person's "not applied, leave it" or the request's end left
// unpublished, and whose dead letters are back in quarantine now: never
// one left out when the selection was frozen (the rules refused it), one
// that ran to any other outcome, nor one whose dead letter was resolved,
// discarded, replayed or taken by another request since.
const notReplayedWhere = `FROM replay_items i
    JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
    LEFT JOIN replay_jobs j ON j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id
    WHERE i.request_id = $1 AND i.skip_reason = ''
      AND (j.id IS NULL OR j.state = 'cancelled') -- never run, or cancelled (stopped, settled not applied)
      AND d.status = 'quarantined'                -- still to be dealt with, and held by no request
`

const (
	selectNotReplayed = `SELECT i.dead_letter_id ` + notReplayedWhere + ` ORDER BY i.position LIMIT $2`
	countNotReplayed  = `SELECT count(*) ` + notReplayedWhere
)

// MayRequestAgain reports whether what r did not replay may be requested
// again from its page (Service.NotReplayed): once it ended, and was not
// rejected (an approver refused those very items: asking again is a
// selection of its own, not a button under the refusal). An open request
// still holds its items; a draft is submitted or left to expire.
func (r Request) MayRequestAgain() bool {
	return !r.Status.Open() && r.Status != StatusRejected
}

// NotReplayed returns the dead letters of request id's items that it did
// not replay and that are back in quarantine: cancelled or stopped before
// they were published, settled "not applied, leave it", or never run
// because the request ended first; in item order, at most MaxSelection. A
// new selection of them is judged afresh (CreateDrafts): nothing of
// request id carries over, its approvals least of all.
func (s *Service) NotReplayed(ctx context.Context, id int64) ([]int64, error) {
	rows, err := s.pool.Query(ctx, selectNotReplayed, id, MaxSelection)
	if err != nil {
		return nil, fmt.Errorf("read what request %d did not replay: %w", id, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read what request %d did not replay: %w", id, err)
	}
	return ids, nil
}

// CountNotReplayed is how many dead letters NotReplayed would return,
// counted without them (a request page asks).
func (s *Service) CountNotReplayed(ctx context.Context, id int64) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, countNotReplayed, id).Scan(&n); err != nil {
		return 0, fmt.Errorf("count what request %d did not replay: %w", id, err)
	}
	return n, nil
}
