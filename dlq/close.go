package dlq

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// MaxBulkClose bounds one bulk discard or resolve.
const MaxBulkClose = 1000

// CloseInput says which dead letters to close and why. Version, when not 0,
// is the version the actor saw (single item): a change since is a conflict.
type CloseInput struct {
	IDs     []int64
	Version int32
	To      Status // StatusDiscarded or StatusResolved
	Reason  string
	Tenants []string // the actor's scope for the action
	All     bool     // scope is every tenant
}

// Close discards dead letters, or marks them resolved by hand, with a
// reason; one audit row per item in the same transaction. It is atomic: if
// any named dead letter is missing, outside the scope, or not open
// (quarantined or replay failed), nothing changes and it returns a conflict
// (not_found for a single item outside the scope). The ids it refuses in
// the scope, and ids of no dead letter, are audited as denied (one row);
// those outside the scope are the route's to audit.
func (s *Store) Close(ctx context.Context, in CloseInput, actor quarantine.Actor, meta quarantine.RequestMeta) (int, error) {
	in.Reason = strings.TrimSpace(in.Reason)
	switch {
	case in.To != StatusDiscarded && in.To != StatusResolved:
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EINVALID, "status %q is not discarded or resolved", in.To))
	case in.Reason == "":
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EINVALID, "a reason is required"))
	case len(in.IDs) == 0:
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EINVALID, "select at least one"))
	case len(in.IDs) > MaxBulkClose:
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EINVALID, "at most %d at once, got %d", MaxBulkClose, len(in.IDs)))
	}
	n := 0
	var done []int64 // what the UPDATE took, before it rolled back
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE dead_letters SET status = $2, version = version + 1, updated_at = now()
            WHERE id = ANY($1)
              AND status IN ('quarantined', 'replay_failed')    -- never close one being replayed or already closed
              AND ($3 = 0 OR version = $3)                      -- the version the actor saw
              AND (tenant = ANY($4) OR $5)
            RETURNING id, tenant, msg_id, operation_id, version - 1`, in.IDs, in.To, in.Version, in.Tenants, in.All)
		if err != nil {
			return err
		}
		var events []audit.Event
		var id int64
		var tenant, msgID, opID string
		var before int32
		_, err = pgx.ForEachRow(rows, []any{&id, &tenant, &msgID, &opID, &before}, func() error {
			e := audit.NewEvent(actor, meta, closeAction(in.To))
			e.Tenant, e.ObjectType, e.ObjectID, e.MessageID, e.OperationID, e.Reason = tenant, "dead_letter", strconv.FormatInt(id, 10), msgID, opID, in.Reason
			e.After = map[string]any{"status": in.To, "version": before + 1}
			events = append(events, e)
			done = append(done, id)
			return nil
		})
		if err != nil {
			return err
		}
		if len(events) != len(in.IDs) {
			if len(in.IDs) == 1 {
				var inScope bool
				err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM dead_letters WHERE id = $1 AND (tenant = ANY($2) OR $3))`,
					in.IDs[0], in.Tenants, in.All).Scan(&inScope)
				if err != nil {
					return err
				}
				if !inScope {
					return errNoDeadLetter
				}
				return quarantine.Errorf(quarantine.ECONFLICT, "it changed since you loaded it, or it is not open any more")
			}
			return quarantine.Errorf(quarantine.ECONFLICT, "%d of the %d selected are not open any more (or not yours); nothing was changed", len(in.IDs)-len(events), len(in.IDs))
		}
		n = len(events)
		_, err = audit.AppendBatch(ctx, tx, events)
		return err
	})
	if quarantine.ErrorCode(err) == quarantine.ECONFLICT {
		if aerr := s.auditRefusedClose(ctx, in, done, actor, meta); aerr != nil {
			return 0, aerr
		}
	}
	if err != nil {
		return 0, fmt.Errorf("close dead letters: %w", err)
	}
	return n, nil
}

// closeAction is the audit action of closing a dead letter as to.
func closeAction(to Status) string {
	if to == StatusDiscarded {
		return audit.ActionDeadLetterDiscard
	}
	return audit.ActionDeadLetterResolve
}

// auditRefusedClose writes the denied row of a close that changed nothing:
// every named id it would not take (not done), but those outside the scope.
func (s *Store) auditRefusedClose(ctx context.Context, in CloseInput, done []int64, actor quarantine.Actor, meta quarantine.RequestMeta) error {
	rows, err := s.pool.Query(ctx, `SELECT id, tenant, status, version FROM dead_letters WHERE id = ANY($1)`, in.IDs)
	if err != nil {
		return fmt.Errorf("audit refused close: %w", err)
	}
	type state struct {
		tenant  string
		status  Status
		version int32
	}
	found := map[int64]state{}
	var id int64
	var st state
	if _, err := pgx.ForEachRow(rows, []any{&id, &st.tenant, &st.status, &st.version}, func() error { found[id] = st; return nil }); err != nil {
		return fmt.Errorf("audit refused close: %w", err)
	}
	refused := RefusedIDs{}
	for _, id := range in.IDs {
		st, ok := found[id]
		switch {
		case slices.Contains(done, id):
		case !ok:
			refused.Add(id, "no such dead letter")
		case !in.All && !slices.Contains(in.Tenants, st.tenant):
			// another tenant's: the route audited it
		case st.status != StatusQuarantined && st.status != StatusReplayFailed:
			refused.Add(id, fmt.Sprintf("not open (%s)", st.status))
		default:
			refused.Add(id, fmt.Sprintf("changed since it was loaded (version %d)", st.version))
		}
	}
	if refused.Len() == 0 {
		return nil
	}
	e := audit.NewEvent(actor, meta, closeAction(in.To))
	if _, err := audit.AppendFunc(ctx, s.pool, refused.Event(e)); err != nil {
		return fmt.Errorf("audit refused close: %w", err)
	}
	return nil
}
