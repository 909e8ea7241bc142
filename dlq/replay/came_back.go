package replay

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/quarantine-console/quarantine/dlq"
)

// CameBack is a dead letter that came back from the replay of an item:
// the consumer failed on the replayed message again and dead-lettered it,
// and ingest linked it to the item's dead letter (dead_letters.replay_of).
// More: more than one came back from that replay; ID is one of them, and
// the replay chain on the item's dead letter's page lists each.
type CameBack struct {
	ID         int64
	Status     dlq.Status
	ErrorClass string
	More       bool
}

// CameBacks are the items of a request whose replay came back as a new
// dead letter: Items, by the item's dead letter, of its first items (as
// many as the page reads); Replayed counts those of its first
// CameBackItemsMax items that the pages count replayed
// (ItemCounts.Replayed), whose broker stored the replay and whose consumer
// failed on it all the same.
type CameBacks struct {
	Items    map[int64]CameBack
	Replayed int
}

// cameBackFrom is the condition that c, an alias of dead_letters, came
// back from the replay of item i (its job j, of request r): ingest linked
// it to the item's dead letter (replay_of, which it links only to a dead
// letter of the same tenant that the console sent a replay of), in the
// request's tenant whatever the column holds; found by
// dead_letters_replay_of_idx in the partitions newer than the item's dead
// letter, as the replay chain walks down (a day of slack for the clocks
// that stamped them); and stored after this job was about to publish, by
// the database's clock (as sentReplays compares them, with chainSlack): a
// dead letter stored before is no return of this replay, but of another
// replay of the same dead letter sent before it. Of a job a person
// republished, after their last decision to: what came back before the
// republish is what it was sent again for (review round 44).
var cameBackFrom = dlq.ChainChild("c", "i.dead_letter_id", "r.tenant", "i.dead_lettered_at") + `
          AND c.received_at > coalesce(j.republished_at, j.first_published_at, j.handed_at) - interval '` + chainSlack + `'`

// landedJob is the condition that job j was sent, and may have landed
// (firstReplayJob's): nothing of any other came back.
const landedJob = `j.handed_at IS NOT NULL AND j.state NOT IN ('blocked', 'skipped')`

// replayedJob is the condition that job j counts as replayed on every
// page (outcomeCounts' replayed): the broker stored it, and nobody
// settled it by hand.
const replayedJob = `j.state = 'replayed' AND NOT ` + settledApplied

var (
	// The items of request $1 that came back, in item order, the first $2
	// of them: each with one dead letter that came back (of the two read
	// at most: one to show and one to tell there are more; in no order,
	// which would sort them all first, as the chain reads a dead letter's
	// children), and of all of them how many the pages count replayed.
	// The items are read by the request's key, their jobs by
	// replay_jobs_one_per_item, and each item that was sent probes
	// dead_letters_replay_of_idx (LIMIT: a probe per item, never a join
	// that reads every partition's returns), of its first $3 items only
	// (CameBackItemsMax).
	selectCameBack = `SELECT i.dead_letter_id, b.id, b.status, coalesce(b.error_class, ''), b.more,
        count(*) FILTER (WHERE ` + replayedJob + `) OVER () AS replayed
    FROM replay_requests r
    JOIN replay_items i ON i.request_id = r.id
    JOIN replay_jobs j ON j.request_id = i.request_id AND j.dead_letter_id = i.dead_letter_id
    CROSS JOIN LATERAL (
        SELECT c.id, c.status, c.error_class, count(*) OVER () > 1 AS more FROM (
            SELECT c.id, c.status, c.error_class FROM dead_letters c
            WHERE ` + cameBackFrom + `
            LIMIT 2
        ) c ORDER BY c.id LIMIT 1
    ) b
    WHERE r.id = $1 AND ` + landedJob + ` AND i.position < $3
    ORDER BY i.position LIMIT $2`
	// Of each request of $1, how many items the pages count replayed came
	// back: by replay_jobs_request_idx (its replayed jobs), each item by
	// its key, and one probe of dead_letters_replay_of_idx each.
	selectCameBackCounts = `SELECT i.request_id, count(*)
    FROM replay_requests r
    JOIN replay_jobs j ON j.request_id = r.id
    JOIN replay_items i ON i.request_id = j.request_id AND i.dead_letter_id = j.dead_letter_id
    CROSS JOIN LATERAL (SELECT FROM dead_letters c WHERE ` + cameBackFrom + ` LIMIT 1) b
    WHERE r.id = ANY($1) AND ` + landedJob + ` AND ` + replayedJob + `
    GROUP BY i.request_id`
)

// CameBackItemsMax is how many of a request's items, the first, its page
// checks for returns (a probe of every partition newer than each item's
// dead letter, each): it says so of a request with more.
const CameBackItemsMax = 10_000

// listCameBackMax is the most items counted replayed of a request whose
// returns the replays list counts (up to 50 requests a page): its page
// says so of one with more.
const listCameBackMax = 1_000

// cameBack reads which of the first limit items of request id that came
// back did (CameBacks), and how many of its first CameBackItemsMax items
// counted replayed did.
func cameBack(ctx context.Context, q querier, id int64, limit int) (CameBacks, error) {
	out := CameBacks{Items: map[int64]CameBack{}}
	rows, err := q.Query(ctx, selectCameBack, id, limit, CameBackItemsMax)
	if err != nil {
		return out, err
	}
	var dl int64
	var b CameBack
	_, err = pgx.ForEachRow(rows, []any{&dl, &b.ID, &b.Status, &b.ErrorClass, &b.More, &out.Replayed}, func() error {
		out.Items[dl] = b
		return nil
	})
	return out, err
}

// cameBackCounts sets, on each of reqs with items counted replayed (at
// most listCameBackMax), how many of those came back (Listed.CameBack), in
// one statement: none when no request has any. A page of requests of
// thousands of items each would otherwise probe for hundreds of thousands;
// their own pages count them.
func cameBackCounts(ctx context.Context, q querier, reqs []Listed) error {
	var ids []int64
	at := map[int64]*Listed{}
	for i := range reqs {
		if n := reqs[i].Progress.Replayed; n > 0 && n <= listCameBackMax {
			ids = append(ids, reqs[i].ID)
			at[reqs[i].ID] = &reqs[i]
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, selectCameBackCounts, ids)
	if err != nil {
		return err
	}
	var id int64
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		at[id].CameBack = n
		return nil
	})
	return err
}
