package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevReplay8ReplayOfAReturnedDedupeItemIsNotInTheLedger: severity
// high. A dedupe event D0 (message id M) is replayed (request R1, ledger
// row with dedupe_key). The replay fails downstream at two consumers and
// comes back twice: D1a and D1b, both linked to D0 (Dlq-Replay-Of). The
// chain rule explains R1 for both, so D1a is replayed (R2) and the broker
// stores it: the event is now applied. The ledger's insert (record.go
// insertLedger) hits the unique index replay_ledger_dedupe_key
// (tenant, quarantine_key(msg_id)) WHERE dedupe_key, held by R1's row,
// and ON CONFLICT DO NOTHING drops R2's row silently. docs/replay.md says
// the ledger "holds every replay the broker stored" and that "a sibling
// captured from the same failed replay whose twin was replayed already is
// not explained, and the replay counts": but R2 is not in the ledger, so
// nothing counts against D1b (R1 is explained by its chain): D1b is
// published again, a second effect of the event the dedupe class promises
// to replay once. The same holds for same_operation (operation_key index)
// and for any class whose union holds dedupe or same_operation.
// Expected: every replay the broker stored is in the ledger (the unique
// indexes cannot hold one row per identity now that a returned item may
// be replayed again: drop them or key them by chain), and D1b is skipped
// as already replayed by R2; only two messages reach the subject.
func TestRevReplay8ReplayOfAReturnedDedupeItemIsNotInTheLedger(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"}, Duplicates: time.Second})
	require.NoError(t, err)
	const msgID, subject = "rr8-event-chain", "app.acme.analytics.event"
	letter := func(at time.Time, replayOf int64) int64 {
		l := testfactory.Letter{ItemType: "analytics.event", MsgID: msgID, CorrelationID: "corr-rr8",
			Payload: []byte(`{"clicks":7}`), At: at}
		if replayOf != 0 {
			l.Headers = map[string][]string{dlq.UpstreamPrefix + dlq.HeaderReplayOf: {fmt.Sprint(replayOf)}}
		}
		return testfactory.DeadLetter(t, b.db.Pool, l)
	}
	run(t, b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond}))

	origin := letter(time.Now().Add(-3*time.Hour), 0)
	r1 := b.request(t, []int64{origin}, replay.SubmitInput{})
	require.Equal(t, replaypolicy.Dedupe, r1.Class)
	require.Equal(t, replay.StatusApproved, r1.Status)
	b.waitStatus(t, r1.ID, replay.StatusDone)
	require.Equal(t, 1, b.onSubject(t, subject))

	// R1's publish failed at two consumers: two dead letters come back,
	// both linked to the origin.
	twinA := letter(time.Now().Add(-2*time.Hour), origin)
	twinB := letter(time.Now().Add(-2*time.Hour+time.Minute), origin)
	for _, id := range []int64{twinA, twinB} {
		d, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		require.NotNil(t, d.ReplayOf, "linked to its origin: %v", d.Flags)
	}

	// One of them is replayed: the event is applied now.
	r2 := b.request(t, []int64{twinA}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, r2.Status)
	b.waitStatus(t, r2.ID, replay.StatusDone)
	require.Equal(t, 2, b.onSubject(t, subject))

	var inLedger int
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM replay_ledger WHERE request_id = $1`, r2.ID).Scan(&inLedger))
	assert.Equal(t, 1, inLedger, "the broker stored request %d's replay of dead letter %d, yet the ledger does not hold it", r2.ID, twinA)

	// Its twin is not what R2 left undone: R2 counts against it.
	batch, _ := b.draft(t, oncall, twinB)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "consumer fixed"}, quarantine.RequestMeta{})
	if err == nil {
		for _, r := range reqs {
			if r.Status == replay.StatusApproved {
				b.waitFinished(t, r.ID)
			}
		}
	}
	assert.Equal(t, 2, b.onSubject(t, subject),
		"dead letter %d's twin was replayed already by request %d (the event applied), yet it was published again: two effects of one dedupe event", twinB, r2.ID)
}
