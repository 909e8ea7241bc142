package replay_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRev38RetryStoredUnderAMappedSubjectIsNotReplayed: worker A's first
// attempt is lost on a stalled path (nothing stored, the job unknown);
// the account then maps the original subject to another one the same
// stream takes, and worker B's retry is stored there as new. Consumers of
// the original subject never read it: the job waits for a person. Before,
// only first attempts were read back for the subject they were stored
// under, and the retry was shown replayed.
func TestRev38RetryStoredUnderAMappedSubjectIsNotReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "rev38-retry-mapped"
	st := stalledFirstAttempt(t, b, msgID)
	req, id, wB := st.req, st.id, st.wB
	j := b.job(t, req.ID, id)
	require.Equal(t, "unknown", j.State, j.Result)
	require.Equal(t, 0, b.publishedAs(t, msgID))

	var subject string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT DISTINCT subject FROM replay_items WHERE request_id = $1`, req.ID).Scan(&subject))
	require.NoError(t, b.ns.GlobalAccount().AddMapping(subject, "app.acme.elsewhere"))

	j = b.settled(t, wB, req.ID, id)
	require.Len(t, onSubjectMsgs(t, b.target, "app.acme.elsewhere"), 1, "the retry was stored under the mapped subject")
	require.Empty(t, onSubjectMsgs(t, b.target, subject))
	require.Equal(t, "needs_reconciliation", j.State, j.Result)
	require.Contains(t, j.Result, `under subject "app.acme.elsewhere"`)
	require.Contains(t, j.Result, "This was a retry: an earlier publish of", "the person is told the first attempt may have landed too")
}

// TestRev38StreamMadeSinceTheListStoringUnderAMappedSubjectIsNotReplayed:
// the claim's list of streams names none for the subject (the stream was
// made since), so the answer is judged by a window read after it
// (answeredWindow), which names the stream that answered; the account
// maps the subject to another one that stream takes. The first attempt
// is read back as a listed answer's is, and waits for a person. Before,
// only an answer from a stream the claim's list named was read back.
func TestRev38StreamMadeSinceTheListStoringUnderAMappedSubjectIsNotReplayed(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	subject := "events.acme.search.index_update"
	cfg := b.config(t)
	windows := replay.NewStreamWindows(b.js, time.Hour)
	require.Empty(t, windows.Window(ctx, subject).Stream, "no stream stores the subject when the list is read")
	cfg.Windows = windows
	events := b.createStream(t, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"events.>"}})
	b.target = events
	require.NoError(t, b.ns.GlobalAccount().AddMapping(subject, "events.acme.elsewhere"))

	id := b.seedItem(t, "search.index_update", "rev38-made-since-mapped", nats.Header{dlq.HeaderOriginalSubject: {subject}}, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	w := replay.NewWorker(replay.New(b.db.Pool, cfg), b.js, b.auth, nil, replay.WorkerConfig{Poll: 20 * time.Millisecond, Retry: 20 * time.Millisecond}, b.log)
	wait.Until(t, "the job judged", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		switch b.job(t, req.ID, id).State {
		case "pending", "claimed", "deferred", "unknown":
			return false
		}
		return true
	})
	j := b.job(t, req.ID, id)
	require.Len(t, onSubjectMsgs(t, events, "events.acme.elsewhere"), 1, "the broker stored it under the mapped subject")
	require.Empty(t, onSubjectMsgs(t, events, subject))
	require.Equal(t, "needs_reconciliation", j.State, j.Result)
	require.Contains(t, j.Result, `under subject "events.acme.elsewhere"`)
}

// TestRev38PublishTheDatabaseLostIsLeftForAPerson: a PostgreSQL failover
// lost the commits of a worker's gate and record after its publish was
// stored: on the new primary the job is about to make its first publish
// ever again, with none on record. The broker answers Duplicate and keeps
// that publish (this item's and request's replay headers, the approved
// payload, the subject). The job goes to a person, not deferred to be
// published again once the window has passed (a second effect). Here the
// lost publish is made by hand, as the lost worker had made it.
func TestRev38PublishTheDatabaseLostIsLeftForAPerson(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	const msgID = "rev38-lost-commit"
	payload := `{"doc":"rev38"}`
	id := b.seedItem(t, "search.index_update", msgID, nil, payload)
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	var subject string
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT subject FROM replay_items WHERE request_id = $1`, req.ID).Scan(&subject))
	lost := nats.NewMsg(subject)
	lost.Data = []byte(payload)
	lost.Header.Set(dlq.HeaderNatsMsgID, msgID)
	lost.Header.Set(replay.HeaderReplayOf, strconv.FormatInt(id, 10))
	lost.Header.Set(replay.HeaderReplayRequest, strconv.FormatInt(req.ID, 10))
	_, err := b.js.PublishMsg(ctx, lost)
	require.NoError(t, err)

	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	wait.Until(t, "the job judged", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		switch b.job(t, req.ID, id).State {
		case "pending", "claimed", "unknown":
			return false
		}
		return true
	})
	j := b.job(t, req.ID, id)
	require.Equal(t, "needs_reconciliation", j.State, j.Result)
	require.Contains(t, j.Result, "a publish of this replay the database has no record of")
	require.Equal(t, 1, b.publishedAs(t, msgID), "nothing published again")
}
