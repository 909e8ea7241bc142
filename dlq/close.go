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

// MaxCloseReason bounds the reason of a discard or resolve, in bytes: the
// audit log keeps this much of a reason (audit/bound.go) and would cut a
// longer one.
const MaxCloseReason = 4096

// CloseInput says which dead letters to close and why. Version, when not 0,
// is the version the actor saw (single item): a change since is a conflict.
type CloseInput struct {
	IDs     []int64
	Version int32
	To      Status // StatusDiscarded or StatusResolved
	Reason  string
	Tenants []string // the actor's scope for the action
	All     bool     // scope is every tenant
	// Refused are dead letters the selection named that the actor may see
	// but not close (tenants outside Tenants): the caller left them out of
	// IDs, and Close audits them as denied with the action, in the same
	// transaction.
	Refused RefusedIDs
}

// closeDeadLetters moves the named dead letters ($1 ids, $6 their times)
// to $2, and keeps the counters (StatusMove). It locks them by key
// (ORDER BY before FOR UPDATE), the order every statement that changes
// several dead letters takes them in, then the counters; Close appends to
// the audit chain last.
var closeDeadLetters = StatusMove(`
    SELECT d.id, d.dead_lettered_at, d.status
    FROM unnest($1::bigint[], $6::timestamptz[]) AS k(id, at)
    JOIN dead_letters d ON d.id = k.id AND d.dead_lettered_at = k.at
    WHERE d.status IN ('quarantined', 'replay_failed') -- never close one being replayed or already closed
      AND ($3 = 0 OR d.version = $3)                   -- the version the actor saw
      AND (d.tenant = ANY($4) OR $5)
    ORDER BY d.id, d.dead_lettered_at
    FOR UPDATE OF d`, "$2", "id, tenant, msg_id, operation_id, version - 1")

// Close discards dead letters, or marks them resolved by hand, with a
// reason; one audit row per item in the same transaction. It is atomic: if
// any named dead letter is missing, outside the scope, or not open
// (quarantined or replay failed), nothing changes and it returns a conflict
// (not_found for a single item outside the scope). The ids it refuses in
// the scope, ids of no dead letter and in.Refused are audited as denied
// (a row per tenant), with the closing when it happens; those the actor may
// not see are the route's to audit. Only in.Refused, nothing to close:
// forbidden, audited.
func (s *Store) Close(ctx context.Context, in CloseInput, actor quarantine.Actor, meta quarantine.RequestMeta) (int, error) {
	in.Reason = strings.TrimSpace(in.Reason)
	in.IDs = UniqueIDs(in.IDs)
	switch {
	case in.To != StatusDiscarded && in.To != StatusResolved:
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EINVALID, "status %q is not discarded or resolved", in.To))
	case len(in.IDs) == 0 && in.Refused.Len() > 0:
		if _, err := audit.AppendBatchFunc(ctx, s.pool, in.Refused.Events(audit.NewEvent(actor, meta, closeAction(in.To)))); err != nil {
			return 0, fmt.Errorf("close dead letters: audit refused: %w", err)
		}
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EFORBIDDEN, "you may not close any of the %d selected where they are", in.Refused.Len()))
	case in.Reason == "":
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EINVALID, "a reason is required"))
	case len(in.Reason) > MaxCloseReason:
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EINVALID, "a reason of at most %d bytes", MaxCloseReason))
	case len(in.IDs) == 0:
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EINVALID, "select at least one"))
	case len(in.IDs) > MaxBulkClose:
		return 0, fmt.Errorf("close dead letters: %w", quarantine.Errorf(quarantine.EINVALID, "at most %d at once, got %d", MaxBulkClose, len(in.IDs)))
	}
	keys, err := s.Keys(ctx, in.IDs)
	if err != nil {
		return 0, fmt.Errorf("close dead letters: %w", err)
	}
	kid, kat := KeyArrays(keys)
	n := 0
	var done []int64 // what the UPDATE took, before it rolled back
	err = InTx(ctx, s.pool, func(tx pgx.Tx) error {
		n, done = 0, nil // a run again starts afresh
		rows, err := tx.Query(ctx, closeDeadLetters, kid, in.To, in.Version, in.Tenants, in.All, kat)
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
				if len(keys) == 0 || !(in.All || slices.Contains(in.Tenants, keys[0].Tenant)) {
					return errNoDeadLetter
				}
				return quarantine.Errorf(quarantine.ECONFLICT, "it changed since you loaded it, or it is not open any more")
			}
			return quarantine.Errorf(quarantine.ECONFLICT, "%d of the %d selected are not open any more (or not yours); nothing was changed", len(in.IDs)-len(events), len(in.IDs))
		}
		n = len(events)
		events = append(events, in.Refused.Events(audit.NewEvent(actor, meta, closeAction(in.To)))...)
		_, err = audit.AppendBatch(ctx, tx, events)
		return err
	})
	if quarantine.ErrorCode(err) == quarantine.ECONFLICT {
		if aerr := s.auditRefusedClose(ctx, in, keys, done, actor, meta); aerr != nil {
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
func (s *Store) auditRefusedClose(ctx context.Context, in CloseInput, keys []Key, done []int64, actor quarantine.Actor, meta quarantine.RequestMeta) error {
	kid, kat := KeyArrays(keys)
	rows, err := s.pool.Query(ctx, `SELECT d.id, d.tenant, d.status, d.version FROM unnest($1::bigint[], $2::timestamptz[]) AS k(id, at)
        JOIN dead_letters d ON d.id = k.id AND d.dead_lettered_at = k.at`, kid, kat)
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
	refused.Merge(in.Refused)
	for _, id := range in.IDs {
		st, ok := found[id]
		switch {
		case slices.Contains(done, id):
		case !ok:
			refused.AddMissing(id)
		case !in.All && !slices.Contains(in.Tenants, st.tenant):
			// another tenant's: the route audited it
		case st.status != StatusQuarantined && st.status != StatusReplayFailed:
			refused.Add(id, st.tenant, fmt.Sprintf("not open (%s)", st.status))
		default:
			refused.Add(id, st.tenant, fmt.Sprintf("changed since it was loaded (version %d)", st.version))
		}
	}
	if refused.Len() == 0 {
		return nil
	}
	e := audit.NewEvent(actor, meta, closeAction(in.To))
	if _, err := audit.AppendBatchFunc(ctx, s.pool, refused.Events(e)); err != nil {
		return fmt.Errorf("audit refused close: %w", err)
	}
	return nil
}
