package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevFixes6EmptyTransformDestination: the target stream's config holds
// a subject transform with a source and no destination. The broker accepts
// it (ValidateMapping passes an empty destination) and applies no transform
// (NewSubjectTransform returns nil, nil). A retry after a lost PubAck is
// answered Duplicate by the first publish; reading it back (kept, storesAs)
// must tell it is stored where a publish to the job's subject is, and the
// item is replayed once. On lead storesAs calls Match on the nil transform
// NewSubjectTransform returned, and the worker panics.
func TestRevFixes6EmptyTransformDestination(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()
	_, err := b.js.UpdateStream(ctx, jetstream.StreamConfig{Name: "APP", Subjects: []string{"app.>"},
		SubjectTransform: &jetstream.SubjectTransformConfig{Source: "app.>", Destination: ""}})
	require.NoError(t, err, "the broker takes a transform without a destination")
	st, err := b.js.Stream(ctx, "APP")
	require.NoError(t, err)
	require.NotNil(t, st.CachedInfo().Config.SubjectTransform, "the broker keeps it in the stream's config")

	const msgID = "revfixes6-empty-dest"
	id := b.seedItem(t, "search.index_update", msgID, nil, "{}")
	req := b.request(t, []int64{id}, replay.SubmitInput{})
	require.Equal(t, replay.StatusApproved, req.Status)
	w := b.worker(t, replay.WorkerConfig{Retry: 20 * time.Millisecond})
	runOnce := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("the worker panicked: %v", p)
			}
		}()
		_, err = w.RunOnce(ctx)
		return err
	}
	loseAcks(w, 1)
	require.NoError(t, runOnce())
	require.Equal(t, "unknown", b.job(t, req.ID, id).State)

	wait.Until(t, "the retry", time.Minute, func() bool {
		require.NoError(t, runOnce())
		return b.job(t, req.ID, id).State != "unknown"
	})
	j := b.job(t, req.ID, id)
	assert.Equal(t, "replayed", j.State, j.Result)
	assert.Contains(t, j.Result, "this replay's own earlier publish")
}
