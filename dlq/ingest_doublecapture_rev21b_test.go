package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/replaypolicy"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest21DeadLetteredAndTerminatedIsTwoDeadLetters (review 21b):
// Publish's doc tells a service to dead-letter a message and then "ack
// (or terminate)" the original. On a watched stream (DLQ_WATCH_STREAMS),
// terminating raises MSG_TERMINATED, which the console captures as a dead
// letter of its own: one failure becomes two rows, with the same message
// id, subject and payload, counted twice, each replayable on its own (the
// advisory's row is a verified give-up: the consumer exists and delivered
// it). And the twin does not carry what the service said: the service
// dead-lettered it as permanent (never replayed before a recorded fix),
// the advisory's row is class terminated, which replays by its item
// class: a rebuildable search update goes out directly, by one person,
// with no fix recorded. One failure of one message should be one dead
// letter.
func TestRevIngest21DeadLetteredAndTerminatedIsTwoDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.createStream(t, jetstream.StreamConfig{Name: "SEARCH", Subjects: []string{"app.*.search.>"}})
	ws, err := ParseWatchStreams("SEARCH")
	require.NoError(t, err)
	b.start(t, IngestConfig{Watch: ws}, nil)

	_, err = b.js.Publish(ctx, "app.acme.search.index_update", []byte(`{"doc":7,"mapping":"v1"}`))
	require.NoError(t, err)
	cons, err := b.js.CreateConsumer(ctx, "SEARCH", jetstream.ConsumerConfig{Durable: "indexer", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(t, err)
	require.NoError(t, Publish(ctx, b.js, "dlq", "acme", "search.index_update", msg, Failure{Err: errors.New("index mapping v1 rejected"),
		Class: ClassPermanent, Consumer: "indexer"}))
	require.NoError(t, msg.TermWithReason("dead-lettered")) // as Publish's doc allows

	// Both paths store a row (the decided behaviour, asserted below), in
	// either order: the service's through the DLQ consumer, the give-up
	// advisory's through the advisory consumer. Waiting for one row only
	// read the table while the other was on its way (2 runs in 25). Then
	// wait until the advisory consumer has nothing left to deliver or ack.
	b.waitRows(t, 2)
	acons, err := b.js.Consumer(ctx, AdvisoryStreamOf("DLQ"), "quarantine-ingest")
	require.NoError(t, err)
	wait.Until(t, "the advisory consumer drained", time.Minute, func() bool {
		info, err := acons.Info(ctx)
		return err == nil && info.Delivered.Stream >= 1 && info.NumAckPending == 0 && info.NumPending == 0
	})
	rows, err := b.db.Pool.Query(ctx, `SELECT `+deadLetterColumns+` FROM dead_letters ORDER BY id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByName[DeadLetter])
	require.NoError(t, err)

	twins := map[int64]int64{} // the service's own dead letter of each row's failure, as the rules read it
	trows, err := b.db.Pool.Query(ctx, `SELECT d.id, `+ServiceTwinOfD+` FROM dead_letters d`)
	require.NoError(t, err)
	var id, twin int64
	_, err = pgx.ForEachRow(trows, []any{&id, &twin}, func() error { twins[id] = twin; return nil })
	require.NoError(t, err)

	table, err := replaypolicy.Load("../dev/policy.toml")
	require.NoError(t, err)
	var seen []string
	var verdicts []replaypolicy.Verdict
	for _, d := range got {
		item := replaypolicy.Item{ItemType: d.ItemType, OriginalSubject: d.OriginalSubject, MsgID: d.MsgID, OperationID: d.OperationID,
			ErrorClass: string(UnreadableErrorClass(d.ErrorClass, d.Flags)), DeadLetteredAt: d.DeadLetteredAt, Status: "quarantined",
			PayloadSHA256: "aa", OriginalPayloadSHA256: "aa", ServiceTwin: twins[d.ID]}
		v := replaypolicy.JudgeItem(table, item, replaypolicy.AtDraft)
		verdicts = append(verdicts, v)
		seen = append(seen, d.SourceKind+" "+string(d.ErrorClass)+" "+d.MsgID+" "+d.OriginalSubject+" judged "+v.Outcome.String()+" flags ["+strings.Join(d.Flags, ",")+"]")
	}
	// The decided fix: both rows stay (each is what one path saw, and
	// which arrives first is not known), but the advisory's is never
	// replayed: the rules judge it with the service's own dead letter
	// named (ServiceTwinOfD, read when judging, whichever was stored
	// first), and a person judges that one.
	require.Len(t, got, 2, "%q", seen)
	for i, d := range got {
		switch d.SourceKind {
		case SourceAdvisory:
			require.Equal(t, SourceDLQ, got[1-i].SourceKind, "%q", seen)
			assert.Equal(t, got[1-i].ID, twins[d.ID], "the advisory's dead letter names the service's: %q", seen)
			assert.Equal(t, replaypolicy.Block, verdicts[i].Outcome, "the give-up of a message the service dead-lettered itself is replayed on its own: %q", seen)
			assert.Equal(t, replaypolicy.CheckServiceTwin, verdicts[i].Check, verdicts[i].Reason)
			assert.Contains(t, verdicts[i].Reason, fmt.Sprintf("dead letter %d", got[1-i].ID))
		default:
			assert.Zero(t, twins[d.ID], "the service's own dead letter is judged as it is: %q", seen)
			assert.NotEqual(t, replaypolicy.CheckServiceTwin, verdicts[i].Check)
		}
	}
}
