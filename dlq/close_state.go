package dlq

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// CloseState is where a dead letter stands for a discard or resolve:
// Close takes it when its Status is quarantined or replay_failed
// (Closable); HeldBy is the replay request that holds it (0: none), and
// HeldStatus that request's status, so that a page can say what frees it
// (replaypolicy.HeldFreedBy).
type CloseState struct {
	ID         int64
	Tenant     string
	MsgID      string
	Status     Status
	HeldBy     int64
	HeldStatus string
}

// Closable reports whether Close takes the dead letter as it stands
// (Status.Closable).
func (c CloseState) Closable() bool { return c.Status.Closable() }

// The state of each named dead letter in the scope, and the open request
// holding it (replay_items_one_open_request: one at most). Its message id
// is cut to ListTextChars, as a list reads it: a confirmation names those
// it leaves out by it, and the session keeps what a filter left out.
const selectCloseStates = `SELECT d.id, d.tenant, left(d.msg_id, ` + listTextChars + `), d.status, coalesce(h.request_id, 0), coalesce(r.status, '')
FROM dead_letters d
LEFT JOIN replay_items h ON h.dead_letter_id = d.id AND h.held
LEFT JOIN replay_requests r ON r.id = h.request_id
WHERE d.id = ANY($1) AND (d.tenant = ANY($2) OR $3)
ORDER BY d.id`

// CloseStates returns where each of ids (a selection: bounded by the
// caller, as Close bounds it to MaxBulkClose) that is a
// dead letter in tenants (every tenant when all) stands for a close, by
// id; an id of none there is left out. It reads, it locks nothing: Close
// judges again.
func (s *Store) CloseStates(ctx context.Context, ids []int64, tenants []string, all bool) (map[int64]CloseState, error) {
	rows, err := s.pool.Query(ctx, selectCloseStates, ids, tenants, all)
	if err != nil {
		return nil, fmt.Errorf("read close states: %w", err)
	}
	out := make(map[int64]CloseState, len(ids))
	var c CloseState
	_, err = pgx.ForEachRow(rows, []any{&c.ID, &c.Tenant, &c.MsgID, &c.Status, &c.HeldBy, &c.HeldStatus}, func() error {
		out[c.ID] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read close states: %w", err)
	}
	return out, nil
}
