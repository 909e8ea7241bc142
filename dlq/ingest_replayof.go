package dlq

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The dead letters a batch says it came back from, found through what the
// console published: only the console replays (docs/header-contract.md),
// and each of its replays is a job of an item that names its dead letter
// by its whole key (id and dead_lettered_at). So each claim is one probe of
// replay_items_dead_letter_idx, one of each of its items' job
// (replay_jobs_one_per_item), and, when one of them was published or may
// have been, one probe of the primary key of the one partition the item
// names. It used to be dead_letters WHERE id = ANY($1): every claim probed
// every day's partition (about 40 over a retention period), and a
// producer sending random Dlq-Replay-Of ids slowed every batch it was in;
// it also linked a claim to any dead letter of its tenant and message id,
// replayed or not.
//
// The item also says what the console sent with the replay: the operation
// and correlation ids an advisory's dead letter takes when its claim holds
// (an item keeps its dead letter's ids as they were when it was made, so
// every item of one dead letter says the same).
//
// A job was published, or may have been, once a worker was about to hand
// it to NATS: handed_at is set, and committed, before the send (dlq/replay,
// gateJobs), and cleared only by the record of a claim none of whose
// publishes may have landed: one that marked the job and sent nothing of
// it (a cancel, a stop or a release before its slot), or whose answer
// said its publish did not land (the broker dropped it as a duplicate of a
// message not ours, refused it, or it never left the worker) with no
// earlier one that may have (dlq/replay, job.nothingLanded); migration
// 0044 set it on every job from before that may have been sent. A draft,
// a request that waits, is rejected or cancelled before its publish, a
// job still pending or reserved and never sent, or sent and never stored:
// the console replayed nothing, and a claim naming it is not linked, as
// the chain exception takes no such job for its dead letter's first
// replay (dlq/replay, firstReplayJob).
//
// Retention removes a dead letter when its period ends, but not its
// replay's request, item and job: it writes onto each item naming it the
// dead letter's tenant, message id and generation (origin_*, migration
// 0042), which link the claim when the row is gone, so that a replay
// failing again after its origin was removed is still linked and its
// generation (the loop guard) goes on. Items whose dead letters were
// removed before that migration have none: such claims stay unlinked.
//
// Each claim is matched in its own tenant ($2), in SQL: a claim naming a
// dead letter of another tenant reads as one naming a dead letter never
// replayed, so a flag does not tell whether another tenant's dead letter
// was replayed. It is matched on its subject too ($3): a message id is
// its subject's (replaypolicy.Identity), and a replay that comes back
// comes back from the subject the console sent it to (replay_items.subject,
// kept when retention removes the dead letter). Anyone who reads that
// subject can copy a replay's Nats-Msg-Id and Dlq-Replay-Of onto a message
// of another subject, which would otherwise be linked and take the
// operation id the console sent (confirmReplayContext). Both subqueries end in LIMIT 1, which keeps them apart from
// the join (a plain subquery would be pulled up and could be planned as a
// hash join reading every partition): the dead letter is read per claim,
// with the time its item names, and run-time pruning leaves one partition.
const selectReplayOrigins = `
SELECT c.id, c.tenant, c.subject, o.msg_id, o.generation, s.operation_id, s.correlation_id
FROM unnest($1::bigint[], $2::text[], $3::text[]) AS c(id, tenant, subject)
CROSS JOIN LATERAL (
    SELECT i.dead_lettered_at, i.operation_id, i.correlation_id, i.origin_tenant, i.origin_msg_id, i.origin_generation FROM replay_items i
    JOIN replay_jobs j ON j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id
    WHERE i.dead_letter_id = c.id
      AND i.subject = c.subject -- sent to the subject the claim comes from
      AND j.handed_at IS NOT NULL -- the console sent it, and it may have landed
    LIMIT 1
) s
CROSS JOIN LATERAL (
    SELECT d.msg_id, d.generation FROM dead_letters d
    WHERE d.id = c.id AND d.dead_lettered_at = s.dead_lettered_at AND d.tenant = c.tenant
    UNION ALL -- retention removed it: what it wrote on the item (set only then)
    SELECT s.origin_msg_id, s.origin_generation WHERE s.origin_tenant = c.tenant
    LIMIT 1
) o`

// linkReplays checks each record's Dlq-Replay-Of claim against the replays
// the console published (selectReplayOrigins) and keeps it (with the
// generation one past the origin's, and for an advisory's record the
// operation and correlation ids the replay item sent: see
// confirmReplayContext) or drops it, flagged unlinked:replay_of
// with why: the console never published a replay of that dead letter of
// the record's tenant to the record's original subject (replayedFrom), or
// the dead letter is another message's (a replay keeps the original id). A batch without claims costs nothing; one with
// claims costs one query, a few index probes per claim. Only a database
// that cannot be reached fails it (the caller retries the batch).
func (s *Store) linkReplays(ctx context.Context, recs []Record) error {
	var ids []int64
	var tenants, subjects []string
	for i := range recs {
		if recs[i].ReplayOf > 0 {
			ids, tenants = append(ids, recs[i].ReplayOf), append(tenants, recs[i].Tenant)
			subjects = append(subjects, recs[i].replayedFrom())
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// A claim is its dead letter's id and its record's tenant and subject:
	// two records of one batch may name one id from two tenants or two
	// subjects.
	type claim struct {
		id              int64
		tenant, subject string
	}
	type origin struct {
		msgID        string
		generation   int32
		opID, corrID string // what the console sent with the replay
	}
	ctx, cancel := s.within(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, selectReplayOrigins, ids, tenants, subjects)
	if err != nil {
		return fmt.Errorf("read replay origins: %w", err)
	}
	found := map[claim]origin{}
	var c claim
	var o origin
	if _, err := pgx.ForEachRow(rows, []any{&c.id, &c.tenant, &c.subject, &o.msgID, &o.generation, &o.opID, &o.corrID}, func() error { found[c] = o; return nil }); err != nil {
		return fmt.Errorf("read replay origins: %w", err)
	}
	for i := range recs {
		r := &recs[i]
		if r.ReplayOf == 0 {
			continue
		}
		switch o, ok := found[claim{r.ReplayOf, r.Tenant, r.replayedFrom()}]; {
		case !ok:
			r.flag("unlinked:replay_of", "%s names dead letter %d, which is not a dead letter of tenant %s that the console replayed to subject %s: not linked",
				HeaderReplayOf, r.ReplayOf, short(r.Tenant), short(r.replayedFrom()))
			r.ReplayOf = 0
		case o.msgID != r.MsgID:
			r.flag("unlinked:replay_of", "%s names dead letter %d, whose message id is not this one's (a replay keeps the original id): not linked",
				HeaderReplayOf, r.ReplayOf)
			r.ReplayOf = 0
		default:
			r.Generation = o.generation + 1
			if c := r.replayContext; c != nil {
				c.sentOperationID, c.sentCorrelationID = o.opID, o.corrID
			}
		}
	}
	return nil
}

// replayedFrom is the subject a record's message was published to, which
// a replay of the console that came back was published to by the console:
// for a DLQ stream's record its Dlq-Original-Subject, for an advisory's
// record its original's subject (Subject, which an unverified give-up keeps
// when it erases OriginalSubject). It is "" when the record names none,
// and no replay was sent to "".
func (r *Record) replayedFrom() string {
	if r.SourceKind == SourceAdvisory {
		return r.Subject
	}
	return r.OriginalSubject
}
