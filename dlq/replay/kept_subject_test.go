package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestDuplicateAfterUnknownInATransformingStream: the target stream stores
// what is published to app.> under t.> (a subject transform). A retry
// after a lost PubAck is answered Duplicate by the first publish, stored
// under the transformed subject: that is where a publish to the job's
// subject is stored, so it is this replay's own, and the item is
// replayed once.
func TestDuplicateAfterUnknownInATransformingStream(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"},
		SubjectTransform: &jetstream.SubjectTransformConfig{Source: "app.>", Destination: "t.>"}})
	require.NoError(t, err)

	const msgID = "kept-transformed"
	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	loseAcks(w, 1)
	_, err = w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, "unknown", b.job(t, req.ID, id).State)

	wait.Until(t, "the retry", time.Minute, func() bool {
		_, err := w.RunOnce(ctx)
		require.NoError(t, err)
		return b.job(t, req.ID, id).State != "unknown"
	})
	j := b.job(t, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.True(t, j.Duplicate, "the broker answered Duplicate")
	assert.Contains(t, j.Result, "this replay's own earlier publish")
	var subjects []string
	for _, m := range streamMsgs(t, b.target) {
		if m.Header.Get(dlq.HeaderNatsMsgID) == msgID {
			subjects = append(subjects, m.Subject)
		}
	}
	assert.Equal(t, []string{"t.acme.search.index_update"}, subjects, "stored once, under the transformed subject")
}
