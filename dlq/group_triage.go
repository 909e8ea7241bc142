package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// Bounds of what people write about a group (group_triage_bounds_check).
const (
	MaxGroupOwner = 320
	MaxGroupNote  = 2000
)

// GroupTriage is what people recorded about an error group in one tenant:
// who owns it, a note and a ticket link, and a snooze. A snooze ends at
// SnoozedUntil, or once the group holds SnoozeGrowBy more dead letters in
// the tenant than SnoozeBase, whichever comes first.
type GroupTriage struct {
	Tenant       string
	Fingerprint  string
	Owner        string
	Note         string
	TicketURL    string
	SnoozedUntil time.Time // zero: no time limit
	SnoozeBase   int64     // the group's size in the tenant when snoozed
	SnoozeGrowBy int64     // 0: no growth limit
	// Size is the group's size in the tenant now; Snoozed says the snooze
	// has not ended.
	Size      int64
	Snoozed   bool
	UpdatedAt time.Time
	UpdatedBy string
}

// snoozedNow is true for a group_triage row t whose snooze has not ended:
// its time has not come and the group has not grown enough (its size in
// the tenant summed from the group counters).
const snoozedNow = `((t.snoozed_until IS NOT NULL OR t.snooze_grow_by IS NOT NULL)
    AND (t.snoozed_until IS NULL OR t.snoozed_until > now())
    AND (t.snooze_grow_by IS NULL OR t.snooze_base + t.snooze_grow_by >
         (SELECT coalesce(sum(x.n), 0) FROM dead_letter_groups x WHERE x.tenant = t.tenant AND x.fingerprint = t.fingerprint)))`

const selectGroupTriage = `
SELECT t.tenant, t.fingerprint, t.owner, t.note, t.ticket_url, t.snoozed_until, coalesce(t.snooze_base, 0),
       coalesce(t.snooze_grow_by, 0),
       (SELECT coalesce(sum(x.n), 0) FROM dead_letter_groups x WHERE x.tenant = t.tenant AND x.fingerprint = t.fingerprint),
       ` + snoozedNow + `, t.updated_at, t.updated_by
FROM group_triage t
WHERE t.tenant = ANY($1) AND t.fingerprint = ANY($2)
ORDER BY t.fingerprint, t.tenant`

// GroupTriage returns what was recorded about the groups fingerprints in
// tenants (only the pairs that have a record), by fingerprint, then tenant.
func (s *Store) GroupTriage(ctx context.Context, tenants, fingerprints []string) ([]GroupTriage, error) {
	if len(tenants) == 0 || len(fingerprints) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, selectGroupTriage, tenants, fingerprints)
	if err != nil {
		return nil, fmt.Errorf("read group triage: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (GroupTriage, error) {
		var g GroupTriage
		var until *time.Time
		err := row.Scan(&g.Tenant, &g.Fingerprint, &g.Owner, &g.Note, &g.TicketURL, &until, &g.SnoozeBase, &g.SnoozeGrowBy,
			&g.Size, &g.Snoozed, &g.UpdatedAt, &g.UpdatedBy)
		if until != nil {
			g.SnoozedUntil = *until
		}
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("read group triage: %w", err)
	}
	return out, nil
}

// GroupRef names an error group in one tenant.
type GroupRef struct {
	Tenant      string
	Fingerprint string
}

// SnoozeInput is how long a group stays out of sight: until a time, until
// it grows by a number of dead letters, or whichever comes first.
type SnoozeInput struct {
	Until  time.Time // zero: no time limit
	GrowBy int64     // 0: no growth limit
}

// The group's size in a tenant; no row means no such group there.
const selectGroupSize = `SELECT sum(n)::bigint FROM dead_letter_groups WHERE tenant = $1 AND fingerprint = $2 HAVING count(*) > 0`

// Each part of a change of group_triage writes its row (made on first use);
// selectTriageForUpdate reads it as it was before, for the audit entries.
const (
	upsertSnooze = `INSERT INTO group_triage AS t (tenant, fingerprint, snoozed_until, snooze_base, snooze_grow_by, updated_by)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (tenant, fingerprint) DO UPDATE SET snoozed_until = $3, snooze_base = $4, snooze_grow_by = $5,
        updated_at = now(), updated_by = $6`
	// Waking a group that is not snoozed changes nothing (and reports no row).
	updateWake = `UPDATE group_triage t SET snoozed_until = NULL, snooze_base = NULL, snooze_grow_by = NULL,
        updated_at = now(), updated_by = $3
    WHERE t.tenant = $1 AND t.fingerprint = $2 AND ` + snoozedNow
	upsertOwner = `INSERT INTO group_triage AS t (tenant, fingerprint, owner, updated_by) VALUES ($1, $2, $3, $4)
    ON CONFLICT (tenant, fingerprint) DO UPDATE SET owner = $3, updated_at = now(), updated_by = $4`
	upsertNote = `INSERT INTO group_triage AS t (tenant, fingerprint, note, ticket_url, updated_by) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (tenant, fingerprint) DO UPDATE SET note = $3, ticket_url = $4, updated_at = now(), updated_by = $5`
	selectTriageForUpdate = `SELECT owner, note, ticket_url, snoozed_until, snooze_grow_by FROM group_triage
    WHERE tenant = $1 AND fingerprint = $2 FOR UPDATE`
)

var errNoGroup = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such error group.")

// GroupChange is what one save changes of an error group's triage in a
// tenant; a nil part is left as it was. Snooze and Wake exclude each other.
type GroupChange struct {
	Owner  *string // an email or a team; "": nobody
	Note   *GroupNote
	Snooze *SnoozeInput
	Wake   bool // end the snooze now
}

// GroupNote is a note about a group and a link to its ticket (either may
// be empty); they are saved together.
type GroupNote struct {
	Note, TicketURL string
}

// Empty is true for a change that changes nothing.
func (c GroupChange) Empty() bool {
	return c.Owner == nil && c.Note == nil && c.Snooze == nil && !c.Wake
}

// check returns an invalid quarantine.Error for a change no save may make:
// text that is not StorableText, a snooze that never ends, or a snooze and
// a wake at once.
func (c GroupChange) check() error {
	switch {
	case c.Owner != nil && !StorableText(*c.Owner),
		c.Note != nil && (!StorableText(c.Note.Note) || !StorableText(c.Note.TicketURL)):
		return quarantine.Errorf(quarantine.EINVALID, "%s", UnstorableTextMessage)
	case c.Snooze != nil && c.Wake:
		return quarantine.Errorf(quarantine.EINVALID, "a group is either snoozed or woken, not both")
	case c.Snooze != nil && c.Snooze.Until.IsZero() && c.Snooze.GrowBy <= 0:
		return quarantine.Errorf(quarantine.EINVALID, "a snooze needs an end: a time, or a number of new dead letters")
	}
	return nil
}

// SnoozeGroup hides g from the groups page and the dashboard until in says
// (its size now is what growth counts from), audited as group.snooze. It
// returns a not_found quarantine.Error when the tenant has no dead letter
// of the group, and an invalid one for a snooze that never ends.
func (s *Store) SnoozeGroup(ctx context.Context, g GroupRef, in SnoozeInput, actor quarantine.Actor, meta quarantine.RequestMeta) error {
	return s.TriageGroup(ctx, g, GroupChange{Snooze: &in}, actor, meta)
}

// WakeGroup ends g's snooze now, audited as group.wake. It returns a
// conflict when g is not snoozed.
func (s *Store) WakeGroup(ctx context.Context, g GroupRef, actor quarantine.Actor, meta quarantine.RequestMeta) error {
	return s.TriageGroup(ctx, g, GroupChange{Wake: true}, actor, meta)
}

// AssignGroup makes owner (an email or a team; empty: nobody) the owner of
// g, audited as group.assign. An owner that is not StorableText is
// invalid.
func (s *Store) AssignGroup(ctx context.Context, g GroupRef, owner string, actor quarantine.Actor, meta quarantine.RequestMeta) error {
	return s.TriageGroup(ctx, g, GroupChange{Owner: &owner}, actor, meta)
}

// NoteGroup records a note and a ticket link (either may be empty) for g,
// audited as group.note. Text that is not StorableText is invalid.
func (s *Store) NoteGroup(ctx context.Context, g GroupRef, note, ticketURL string, actor quarantine.Actor, meta quarantine.RequestMeta) error {
	return s.TriageGroup(ctx, g, GroupChange{Note: &GroupNote{Note: note, TicketURL: ticketURL}}, actor, meta)
}

// TriageGroup makes every part of ch on g's triage row in one transaction,
// each part with its audit entry (group.assign, group.note, group.snooze,
// group.wake; before: the row as it was), so that a save of the group's
// panel lands whole or not at all. A snooze counts growth from the group's
// size now. It returns a not_found quarantine.Error when the tenant has no
// dead letter of the group, an invalid one for a change check refuses
// (nothing is written), and a conflict for a wake of a group that is not
// snoozed (nothing is written either). An empty ch writes nothing.
func (s *Store) TriageGroup(ctx context.Context, g GroupRef, ch GroupChange, actor quarantine.Actor, meta quarantine.RequestMeta) error {
	if err := ch.check(); err != nil {
		return fmt.Errorf("triage group %s in %s: %w", g.Fingerprint, g.Tenant, err)
	}
	if ch.Empty() {
		return nil
	}
	// One triage row (the group's counters are only read), then the audit
	// chain: no lock race to lose (pgx.BeginFunc, not InTx).
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var size int64
		if err := tx.QueryRow(ctx, selectGroupSize, g.Tenant, g.Fingerprint).Scan(&size); errors.Is(err, pgx.ErrNoRows) {
			return errNoGroup
		} else if err != nil {
			return err
		}
		var before map[string]any
		var owner, note, ticket string
		var until *time.Time
		var grow *int64
		err := tx.QueryRow(ctx, selectTriageForUpdate, g.Tenant, g.Fingerprint).Scan(&owner, &note, &ticket, &until, &grow)
		switch {
		case err == nil:
			before = map[string]any{"owner": owner, "note": note, "ticket_url": ticket, "snoozed_until": until, "grow_by": grow}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		by := actor.Attribution()
		audited := func(action string, after map[string]any) error {
			e := audit.NewEvent(actor, meta, action)
			e.Tenant, e.ObjectType, e.ObjectID, e.Before, e.After = g.Tenant, "error_group", g.Fingerprint, before, after
			_, err := audit.Append(ctx, tx, e)
			return err
		}
		if ch.Owner != nil {
			if _, err := tx.Exec(ctx, upsertOwner, g.Tenant, g.Fingerprint, *ch.Owner, by); err != nil {
				return err
			}
			if err := audited(audit.ActionGroupAssign, map[string]any{"owner": *ch.Owner}); err != nil {
				return err
			}
		}
		if n := ch.Note; n != nil {
			if _, err := tx.Exec(ctx, upsertNote, g.Tenant, g.Fingerprint, n.Note, n.TicketURL, by); err != nil {
				return err
			}
			if err := audited(audit.ActionGroupNote, map[string]any{"note": n.Note, "ticket_url": n.TicketURL}); err != nil {
				return err
			}
		}
		if in := ch.Snooze; in != nil {
			var until *time.Time
			if !in.Until.IsZero() {
				until = &in.Until
			}
			var base, grow *int64
			if in.GrowBy > 0 {
				base, grow = &size, &in.GrowBy
			}
			if _, err := tx.Exec(ctx, upsertSnooze, g.Tenant, g.Fingerprint, until, base, grow, by); err != nil {
				return err
			}
			if err := audited(audit.ActionGroupSnooze, map[string]any{"snoozed_until": until, "size": size, "grow_by": grow}); err != nil {
				return err
			}
		}
		if ch.Wake {
			tag, err := tx.Exec(ctx, updateWake, g.Tenant, g.Fingerprint, by)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return quarantine.Errorf(quarantine.ECONFLICT, "The group is not snoozed.")
			}
			if err := audited(audit.ActionGroupWake, map[string]any{"snoozed": false, "size": size}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("triage group %s in %s: %w", g.Fingerprint, g.Tenant, err)
	}
	return nil
}

// The tenants of tenants where a group has dead letters.
const selectGroupTenants = `SELECT DISTINCT tenant FROM dead_letter_groups
WHERE tenant = ANY($1) AND fingerprint = $2 AND n > 0 ORDER BY tenant`

// GroupTenants returns the tenants of tenants where the group fingerprint
// has dead letters.
func (s *Store) GroupTenants(ctx context.Context, tenants []string, fingerprint string) ([]string, error) {
	rows, err := s.pool.Query(ctx, selectGroupTenants, tenants, fingerprint)
	if err != nil {
		return nil, fmt.Errorf("read group tenants: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read group tenants: %w", err)
	}
	return out, nil
}
