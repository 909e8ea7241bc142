package dlq

import (
	"context"
	"errors"
	"fmt"

	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
)

// Retention removes dead letters once they are older than the policy keeps
// them (RetentionPolicy), old by the later of when JetStream stored them
// and when the console did (mayGo), in runs: one run is one transaction that either
// empties a whole past day's partition, when everything in it may go, or
// deletes a bounded batch of rows otherwise; either way it subtracts what
// it removed from the counters, clears edited payload copies of finished
// replay requests that named them, writes one audit row per tenant it
// removed dead letters of (action ActionPurgeTenant, in that tenant: how
// many of its dead letters, by status, and their time range, naming no
// other tenant), then the run's own row, outside any tenant (action
// ActionPurge: how many, of which tenants and statuses, the time range,
// the partition), and signs the audit chain's head (a checkpoint saying
// what is about to go) before it commits. It keeps the source key of each
// dead letter it removes (dead_letters_purged), so that ingest does not
// store it again when the DLQ stream delivers its message again, until that
// message is gone from the stream (trimPurgedKeys), and writes onto the
// replay items naming a dead letter it removes what a later Dlq-Replay-Of
// claim naming it needs (keepDayOrigins). It never removes a dead letter
// that a replay request not yet closed names (replay_requested, replaying,
// or an item of an open request, a draft included), nor one whose replay
// waits for a person to reconcile it (needs_reconciliation: its item stays
// held after the request ended), and it never touches the audit log.

// ActionPurge is the audit action of a retention run: one entry outside
// any tenant, for auditors of every tenant.
const ActionPurge = audit.ActionRetentionPurge

// ActionPurgeTenant is the audit action of what a retention run removed of
// one tenant's dead letters: one entry in that tenant per tenant the run
// removed dead letters of, before the run's own entry, so that the
// tenant's auditors find it.
const ActionPurgeTenant = audit.ActionRetentionPurgeTenant

// RetentionPolicy says how long dead letters are kept.
type RetentionPolicy interface {
	// Keep returns how long a dead letter of tenant and item type with
	// status is kept; ok is false for one retention never removes.
	Keep(tenant, itemType string, status Status) (d time.Duration, ok bool)
	// Longest returns the longest period any dead letter is kept; ok is
	// false when some are kept for good. A past day older than that holds
	// nothing that must stay but what an open replay request names and
	// what the console stored within that period (mayGo).
	Longest() (d time.Duration, ok bool)
}

// Checkpointer signs the audit chain's head in tx with reason (at most 64
// bytes): audit.Record with the console's signer.
type Checkpointer func(ctx context.Context, tx pgx.Tx, reason string) error

// PurgeRun is what one retention run removed.
type PurgeRun struct {
	// Partition is the day partition it emptied; empty for a batch of rows.
	Partition string
	Rows      int64
	// From and To are the oldest and newest dead_lettered_at removed.
	From, To time.Time
	// By counts what was removed per tenant and status.
	By map[string]map[Status]int64
	// Spans are the oldest and newest dead_lettered_at removed per tenant.
	Spans map[string]Span
	// Pass is when the keeper pass that ran it began (the database's
	// clock): the runs of one pass share it, in their audit rows too.
	Pass time.Time
}

// closedRequest is the SQL list of replay request statuses that are over:
// a dead letter named by an item of any other request is kept.
const closedRequest = `('done', 'done_with_problems', 'rejected', 'cancelled', 'void')`

// What one day holds, counted under the lock holdDay takes (writes of the
// day wait, reads go on), per counter row and error group, with
// the newest age any of them has (the later of stored and arrived, mayGo).
const selectDayContents = `
SELECT tenant, item_type, error_class, status, fingerprint, count(*), min(dead_lettered_at), max(dead_lettered_at),
    max(greatest(dead_lettered_at, received_at))
FROM dead_letters WHERE dead_lettered_at >= $1 AND dead_lettered_at < $2
GROUP BY 1, 2, 3, 4, 5`

// The source keys of what a day holds are kept (dead_letters_purged):
// ingest does not store their messages again when the stream delivers
// them again (storedKeys). Each with the stream and sequence of the
// message it stands for, read from the delivery: the keeper removes it
// once the stream no longer holds that message (trimPurgedKeys).
const keepDayKeys = `INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq)
SELECT d.dead_lettered_at, d.source_key, pos.stream, pos.seq FROM dead_letters d
CROSS JOIN LATERAL quarantine_delivery_position(d.delivery) pos
WHERE d.dead_lettered_at >= $1 AND d.dead_lettered_at < $2 AND d.source_key IS NOT NULL
ON CONFLICT DO NOTHING`

// Edited payloads and the headers an item would send are copies of a
// dead letter's data: they go with it (the request keeps its item, its
// hashes, which bind the headers, and its reason).
const clearDayCopies = `UPDATE replay_items SET payload = NULL, headers = '[]'
WHERE dead_lettered_at >= $1 AND dead_lettered_at < $2 AND (payload IS NOT NULL OR headers <> '[]')`

// What a later dead letter naming one of the day's dead letters in
// Dlq-Replay-Of needs of it (dlq/ingest_replayof.go) is written onto the
// replay items that name it: the request, item and job stay, and the claim
// is linked, its generation continued, from them (migration 0042).
const keepDayOrigins = `UPDATE replay_items i SET origin_tenant = d.tenant, origin_msg_id = d.msg_id, origin_generation = d.generation
FROM dead_letters d
WHERE d.dead_lettered_at >= $1 AND d.dead_lettered_at < $2
  AND i.dead_letter_id = d.id AND i.dead_lettered_at = d.dead_lettered_at`

// purgeDay empties partition p (day [lo, lo+24h)) when everything in it may
// go by policy at now, in one transaction: counted under a lock (holdDay),
// counters subtracted, copies cleared, audited and checkpointed, then
// truncated, and nothing waited for after that. It returns false (and
// changes nothing) when something in it must stay.
func (s *Store) purgeDay(ctx context.Context, db beginner, p Partition, policy RetentionPolicy, sign Checkpointer, now time.Time) (PurgeRun, bool, error) {
	run := PurgeRun{Partition: p.Name, By: map[string]map[Status]int64{}, Pass: now}
	emptied := false
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setPurgeLockTimeout); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, holdDay, p.Name); err != nil {
			return err // 55P03: a writer of the day outlasted the wait; gaveWay
		}
		// A day an open request names is not emptied
		// (quarantine_dead_letter_partition_empty says so, last): asked
		// first too, so that such a day is not counted, kept and audited
		// for nothing every pass.
		var busy bool
		if err := tx.QueryRow(ctx, `SELECT quarantine_dead_letter_partition_busy($1::date)`, p.Day.UTC().Format(time.DateOnly)).Scan(&busy); err != nil {
			return err
		}
		if busy {
			return errKeep
		}
		rows, err := tx.Query(ctx, selectDayContents, p.Day, p.End())
		if err != nil {
			return err
		}
		var gone []departure
		var d departure
		var first, last, newest time.Time
		_, err = pgx.ForEachRow(rows, []any{&d.tenant, &d.itemType, &d.errorClass, &d.status, &d.fingerprint, &d.n, &first, &last, &newest}, func() error {
			if !mayGo(policy, d.tenant, d.itemType, Status(d.status), newest, now) {
				gone = nil
				return errKeep
			}
			gone = append(gone, d)
			run.add(d, first, last)
			return nil
		})
		if errors.Is(err, errKeep) || (err == nil && (len(gone) == 0 || run.pairs() > maxPurgeBreakdown)) {
			// Something stays, nothing is there, or more tenants and
			// statuses than one audit row names: no change (the day's dead
			// letters go in batches of rows).
			return errKeep
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, clearDayCopies, p.Day, p.End()); err != nil {
			return fmt.Errorf("clear edited copies: %w", err)
		}
		if _, err := tx.Exec(ctx, keepDayKeys, p.Day, p.End()); err != nil {
			return fmt.Errorf("keep source keys: %w", err)
		}
		if _, err := tx.Exec(ctx, keepDayOrigins, p.Day, p.End()); err != nil {
			return fmt.Errorf("keep replay origins: %w", err)
		}
		// The counters last before the audit: their rows are every day's
		// (a tenant, item type, class and status), which a close or a
		// submit of today's dead letters updates too, and stay locked to
		// the commit: not for the day's keys and origins as well.
		if err := subtract(ctx, tx, gone); err != nil {
			return err
		}
		// Audited and checkpointed before the day is emptied: appending
		// waits for the audit chain's lock (up to the run's lock_timeout)
		// behind any auditing transaction, and it does so holding only
		// the day's SHARE lock (reads go on), never the TRUNCATE's ACCESS
		// EXCLUSIVE, which every read of the day and every page reading all
		// days would wait behind. The run never waits for a lock while it
		// holds the day's exclusive one: from the TRUNCATE's lock to the
		// commit nothing else is asked for. The price: the chain's lock is
		// held while the TRUNCATE's is asked for (at most 300 ms), and the
		// audit rows roll back with the rest when the run gives way.
		if err := auditPurge(ctx, tx, run, sign); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT quarantine_dead_letter_partition_empty($1)`, p.Name); err != nil {
			// 55000: an open request names one of them. 55P03: the day stayed
			// in use, or a writer waits for it (holdDay); gaveWay. Either way
			// the whole run rolls back: nothing counted, kept, subtracted or
			// audited stays.
			return err
		}
		emptied = true
		return nil
	})
	if errors.Is(err, errKeep) || isOpenRequestRefusal(err) {
		return PurgeRun{}, false, nil
	}
	if err != nil {
		return PurgeRun{}, false, fmt.Errorf("purge %s: %w", p.Name, err)
	}
	return run, emptied, nil
}

// holdDay locks a past day's partition against writes (SHARE) before
// anything in it is counted, so that what the run counts is what it
// empties; reads of the day go on. A writer of the day waits for the run
// (the wait for this lock is bounded: 2 s, SQLSTATE 55P03, and the purge
// gives way). The TRUNCATE then needs ACCESS EXCLUSIVE: an upgrade, which
// quarantine_dead_letter_partition_empty asks for without queueing (NOWAIT,
// again every 10 ms for at most 300 ms, and at once 55P03 when a writer of
// the day waits for this run, which may hold a read lock the TRUNCATE needs
// gone). A queued request would deadlock with such a writer, and
// PostgreSQL finds a deadlock of two waiters on one table when the second
// asks, not after deadlock_timeout, so no lock_timeout prevents that 40P01;
// it would also hold up every reader of the day behind it (migration 0048;
// 0047 took ACCESS EXCLUSIVE up front instead, and every page that reads
// all days froze for the whole count). So readers of the day wait only
// from the TRUNCATE to the commit, and the purge is never part of a
// deadlock on the day, whatever deadlock_timeout is. The audit rows and
// the checkpoint come before the TRUNCATE (purgeDay): what commits after
// it asks for no lock.
const holdDay = `SELECT quarantine_dead_letter_partition_hold($1)`

// A run waits at most this long for any lock (a page reading the day, the
// audit chain): it gives way (gaveWay) and tries again at the next pass;
// the pass goes on without it.
const setPurgeLockTimeout = `SET LOCAL lock_timeout = '5s'`

// errKeep ends a day's purge that found something it must keep.
var errKeep = quarantine.Errorf(quarantine.ECONFLICT, "something in the day is kept")

// mayGo reports whether dead letters of this tenant, item type and status
// may all go at now; newest is the latest of their ages, each the later of
// when JetStream stored it (dead_lettered_at, the NATS server's clock) and
// when the console stored it (received_at, the database's). A dead letter
// is kept for its period from when it was dead-lettered, as the terms say;
// but that time alone may lie far back for one that just arrived (a server
// clock reset or behind, a stream restored from an old backup), which
// would then go at the next pass, seen by no one. Judged by the later of
// the two, no dead letter goes before it has been in the console for its
// whole period.
func mayGo(policy RetentionPolicy, tenant, itemType string, status Status, newest, now time.Time) bool {
	keep, ok := policy.Keep(tenant, itemType, status)
	return ok && newest.Before(now.Add(-max(keep, minKeep)))
}

// minKeep is how long retention keeps every dead letter whatever a policy
// says (replaypolicy allows no shorter period): ingest trusts that one
// dead-lettered less than purgeHorizon ago was never removed.
const minKeep = time.Hour

// Picks and locks a bounded batch: per counter row whose status retention
// removes, its dead letters past the cutoff ($5) both by when JetStream
// stored them and by when the console did (mayGo), at most $6 in all, leaving those a request not yet closed names as this
// statement sees them. The rows are locked FOR UPDATE, and a row another
// transaction holds is skipped: a draft being made locks the dead letters
// it reads (FOR KEY SHARE, see the replay package's selectForDraft), and
// its items are not committed yet, so this statement cannot see them.
const lockBatch = `
WITH c AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
        AS c(tenant, item_type, error_class, status, cutoff)
)
SELECT k.id, k.dead_lettered_at, c.status FROM c
CROSS JOIN LATERAL (
    SELECT d.id, d.dead_lettered_at FROM dead_letters d
    WHERE d.tenant = c.tenant AND d.item_type = c.item_type AND d.error_class = c.error_class AND d.status = c.status
      AND d.status >= c.status AND d.status <= c.status -- the same rows: see below
      AND d.dead_lettered_at < c.cutoff
      AND d.received_at < c.cutoff -- a stored time behind (a server clock reset) does not age a row that just came
      AND NOT EXISTS (` + namedByOpenRequest + `)
    LIMIT $6
    FOR UPDATE OF d SKIP LOCKED
) k
LIMIT $6`

// A lane of lockBatch reads dead_letters_dims_time_idx: its four columns
// pinned, then dead_lettered_at below the cutoff. The planner plans the
// lane once, for values it does not know (the outer row's), and estimates
// each equality by the column's distinct values: for a tenant of two item
// types it took every lane for half the tenant's rows, and read a rare
// combination's lane through the narrower tenant-time index from the
// oldest row, testing every row up to the cutoff, at every pass, due or
// not (TestRevRetention24RareLaneReadsTheTenantHistory). The status's
// one-value range, the same rows again, is estimated to keep 0.5 % of
// them: a lane is then a few rows, which the dims index finds in one
// range and the tenant-time index only by reading all of the tenant's.
// No ORDER BY: over partitions the planner may do an order it thinks
// small as a Sort of every due row of the lane (a backlog of millions at
// the first pass); without it a lane stops at $6 rows, read partition by
// partition in their order, the oldest first, each in the index's time
// order.

// namedByOpenRequest is true for dead letter d when a replay request not
// yet closed names it (a draft included), or an item of one still holds
// it: retention keeps it then, whatever its age.
const namedByOpenRequest = `SELECT 1 FROM ` + openRequestsNaming

// openRequestsNaming is the items (i) of the replay requests (r) that keep
// dead letter d from retention: namedByOpenRequest's rule, which
// QueueRetentionHold reads for a page.
const openRequestsNaming = `replay_items i JOIN replay_requests r ON r.id = i.request_id
    WHERE i.dead_letter_id = d.id AND i.dead_lettered_at = d.dead_lettered_at
      AND (i.held OR r.status NOT IN ` + closedRequest + `)`

// The request that keeps one dead letter from retention, by
// namedByOpenRequest's rule: one holding it first, then the newest.
const selectRetentionHold = `SELECT k.id, k.status FROM dead_letters d
CROSS JOIN LATERAL (
    SELECT r.id, r.status FROM ` + openRequestsNaming + `
    ORDER BY i.held DESC, r.id DESC LIMIT 1
) k
WHERE d.id = $1 AND d.dead_lettered_at >= $2 AND d.dead_lettered_at < $3`

// RetentionHold is the replay request that keeps a dead letter from
// retention whatever its age (Request 0: none does), with its status: one
// not yet closed that names it, a draft included, or one whose item still
// holds it. It is the keeper's own rule (namedByOpenRequest), so a page
// that says what retention does with a dead letter says what the keeper
// does.
type RetentionHold struct {
	Request int64
	Status  string
}

// QueueRetentionHold queues into b (a page's round trip) the read of the
// RetentionHold of dead letter id, whose dead_lettered_at is in [lo, hi);
// *out holds it once b has run (zero when no request keeps it).
func QueueRetentionHold(b *pgx.Batch, id int64, lo, hi time.Time, out *RetentionHold) {
	b.Queue(selectRetentionHold, id, lo, hi).Query(func(rows pgx.Rows) error {
		*out = RetentionHold{}
		_, err := pgx.ForEachRow(rows, []any{&out.Request, &out.Status}, func() error { return nil })
		if err != nil {
			return fmt.Errorf("read what keeps dead letter %d: %w", id, err)
		}
		return nil
	})
}

// Deletes the batch lockBatch locked ($1 ids, $2 their times, $3 the
// statuses they were picked with), asking again, in this statement's newer
// snapshot, whether a request not yet closed names them: a draft that
// locked one and committed while lockBatch waited is seen now, and no
// draft can lock them any more until this transaction ends. A status
// changed since (a replay requested, say) is judged again next run.
const deleteBatch = `
WITH v AS (
    SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) AS v(id, dead_lettered_at, status)
), gone AS (
    DELETE FROM dead_letters d USING v
    WHERE d.id = v.id AND d.dead_lettered_at = v.dead_lettered_at AND d.status = v.status
      AND NOT EXISTS (` + namedByOpenRequest + `)
    RETURNING d.id, d.dead_lettered_at, d.tenant, d.item_type, d.error_class, d.status, d.fingerprint, d.source_key, d.delivery,
        d.msg_id, d.generation
), cleared AS ( -- copies go (clearDayCopies); what a claim naming it needs stays (keepDayOrigins)
    UPDATE replay_items i SET payload = NULL, headers = '[]', origin_tenant = g.tenant, origin_msg_id = g.msg_id, origin_generation = g.generation
    FROM gone g
    WHERE i.dead_letter_id = g.id AND i.dead_lettered_at = g.dead_lettered_at
), kept AS ( -- their messages are not stored again (keepDayKeys)
    INSERT INTO dead_letters_purged (dead_lettered_at, source_key, stream, stream_seq)
    SELECT g.dead_lettered_at, g.source_key, pos.stream, pos.seq FROM gone g
    CROSS JOIN LATERAL quarantine_delivery_position(g.delivery) pos
    WHERE g.source_key IS NOT NULL
    ON CONFLICT DO NOTHING
)
SELECT tenant, item_type, error_class, status, fingerprint, count(*), min(dead_lettered_at), max(dead_lettered_at)
FROM gone GROUP BY 1, 2, 3, 4, 5`

// purgeRows deletes up to limit dead letters past their cutoff at now, in
// one transaction with the counters, the audit row and a checkpoint. combos
// are the counter rows to look in.
func (s *Store) purgeRows(ctx context.Context, db beginner, combos []DepthCount, policy RetentionPolicy, sign Checkpointer,
	now time.Time, limit int) (PurgeRun, error) {
	var tenants, types, classes, statuses []string
	var cutoffs []time.Time
	for _, c := range combos {
		keep, ok := policy.Keep(c.Tenant, c.ItemType, c.Status)
		if !ok || c.N <= 0 {
			continue
		}
		tenants, types, classes = append(tenants, c.Tenant), append(types, c.ItemType), append(classes, string(c.ErrorClass))
		statuses, cutoffs = append(statuses, string(c.Status)), append(cutoffs, now.Add(-max(keep, minKeep)))
	}
	run := PurgeRun{By: map[string]map[Status]int64{}, Pass: now}
	if len(tenants) == 0 {
		return run, nil
	}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, setPurgeLockTimeout); err != nil {
			return err
		}
		var ids []int64
		var ats []time.Time
		var sts []string
		var id int64
		var at time.Time
		var st string
		rows, err := tx.Query(ctx, lockBatch, tenants, types, classes, statuses, cutoffs, limit)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&id, &at, &st}, func() error {
			ids, ats, sts = append(ids, id), append(ats, at), append(sts, st)
			return nil
		}); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, deleteBatch, ids, ats, sts)
		if err != nil {
			return err
		}
		var gone []departure
		var d departure
		var first, last time.Time
		if _, err := pgx.ForEachRow(rows, []any{&d.tenant, &d.itemType, &d.errorClass, &d.status, &d.fingerprint, &d.n, &first, &last}, func() error {
			gone = append(gone, d)
			run.add(d, first, last)
			return nil
		}); err != nil {
			return err
		}
		if run.Rows == 0 {
			return nil
		}
		if err := subtract(ctx, tx, gone); err != nil {
			return err
		}
		return auditPurge(ctx, tx, run, sign)
	})
	if err != nil {
		return PurgeRun{}, fmt.Errorf("purge dead letters: %w", err)
	}
	return run, nil
}

// Span is the oldest (From) and newest (To) dead_lettered_at of what a
// run removed.
type Span struct{ From, To time.Time }

func (s *Span) add(first, last time.Time) {
	if s.From.IsZero() || first.Before(s.From) {
		s.From = first
	}
	if last.After(s.To) {
		s.To = last
	}
}

func (r *PurgeRun) add(d departure, first, last time.Time) {
	r.Rows += d.n
	all := Span{r.From, r.To}
	all.add(first, last)
	r.From, r.To = all.From, all.To
	if r.Spans == nil {
		r.Spans = map[string]Span{}
	}
	span := r.Spans[d.tenant]
	span.add(first, last)
	r.Spans[d.tenant] = span
	if r.By[d.tenant] == nil {
		r.By[d.tenant] = map[Status]int64{}
	}
	r.By[d.tenant][Status(d.status)] += d.n
}

// pairs is how many tenant and status pairs r removed.
func (r *PurgeRun) pairs() int {
	n := 0
	for _, sts := range r.By {
		n += len(sts)
	}
	return n
}

// maxPurgeBreakdown bounds the tenant and status pairs of one run, so that
// its audit row names every one (the row's After stays within what the
// audit log keeps whole, with tenants of up to 128 bytes): a day that holds
// more goes in batches of rows, each of at most this many pairs.
const maxPurgeBreakdown = 100

// purgeCheckpointReason is the reason of a run's checkpoint.
const purgeCheckpointReason = "retention purge"

// auditPurge writes the audit rows of the run, then signs the chain's head
// with them: the signed head says what is about to go. First one row per
// tenant the run removed dead letters of, in that tenant (ActionPurgeTenant),
// so that an auditor who may read only that tenant finds what went of it:
// its own counts by status and its own time range, nothing of any other
// tenant. Then the run's row outside any tenant (ActionPurge), which names
// every tenant and is for auditors of all of them; it is the head the
// checkpoint signs. The checkpoint's reason names no tenant and no count:
// every auditor sees the newest checkpoint.
func auditPurge(ctx context.Context, tx pgx.Tx, run PurgeRun, sign Checkpointer) error {
	type line struct {
		Tenant string `json:"tenant"`
		Status Status `json:"status"`
		N      int64  `json:"n"`
	}
	type ofTenant struct {
		Status Status `json:"status"`
		N      int64  `json:"n"`
	}
	what := "rows"
	if run.Partition != "" {
		what = run.Partition
	}
	pass := run.Pass.UTC().Format(time.RFC3339Nano)
	tenants := make([]string, 0, len(run.By))
	for tenant := range run.By {
		tenants = append(tenants, tenant)
	}
	sort.Strings(tenants)
	var by []line
	events := make([]audit.Event, 0, len(tenants)+1)
	for _, tenant := range tenants {
		var n int64
		var mine []ofTenant
		for st, c := range run.By[tenant] {
			by, mine = append(by, line{tenant, st, c}), append(mine, ofTenant{st, c})
			n += c
		}
		sort.Slice(mine, func(i, j int) bool { return mine[i].Status < mine[j].Status })
		span := run.Spans[tenant]
		events = append(events, audit.Event{
			Actor: quarantine.Actor{Subject: "retention"}, Tenant: tenant,
			Action: ActionPurgeTenant, Outcome: audit.OutcomeOK, ObjectType: "dead_letters", ObjectID: what,
			Reason: fmt.Sprintf("%d dead letters of %s past their retention, dead-lettered %s to %s", n, tenant,
				span.From.UTC().Format(time.RFC3339), span.To.UTC().Format(time.RFC3339)),
			After: map[string]any{"rows": n, "from": span.From.UTC(), "to": span.To.UTC(), "partition": run.Partition, "by": mine,
				"pass": pass},
		})
	}
	sort.Slice(by, func(i, j int) bool {
		if by[i].Tenant != by[j].Tenant {
			return by[i].Tenant < by[j].Tenant
		}
		return by[i].Status < by[j].Status
	})
	events = append(events, audit.Event{
		Actor:  quarantine.Actor{Subject: "retention"},
		Action: ActionPurge, Outcome: audit.OutcomeOK, ObjectType: "dead_letters", ObjectID: what,
		Reason: fmt.Sprintf("%d dead letters past their retention, dead-lettered %s to %s", run.Rows,
			run.From.UTC().Format(time.RFC3339), run.To.UTC().Format(time.RFC3339)),
		After: map[string]any{"rows": run.Rows, "from": run.From.UTC(), "to": run.To.UTC(), "partition": run.Partition, "by": by,
			"pass": pass},
	})
	if _, err := audit.AppendBatch(ctx, tx, events); err != nil {
		return fmt.Errorf("audit purge: %w", err)
	}
	if sign != nil {
		if err := sign(ctx, tx, purgeCheckpointReason); err != nil {
			return fmt.Errorf("checkpoint before purge: %w", err)
		}
	}
	return nil
}

// isOpenRequestRefusal reports whether err is the partition function
// refusing a day an open request names (SQLSTATE 55000).
func isOpenRequestRefusal(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55000"
}

// beginner starts transactions: a pool or a connection.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// LastPurge is the newest retention pass as the audit log has it.
type LastPurge struct {
	At   time.Time
	Rows int64 // in the tenants asked about
}

// The purge rows of the newest pass, all of them: its rows are read by
// where the pass lies in the log, not by a count of rows. Passes take
// turns (keeperLockKey) and the log's appends are in order (seq), so a
// pass's rows lie between the newest run row (ActionPurge) of an earlier
// pass and its own newest row. last is the viewer's tenants' newest purge
// row and its pass (rows written before passes were named are a pass
// each); since is that earlier run row, found by walking the action
// index back from last over the pass's own run rows (at most MaxRuns);
// the sum then reads the purge rows between the two by seq (every
// tenant's, then keeps the viewer's: by the tenant index, it walked the
// tenant's whole history down to the range), the pass's and nothing
// older: at most MaxRuns x maxPurgeBreakdown, and what else the log took
// while the pass ran, whatever it holds before it. With 1.1 M audit rows,
// 100,000 of them purge rows of 5,000 earlier passes, and a last pass of
// 1,100 tenant rows: 1.8 ms and 63 buffers for 100 tenants, 0.8 ms and 60
// for one (EXPLAIN ANALYZE, PostgreSQL of scripts/postgres.sh).
const selectLastPurge = `
WITH last AS (
    SELECT seq, coalesce(after->>'pass', seq::text) AS pass FROM audit_log
    WHERE action = '` + ActionPurgeTenant + `' AND tenant = ANY($1) ORDER BY seq DESC LIMIT 1
), since AS (
    SELECT coalesce((
        SELECT a.seq FROM audit_log a
        WHERE a.action = '` + ActionPurge + `' AND a.seq < last.seq AND coalesce(a.after->>'pass', a.seq::text) <> last.pass
        ORDER BY a.seq DESC LIMIT 1
    ), 0) AS seq FROM last
), pass AS MATERIALIZED ( -- the range first (see above)
    SELECT a.seq, a.at, a.after, a.tenant FROM last, since, audit_log a
    WHERE a.action = '` + ActionPurgeTenant + `' AND a.seq > since.seq AND a.seq <= last.seq
)
SELECT p.at, p.after FROM pass p, last
WHERE p.tenant = ANY($1) AND coalesce(p.after->>'pass', p.seq::text) = last.pass
ORDER BY p.seq DESC`

// scanLastPurge reads selectLastPurge's rows: the newest pass that removed
// dead letters of the viewer's tenants, when, and how many of theirs. It
// reads the tenants' own rows (ActionPurgeTenant), not the runs' rows, which
// name every tenant: a pass that removed none of a viewer's tenants tells
// them nothing, not even that it ran.
func scanLastPurge(rows pgx.Rows) (LastPurge, error) {
	var lp LastPurge
	var at time.Time
	var after struct {
		Rows int64 `json:"rows"`
	}
	_, err := pgx.ForEachRow(rows, []any{&at, &after}, func() error {
		if lp.At.IsZero() {
			lp.At = at
		}
		lp.Rows += after.Rows
		after.Rows = 0
		return nil
	})
	return lp, err
}
