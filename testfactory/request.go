package testfactory

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Draft freezes ids into requester's draft requests, as if they could
// request every class in every tenant, and returns the batch and its
// requests.
func Draft(t testing.TB, svc *replay.Service, requester quarantine.Actor, ids ...int64) (string, []replay.Request) {
	t.Helper()
	ctx := context.Background()
	batch, err := svc.CreateDrafts(ctx, requester, ids, nil, true,
		func(string, replaypolicy.Class) bool { return true }, quarantine.RequestMeta{})
	require.NoError(t, err)
	drafts, err := svc.Batch(ctx, batch)
	require.NoError(t, err)
	return batch, drafts
}

// Request drafts ids and submits them as requester with in (a reason and
// the typed confirmations its class needs are filled in when in has none),
// and returns the one request it made.
func Request(t testing.TB, svc *replay.Service, requester quarantine.Actor, ids []int64, in replay.SubmitInput) replay.Request {
	t.Helper()
	ctx := context.Background()
	batch, drafts := Draft(t, svc, requester, ids...)
	if in.Reason == "" {
		in.Reason = "consumer fixed in release 1.2.3"
	}
	if in.Confirmations == nil {
		in.Confirmations = map[int64]string{}
		for _, d := range drafts {
			phrase, err := svc.ConfirmationFor(ctx, d.ID)
			require.NoError(t, err)
			in.Confirmations[d.ID] = phrase
		}
	}
	reqs, err := svc.Submit(ctx, batch, requester, in, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	return reqs[0]
}

// NeedsPerson makes every job of request id one whose outcome nobody can
// know (as a worker leaves one past the duplicate window: its dead letter
// waits too, still held) and ends the request done with problems.
func NeedsPerson(t testing.TB, pool *pgxpool.Pool, id int64) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`UPDATE replay_jobs SET state = 'needs_reconciliation', result = 'no PubAck, and the window no longer covers the publish' WHERE request_id = $1`,
		// Through the statement every status change goes through, so the
		// counters stay exact (dlq.StatusMove).
		dlq.StatusMove(`SELECT d.id, d.dead_lettered_at, d.status
            FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id AND d.dead_lettered_at = i.dead_lettered_at
            WHERE i.request_id = $1 FOR UPDATE OF d`, `'needs_reconciliation'`, "id"),
		`UPDATE replay_requests SET status = 'done_with_problems' WHERE id = $1`,
	} {
		_, err := pool.Exec(ctx, q, id)
		require.NoError(t, err)
	}
}
