package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
// SnoozedUntil, or once SnoozeGrowBy more dead letters of the group have
// arrived in the tenant than SnoozeBase, whichever comes first.
type GroupTriage struct {
	Tenant       string
	Fingerprint  string
	Owner        string
	Note         string
	TicketURL    string
	SnoozedUntil time.Time // zero: no time limit
	SnoozeBase   int64     // the group's arrivals in the tenant when snoozed
	SnoozeGrowBy int64     // 0: no growth limit
	// Arrived is how many dead letters of the group ever arrived in the
	// tenant (dead_letter_groups.arrived: deletes do not lower it); Snoozed
	// says the snooze has not ended.
	Arrived   int64
	Snoozed   bool
	UpdatedAt time.Time
	UpdatedBy string
}

// groupArrived is how many dead letters of the group of group_triage row t
// ever arrived in its tenant: the group counters' arrivals, which only go
// up (a retention run that removes thousands does not put off a snooze's
// end by as many arrivals).
const groupArrived = `(SELECT coalesce(sum(x.arrived), 0) FROM dead_letter_groups x WHERE x.tenant = t.tenant AND x.fingerprint = t.fingerprint)`

// snoozedNow is true for a group_triage row t whose snooze has not ended:
// its time has not come and not enough dead letters of the group arrived
// since (groupArrived).
const snoozedNow = `((t.snoozed_until IS NOT NULL OR t.snooze_grow_by IS NOT NULL)
    AND (t.snoozed_until IS NULL OR t.snoozed_until > now())
    AND (t.snooze_grow_by IS NULL OR t.snooze_base + t.snooze_grow_by > ` + groupArrived + `))`

const selectGroupTriage = `
SELECT t.tenant, t.fingerprint, t.owner, t.note, t.ticket_url, t.snoozed_until, coalesce(t.snooze_base, 0),
       coalesce(t.snooze_grow_by, 0),
       ` + groupArrived + `, ` + snoozedNow + `, t.updated_at, t.updated_by
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
			&g.Arrived, &g.Snoozed, &g.UpdatedAt, &g.UpdatedBy)
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

// SnoozeInput is how long a group stays out of sight: for a time, until a
// number of its dead letters arrive, or whichever comes first. KeepUntil
// keeps the time limit of the snooze the group has now (none when it is
// not snoozed, or its snooze has none) instead of For: a count typed with
// the snooze "left as it is" adds a count to it.
type SnoozeInput struct {
	// For is the time limit, from the database's clock when the snooze is
	// stored, by which it is judged ended (snoozedNow): a limit reckoned
	// on a console's clock would hide the group longer, or not at all, by
	// that console's skew (TestRevClock18FastConsoleSnoozeHidesAGroupPastItsTime).
	// Zero: no time limit.
	For       time.Duration
	GrowBy    int64 // 0: no growth limit
	KeepUntil bool
}

// The group's arrivals in a tenant: those counted (dead_letter_groups.arrived)
// and those stored but not yet folded into the counters (every delta is an
// arrival), in one snapshot: a snooze "until N more arrive" counts from
// what was stored before it, not from what the folder had counted (in a
// flood, thousands behind). No row means no such group there.
const selectGroupArrived = `SELECT sum(arrived)::bigint + coalesce((SELECT sum(n) FROM dead_letter_deltas d WHERE d.tenant = $1 AND d.fingerprint = $2), 0)::bigint
    FROM dead_letter_groups WHERE tenant = $1 AND fingerprint = $2 HAVING count(*) > 0`

// Each part of a change of group_triage writes its row (made on first use,
// ensureTriage); selectTriageForUpdate reads it as it was before, for the
// audit entries.
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
	// A NULL note ($3) or ticket ($4) is left as it is: a save of one
	// does not put back the other as the form drew it.
	upsertNote = `INSERT INTO group_triage AS t (tenant, fingerprint, note, ticket_url, updated_by)
    VALUES ($1, $2, coalesce($3, ''), coalesce($4, ''), $5)
    ON CONFLICT (tenant, fingerprint) DO UPDATE SET note = coalesce($3, t.note), ticket_url = coalesce($4, t.ticket_url),
        updated_at = now(), updated_by = $5`
	// The group's row is made, blank, before selectTriageForUpdate reads
	// it: FOR UPDATE locks nothing that is not there, so a save that
	// inserted the row meanwhile would be overwritten by this one's
	// upserts while this one's audit rows said there was no row before
	// (and a snooze that keeps its time would drop the other's). A save
	// whose insert is not committed yet makes this one wait for it, then
	// do nothing. It returns a row only when it made the row: there was
	// none before. Every save writes a part of the row, or fails and
	// rolls the blank row back with it.
	ensureTriage = `INSERT INTO group_triage (tenant, fingerprint) VALUES ($1, $2)
    ON CONFLICT (tenant, fingerprint) DO NOTHING RETURNING true`
)

// selectTriageForUpdate reads the group's row as it was before a save
// (for the audit entries), locked, and which of the owner, the note and
// the ticket ($3, $4, $5: what the person saw; NULL: not known) it no
// longer holds as seen (drawnAsNow). The row stays locked until the save
// commits, so what it compares is what the parts are written over: the
// compare and the set are one transaction's.
var selectTriageForUpdate = `SELECT t.owner, t.note, t.ticket_url, t.snoozed_until, t.snooze_grow_by, ` + snoozedNow + `,
        t.updated_at, t.updated_by,
        NOT ` + drawnAsNow("t.owner", "$3") + `, NOT ` + drawnAsNow("t.note", "$4") + `, NOT ` + drawnAsNow("t.ticket_url", "$5") + `
    FROM group_triage t
    WHERE t.tenant = $1 AND t.fingerprint = $2 FOR UPDATE OF t`

// drawnAsNow is true when text column col holds what param (a text
// parameter) says a form showed of it, or param is NULL (nothing was
// shown). Line breaks count as one: a browser sends a form's hidden field
// with every line break as CR LF, whatever the page held.
func drawnAsNow(col, param string) string {
	lf := func(x string) string { return `regexp_replace(` + x + `, E'\r\n?', E'\n', 'g')` }
	return `(` + param + `::text IS NULL OR ` + lf(col) + ` = ` + lf(param+`::text`) + `)`
}

var errNoGroup = quarantine.Errorf(quarantine.ENOTFOUND, "There is no such error group.")

// TriageConflict is the error TriageGroup returns when a part of a change
// (owner, note, ticket) is no longer what the person saw when they changed
// it (GroupChange.OwnerWas, NoteWas, TicketWas): someone changed it
// meanwhile, and nothing of the change was written. It unwraps to a
// conflict quarantine.Error.
type TriageConflict struct {
	// Parts are those changed meanwhile, in the order "owner", "note",
	// "ticket".
	Parts []string
	// Now is the group's triage as it is (Owner, Note, TicketURL, Snoozed,
	// UpdatedAt and UpdatedBy: the row's last change, of any part).
	Now GroupTriage
}

func (e *TriageConflict) Error() string { return e.Unwrap().Error() }

// Unwrap returns the conflict, in words for the person.
func (e *TriageConflict) Unwrap() error {
	return quarantine.Errorf(quarantine.ECONFLICT, "The group's %s changed meanwhile: nothing was saved.", strings.Join(e.Parts, " and "))
}

// GroupChange is what one save changes of an error group's triage in a
// tenant; a nil part is left as it was (the note and the ticket link are
// parts of their own: a save of one keeps the other as it is now). Snooze
// and Wake exclude each other.
type GroupChange struct {
	Owner  *string // an email or a team; "": nobody
	Note   *string // "": none
	Ticket *string // a link to the group's ticket; "": none
	// OwnerWas, NoteWas and TicketWas are what the person saw of the
	// owner, the note and the ticket when they changed it (nil: not
	// known; the part is written whatever the row holds). A part the row
	// no longer holds as seen is a conflict (TriageConflict), and nothing
	// is written: a save does not write blind over what a colleague wrote
	// meanwhile.
	OwnerWas, NoteWas, TicketWas *string
	Snooze                       *SnoozeInput
	Wake                         bool // end the snooze now
}

// Empty is true for a change that changes nothing.
func (c GroupChange) Empty() bool {
	return c.Owner == nil && c.Note == nil && c.Ticket == nil && c.Snooze == nil && !c.Wake
}

// check returns an invalid quarantine.Error for a change no save may make:
// text that is not StorableText, a snooze that never ends, or a snooze and
// a wake at once.
func (c GroupChange) check() error {
	switch {
	case c.Owner != nil && !StorableText(*c.Owner),
		c.Note != nil && !StorableText(*c.Note), c.Ticket != nil && !StorableText(*c.Ticket),
		!storableOrNil(c.OwnerWas), !storableOrNil(c.NoteWas), !storableOrNil(c.TicketWas):
		return quarantine.Errorf(quarantine.EINVALID, "%s", UnstorableTextMessage)
	case c.Snooze != nil && c.Wake:
		return quarantine.Errorf(quarantine.EINVALID, "a group is either snoozed or woken, not both")
	case c.Snooze != nil && c.Snooze.For < 0:
		return quarantine.Errorf(quarantine.EINVALID, "a snooze's time limit is ahead")
	case c.Snooze != nil && c.Snooze.KeepUntil && (c.Snooze.For != 0 || c.Snooze.GrowBy <= 0):
		return quarantine.Errorf(quarantine.EINVALID, "a snooze that keeps its time limit takes a number of new dead letters, and no time")
	case c.Snooze != nil && c.Snooze.For == 0 && c.Snooze.GrowBy <= 0:
		return quarantine.Errorf(quarantine.EINVALID, "a snooze needs an end: a time, or a number of new dead letters")
	}
	return nil
}

// storableOrNil is true for nil and StorableText.
func storableOrNil(s *string) bool { return s == nil || StorableText(*s) }

// SnoozeGroup hides g from the groups page and the dashboard until in says
// (its arrivals now are what growth counts from), audited as group.snooze. It
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
	return s.TriageGroup(ctx, g, GroupChange{Note: &note, Ticket: &ticketURL}, actor, meta)
}

// TriageGroup makes every part of ch on g's triage row in one transaction,
// each part with its audit entry (group.assign, group.note, group.snooze,
// group.wake; before: the row as it was), so that a save of the group's
// panel lands whole or not at all. A snooze counts growth from the group's
// arrivals now; one that keeps its time limit (SnoozeInput.KeepUntil)
// keeps the one the group's snooze has now, if it has not ended. It returns a not_found quarantine.Error when the tenant has no
// dead letter of the group, an invalid one for a change check refuses
// (nothing is written), a *TriageConflict when a part ch changes is no
// longer what its *Was says the person saw, and a conflict for a wake of
// a group that is not snoozed (nothing is written either, in both). An
// empty ch writes nothing.
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
		var arrived int64
		if err := tx.QueryRow(ctx, selectGroupArrived, g.Tenant, g.Fingerprint).Scan(&arrived); errors.Is(err, pgx.ErrNoRows) {
			return errNoGroup
		} else if err != nil {
			return err
		}
		var made bool
		if err := tx.QueryRow(ctx, ensureTriage, g.Tenant, g.Fingerprint).Scan(&made); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var before map[string]any // nil: the group had no row
		var owner, note, ticket string
		var until *time.Time
		var grow *int64
		var snoozed bool
		var at time.Time
		var lastBy string
		var ownerMoved, noteMoved, ticketMoved bool
		if err := tx.QueryRow(ctx, selectTriageForUpdate, g.Tenant, g.Fingerprint, ch.OwnerWas, ch.NoteWas, ch.TicketWas).Scan(
			&owner, &note, &ticket, &until, &grow, &snoozed, &at, &lastBy, &ownerMoved, &noteMoved, &ticketMoved); err != nil {
			return err
		}
		// Only a part this save changes conflicts: one it leaves alone
		// keeps what the row holds.
		var moved []string
		for _, p := range []struct {
			name          string
			changed, gone bool
		}{{"owner", ch.Owner != nil, ownerMoved}, {"note", ch.Note != nil, noteMoved}, {"ticket", ch.Ticket != nil, ticketMoved}} {
			if p.changed && p.gone {
				moved = append(moved, p.name)
			}
		}
		if len(moved) > 0 {
			return &TriageConflict{Parts: moved, Now: GroupTriage{Tenant: g.Tenant, Fingerprint: g.Fingerprint, Owner: owner, Note: note,
				TicketURL: ticket, Snoozed: snoozed, UpdatedAt: at, UpdatedBy: lastBy}}
		}
		if !made {
			before = map[string]any{"owner": owner, "note": note, "ticket_url": ticket, "snoozed_until": until, "grow_by": grow}
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
		if ch.Note != nil || ch.Ticket != nil {
			if _, err := tx.Exec(ctx, upsertNote, g.Tenant, g.Fingerprint, ch.Note, ch.Ticket, by); err != nil {
				return err
			}
			after := map[string]any{} // only the parts written
			if ch.Note != nil {
				after["note"] = *ch.Note
			}
			if ch.Ticket != nil {
				after["ticket_url"] = *ch.Ticket
			}
			if err := audited(audit.ActionGroupNote, after); err != nil {
				return err
			}
		}
		if in := ch.Snooze; in != nil {
			var to *time.Time
			switch {
			case in.KeepUntil && snoozed:
				to = until // the snooze's time limit as it is now (nil: none)
			case in.For > 0:
				var end time.Time
				if err := tx.QueryRow(ctx, `SELECT now() + $1::interval`, in.For.String()).Scan(&end); err != nil {
					return err
				}
				to = &end
			}
			var base, grow *int64
			if in.GrowBy > 0 {
				base, grow = &arrived, &in.GrowBy
			}
			if _, err := tx.Exec(ctx, upsertSnooze, g.Tenant, g.Fingerprint, to, base, grow, by); err != nil {
				return err
			}
			if err := audited(audit.ActionGroupSnooze, map[string]any{"snoozed_until": to, "arrived": arrived, "grow_by": grow}); err != nil {
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
			if err := audited(audit.ActionGroupWake, map[string]any{"snoozed": false, "arrived": arrived}); err != nil {
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
