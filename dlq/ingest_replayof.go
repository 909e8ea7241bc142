package dlq

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The dead letters a batch says it came back from, as they are: a claim is
// linked only to a dead letter of the same tenant with the same message id
// (a replay keeps the original id), so a producer can neither link a dead
// letter into another tenant nor to another message.
const selectReplayOrigins = `SELECT id, tenant, msg_id, generation FROM dead_letters WHERE id = ANY($1)`

// linkReplays checks each record's Dlq-Replay-Of claim against the dead
// letter it names and keeps it (with the generation one past the origin's)
// or drops it, flagged unlinked:replay_of with why. A batch without claims
// costs nothing; one with claims costs one query. Only a database that
// cannot be reached fails it (the caller retries the batch).
func (s *Store) linkReplays(ctx context.Context, recs []Record) error {
	var ids []int64
	for i := range recs {
		if recs[i].ReplayOf > 0 {
			ids = append(ids, recs[i].ReplayOf)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	type origin struct {
		tenant, msgID string
		generation    int32
	}
	rows, err := s.pool.Query(ctx, selectReplayOrigins, ids)
	if err != nil {
		return fmt.Errorf("read replay origins: %w", err)
	}
	found := map[int64]origin{}
	var id int64
	var o origin
	if _, err := pgx.ForEachRow(rows, []any{&id, &o.tenant, &o.msgID, &o.generation}, func() error { found[id] = o; return nil }); err != nil {
		return fmt.Errorf("read replay origins: %w", err)
	}
	for i := range recs {
		r := &recs[i]
		if r.ReplayOf == 0 {
			continue
		}
		switch o, ok := found[r.ReplayOf]; {
		case !ok || o.tenant != r.Tenant:
			r.flag("unlinked:replay_of", "%s names dead letter %d, which is not a dead letter of tenant %s: not linked", HeaderReplayOf, r.ReplayOf, short(r.Tenant))
			r.ReplayOf = 0
		case o.msgID != r.MsgID:
			r.flag("unlinked:replay_of", "%s names dead letter %d, whose message id is not this one's (a replay keeps the original id): not linked",
				HeaderReplayOf, r.ReplayOf)
			r.ReplayOf = 0
		default:
			r.Generation = o.generation + 1
		}
	}
	return nil
}
