package replay

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// The "already replayed" question, asked of an item at draft, submit,
// approval and execution (replaypolicy.Item.AlreadyReplayed,
// replaypolicy.Ledger.Replayed): does the replay ledger hold a replay of
// its message id, or of its operation id, in its tenant, whatever class it
// was replayed under? The ledger's dedupe_key and operation_key flags say
// under which classes' rules a row's item was replayed; they do not say
// which replays happened: a message id replayed while its item type was
// rebuildable, then classed dedupe or manual by a newer policy, was
// replayed all the same. The ledger holds every replay the broker stored,
// several of one identity when a dead letter that came back was replayed
// again (migration 0045), so each expression takes the earliest row that
// counts.
//
// A replay the item's own Dlq-Replay-Of chain explains does not count: the
// first replay of each of its origins (the dead letter it came back from,
// that one's origin, and so on) is the replay whose effect failed and came
// back as this dead letter, so the item is what it left undone, and
// replaying it is a new decision, bounded by the generation limit (ingest
// links a dead letter to its origin only when the console published a
// replay of it, and the two share tenant and message id: dlq's
// linkReplays). Only that one replay of each origin: a later replay of
// the origin (a person settled the first "not applied, leave it" and a new
// request replayed it again) did what the item stands for, and it counts,
// whenever the item came back. The first replay is the origin's job first
// about to be published (first_published_at, never reset; the database's
// clock for every job, so no broker clock is compared with it): a dead
// letter comes back from a replay that was sent, and the earliest one sent
// was sent before any other. Where two were sent before the item came back
// and it came back from the later one, the earlier is taken and the later
// counts; so an origin the console sent more than one replay of
// (chainTwice) leaves the item for a person, whatever its class: neither
// published twice nor skipped as done by the replay it came back from
// (TestRev38ChildOfAnOriginReplayedTwiceIsLeftForAPerson). A replay
// of another dead letter of the message (a second failure of the
// original, or a sibling that came back from the same replay) counts.
//
// Each expression gives the request of the earliest such replay (0:
// none). Its terms, SQL of the enclosing query, are the tenant, the
// message id or the operation id, a job whose own row does not count
// (NULL: none), and the predicate that holds when l, the ledger row, is
// the first replay of an origin of the item's dead letter (origins walks
// them up in SQL; the worker reads them first, readOrigins, so that its
// ledger read never reaches dead_letters).
// judgedGenerationOfD is the generation the replay rules judge the dead
// letter aliased d by (the generation limit, replaypolicy.Key.Generation):
// the one ingest linked (Dlq-Replay-Of), or, when more, how many replays of
// its message id on its subject in its tenant (replaypolicy.Identity) the
// ledger holds for other dead letters. A
// replay keeps the original message id, so a consumer that dead-letters a
// replayed message again without copying Dlq-Replay-Of sends back one
// ingest cannot link (generation 0); the replays of its message still
// count, and the limit holds all the same. Replays of d itself do not
// count: they are not what it came back from. NULL when d is (a left join
// found no dead letter). One probe of replay_ledger_msg_idx.
const judgedGenerationOfD = `GREATEST(d.generation, (SELECT count(*) FROM replay_ledger lg
        WHERE lg.tenant = d.tenant AND left(lg.msg_id, 256) = left(d.msg_id, 256) AND quarantine_key(lg.msg_id) = quarantine_key(d.msg_id)
          AND lg.subject = d.original_subject AND lg.dead_letter_id <> d.id))::int`

type ledgerTerms struct {
	tenant, subject, msgID, opID, job, origin string
}

// settledAppliedL holds of the ledger row l whose job a person settled
// "applied": the broker never confirmed that replay (Reconcile). Its j is
// its own.
const settledAppliedL = `EXISTS (SELECT 1 FROM replay_jobs j WHERE j.id = l.job_id AND j.state = 'replayed' AND ` + settledApplied + `)`

// appliedPick is the request of the ledger row l that replayedByMsg and
// replayedByOp answer, negated when it is a person's finding "applied";
// appliedFirst orders the broker's rows before those, so that a negative
// answer says none of the identity's replays is the broker's
// (replayedBy reads it back).
const (
	appliedPick  = `CASE WHEN ` + settledAppliedL + ` THEN -l.request_id ELSE l.request_id END`
	appliedFirst = settledAppliedL + `, `
)

// anotherTenant is replaypolicy.AnotherTenant as SQL.
var anotherTenant = strconv.FormatInt(replaypolicy.AnotherTenant, 10)

// anotherTenants is pick (a request id, negated when a person's finding)
// where ours (SQL) holds, and replaypolicy.AnotherTenant, with pick's sign,
// where it does not: a request of another tenant is named to no reader of
// this one.
func anotherTenants(ours, pick string) string {
	return `CASE WHEN ` + ours + ` THEN ` + pick + ` WHEN ` + pick + ` < 0 THEN -` + anotherTenant + ` ELSE ` + anotherTenant + ` END`
}

// replayedBy reads back the answers of replayedByMsg and replayedByOp: the
// request that replayed the identity (0: none) and whether every such
// replay is a person's finding "applied", none the broker's
// (replaypolicy.Ledger.AppliedOnly, Item.AppliedOnly).
func replayedBy(byMsg, byOp int64) (by int64, appliedOnly bool) {
	if byMsg <= 0 && byOp <= 0 && (byMsg < 0 || byOp < 0) {
		return -cmp.Or(byMsg, byOp), true
	}
	return cmp.Or(max(byMsg, 0), max(byOp, 0)), false
}

// replayedByMsg is the expression of the request whose replay of t's
// message id on t's subject the ledger holds, in any tenant
// (replay_ledger_msg_key_idx, migration 0076: quarantine_key compares the
// whole id): a message id is its subject's (replaypolicy.Identity), so a
// replay of another service's message that has the same id is not this
// one's; and the subject and the broker's duplicate window are no
// tenant's: two tenants may replay to one subject (REPLAY_SUBJECT_ALLOW
// entries that overlap, tenant unknown's above all), and the message one
// replayed is the other's message too.
// (TestRev40ReplayOfTheMessageInAnotherTenantIsNotPublishedAgain)
func (t ledgerTerms) replayedByMsg() string {
	return t.fill(`coalesce((SELECT ` + anotherTenants("l.tenant = {tenant}", appliedPick) + ` FROM replay_ledger l
        WHERE quarantine_key(l.msg_id) = quarantine_key({msg})
          AND l.subject = {subject} AND l.job_id IS DISTINCT FROM {job} AND NOT ({origin})
        ORDER BY ` + appliedFirst + `l.published_at, l.job_id LIMIT 1), 0)`)
}

// replayedByOp is the expression of the request whose replay of t's
// operation id (under any message id) the ledger holds. The ledger has no
// index on its rows' operation ids, so the replays are found from the
// items of that operation id
// (replay_items_operation_key_idx), then each one's job and ledger row by
// key. Its aliases (l, ri, rj; ro and rup in origins) are its own: the
// enclosing queries name theirs d, i, j, o and u.
func (t ledgerTerms) replayedByOp() string {
	return t.fill(`coalesce((SELECT ` + appliedPick + ` FROM replay_items ri
        JOIN replay_jobs rj ON rj.request_id = ri.request_id AND rj.dead_letter_id = ri.dead_letter_id
        JOIN replay_ledger l ON l.job_id = rj.id
        WHERE quarantine_key(ri.operation_id) = quarantine_key({op}) AND ri.operation_id <> ''
          AND l.tenant = {tenant} AND quarantine_key(l.operation_id) = quarantine_key({op})
          AND l.job_id IS DISTINCT FROM {job} AND NOT ({origin})
        ORDER BY ` + appliedFirst + `l.published_at, l.job_id LIMIT 1), 0)`)
}

// fill puts t's terms into sql.
func (t ledgerTerms) fill(sql string) string {
	return strings.NewReplacer("{origin}", t.origin, "{tenant}", t.tenant, "{subject}", t.subject, "{msg}", t.msgID, "{op}", t.opID, "{job}", t.job).Replace(sql)
}

// firstReplayJob is the job of the first replay the console sent of dead
// letter id (SQL of the enclosing query): of the jobs of its items a
// publish of which may have landed (handed_at: set by the publish gate,
// committed before the send, and cleared by the worker's record of a job
// none of whose publishes may have landed, job.nothingLanded; migration
// 0044 set it on every job from before that may have been sent), the one
// first about to be published (first_published_at; those of before that
// column, migration 0014, are older than any with it). A job reserved by
// a gate and then cancelled, stopped or released before it was sent is no
// replay, nor is one every answer of which said its publish did not land
// (the broker dropped it as a duplicate of a message not ours, refused
// it, or it never left the worker), whatever it ended as (deferred and
// then cancelled, suppressed, blocked): taking it for the first would
// make the replay a child really came back from count against it. Nor is
// a job that ended blocked or skipped (what this reads of jobs recorded
// before their record cleared handed_at after such answers; one whose
// publish may have landed ends needing reconciliation instead). A job
// sent and then settled "not applied" (cancelled by reconciliation) was
// sent: it stays the first. One a person settled "not applied, republish"
// (republished_at) was sent again, past its stream's duplicate window: a
// dead letter may have come back from either send, and when it came back
// from the first, the republish did what it stands for again. Such a
// first replay is none the chain explains (NULL: the ledger's row of it
// counts against the item), and sentReplays counts it twice, so that the
// item is left for a person, never replayed as new (review round 44:
// TestRev44RepublishedReplayExplainsNoDeadLetterThatCameBack). By
// replay_items_dead_letter_idx, then each item's job by key.
func firstReplayJob(id string) string {
	return `(SELECT CASE WHEN rj.republished_at IS NULL THEN rj.id END FROM replay_items ri
                  JOIN replay_jobs rj ON rj.request_id = ri.request_id AND rj.dead_letter_id = ri.dead_letter_id
                  WHERE ri.dead_letter_id = ` + id + `
                    AND rj.handed_at IS NOT NULL -- may have landed: a reservation never sent, or a publish the broker stored nothing of, is no replay
                    AND rj.state NOT IN ('blocked', 'skipped') -- nothing of it landed
                  ORDER BY rj.first_published_at NULLS FIRST, rj.id LIMIT 1)`
}

// origins is the predicate that ledger row l is the first replay of an
// origin of the dead letter of tenant whose replay_of and dead_lettered_at
// are replayOf and at (SQL of the enclosing query), as far as its chain is
// kept (chain). An origin the console sent no replay of has no first
// replay (NULL), and explains none: the predicate is false for l then, not
// NULL, which NOT (origins) would read as every row explained, as the
// worker's own read (readOrigins) does not.
// (TestRev38OriginWithNoReplaySentHidesNoLedgerRow)
func origins(tenant, replayOf, at string) string {
	return `coalesce(l.job_id = ANY (ARRAY(` + chain(tenant, replayOf, at) + ` SELECT ` + firstReplayJob("rup.id") + ` FROM rup)), false)`
}

// chainCut is the expression of the origin up the chain of the same dead
// letter as origins' whose row retention removed (0: none): the chain
// stops there, its own origins are not known, and a replay of one of
// them, which the chain would explain, counts against the item. A dead
// letter that came back from a replay is what that replay left undone;
// when the ledger's replay may be the one its cut chain would explain,
// skipping it as "already replayed" would lose the event with nothing to
// say so, so the rules leave it for a person instead
// (replaypolicy.Item.ChainCut).
func chainCut(tenant, replayOf, at string) string {
	return `coalesce((` + chain(tenant, replayOf, at) + ` SELECT rup.id FROM rup WHERE NOT EXISTS (` + kept("rup") + `) LIMIT 1), 0)`
}

// sentReplays is the expression of how many replays the console sent of
// dead letter id before received (SQL of the enclosing query: when the
// item whose chain it is was stored, by the database's clock, as
// first_published_at is; a job from before that column, migration 0014,
// is older than any): its jobs a publish of which may have landed, as
// firstReplayJob counts them. A replay sent after the item was stored is
// not one it came back from: it is what the item stands for done again,
// and counts against it (TestSentJobSettledNotAppliedStaysFirstReplay).
// For an origin further up, whose child in the chain was stored before
// the item, it may count one sent after that child: the item is then left
// for a person, never skipped on a guess. So does chainSlack: a database
// clock stepped back (a failover to a primary whose clock lags, an NTP
// step) could stamp the item before the replay it came back from. A job
// sent before the item was stored that a person then republished
// (republished_at, whenever) counts twice: the item came back from one
// of its sends, or the republish did again what it stands for.
func sentReplays(id, received string) string {
	return `(SELECT count(*) + count(rj.republished_at) FROM replay_items ri
                  JOIN replay_jobs rj ON rj.request_id = ri.request_id AND rj.dead_letter_id = ri.dead_letter_id
                  WHERE ri.dead_letter_id = ` + id + `
                    AND rj.handed_at IS NOT NULL AND rj.state NOT IN ('blocked', 'skipped')
                    AND (rj.first_published_at IS NULL OR rj.first_published_at < ` + received + ` + interval '` + chainSlack + `'))`
}

// chainSlack is how far a replay first published after the item was
// stored still counts as one it may have come back from (sentReplays).
const chainSlack = "5 seconds"

// chainTwice is the expression of the origin up the chain of the same
// dead letter as origins' (stored at received) that the console sent more
// than one replay of before it was stored (sentReplays; 0: none). Only the
// first of them is explained by the chain (firstReplayJob), but the item
// may have come back from a later one: a replay the ledger holds is then
// left for a person (replaypolicy.Item.ChainTwice), as for chainCut.
func chainTwice(tenant, replayOf, at, received string) string {
	return `coalesce((` + chain(tenant, replayOf, at) + ` SELECT rup.id FROM rup WHERE ` + sentReplays("rup.id", received) + ` > 1 LIMIT 1), 0)`
}

// chain is the WITH clause of the walk up the origins of the dead letter
// of tenant whose replay_of and dead_lettered_at are replayOf and at (SQL
// of the enclosing query): rup, each origin's id and its child's
// dead_lettered_at, as dlq.ChainUp walks every chain (a primary-key probe
// a step, in the partitions older than the step's dead letter, only as
// far as rows are kept: an origin retention removed is known by the id its
// child names, but its own origin is not: chainCut). Its aliases (rup,
// and the seed's and step's own) keep clear of the enclosing queries'.
func chain(tenant, replayOf, at string) string {
	return `WITH RECURSIVE ` + dlq.ChainUp("rup", `SELECT NULL::bigint, `+replayOf+`, `+at+`, `+tenant)
}

// kept is the query of the dead letter of step (rup or up: its id and its
// child's dead_lettered_at and tenant), as the walk reads it: none when
// retention removed it.
func kept(step string) string {
	return `SELECT 1 FROM dead_letters ro WHERE ` + dlq.ChainOrigin("ro", step)
}

// selectOrigins is origins' walk for jobs: for each job of $1 whose dead
// letter of tenant $4 names an origin $2 and was stored at $3, each origin
// up its chain (dlq.ChainUp, keyed by the job), with the first replay job
// of it (firstReplayJob; NULL where the console sent none), whether
// retention removed its row (the chain is cut there: chainCut), and
// whether the console sent more than one replay of it before the job's
// dead letter was stored ($5, by job: chainTwice).
var selectOrigins = `WITH RECURSIVE ` + dlq.ChainUp("up", `SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::text[])`) + `
SELECT up.key, up.id, ` + firstReplayJob("up.id") + `, NOT EXISTS (` + kept("up") + `), ` + sentReplays("up.id", "r.received") + ` > 1
FROM up JOIN unnest($1::bigint[], $5::timestamptz[]) AS r(key, received) ON r.key = up.key`

// chainRead is what readOrigins read of the chains of a claim's jobs: as
// two arrays of pairs, a job and the job of the first replay of one origin
// of its dead letter (ledgerOf's $5 and $6), and by job, the origin up its
// chain whose row retention removed, and the origin the console sent more
// than one replay of.
type chainRead struct {
	jobIDs, originJobs []int64
	cut, twice         map[int64]int64
}

// readOrigins reads, on q, the chains of the dead letters of jobs
// (selectOrigins). Jobs whose dead letter names no origin cost nothing;
// when none does, it reads nothing.
func readOrigins(ctx context.Context, q querier, jobs []*job) (chainRead, error) {
	read := chainRead{cut: map[int64]int64{}, twice: map[int64]int64{}}
	var ids, of []int64
	var ats, received []time.Time
	var tenants []string
	for _, j := range jobs {
		if j.replayOf != nil {
			ids, of, ats, tenants = append(ids, j.id), append(of, *j.replayOf), append(ats, j.deadLetteredAt), append(tenants, j.tenant)
			received = append(received, j.receivedAt)
		}
	}
	if len(ids) == 0 {
		return read, nil
	}
	rows, err := q.Query(ctx, selectOrigins, ids, of, ats, tenants, received)
	if err != nil {
		return read, err
	}
	var jobID, origin int64
	var first *int64
	var gone, twice bool
	_, err = pgx.ForEachRow(rows, []any{&jobID, &origin, &first, &gone, &twice}, func() error {
		if first != nil {
			read.jobIDs, read.originJobs = append(read.jobIDs, jobID), append(read.originJobs, *first)
		}
		if gone {
			read.cut[jobID] = origin
		}
		if twice {
			read.twice[jobID] = origin
		}
		return nil
	})
	return read, err
}
