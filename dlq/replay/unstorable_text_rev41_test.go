package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
)

// TestRev41UnstorableTextFromOutsideIsRecorded: a revalidation service's
// reason, a broker's refusal and a PubAck's stream name reach the job's
// result and stream as they came. One carrying a NUL or bytes that are not
// UTF-8 made PostgreSQL refuse the record at every try: the worker kept
// the outcome, claimed nothing else for its tries, let the job go still
// claimed, and the next claim met the same answer, for ever, with no
// person told. Each is now recorded, cleaned (U+FFFD for each bad byte),
// and the worker goes on to the next job.
func TestRev41UnstorableTextFromOutsideIsRecorded(t *testing.T) {
	t.Parallel()
	b := setupReplay(t)
	ctx := context.Background()

	t.Run("RevalidationReason", func(t *testing.T) {
		sub, err := b.nc.Subscribe("rev41.revalidate", func(m *nats.Msg) {
			_ = m.Respond([]byte(`{"allow": false, "reason": "revoked\u0000 at \u00ff"}`))
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		id := b.seedItem(t, "accounts.permission_grant", "rev41-reval", nats.Header{dlq.HeaderPrincipal: {"user:7"}}, `{"grant":"admin"}`)
		req := b.request(t, []int64{id}, replay.SubmitInput{})
		d, err := b.replays.Approve(ctx, req.ID, approver1, replay.ApproveInput{IntentHex: req.IntentHex()}, quarantine.RequestMeta{})
		require.NoError(t, err)
		require.True(t, d.Ready)
		w := b.worker(t, replay.WorkerConfig{Batch: 1}, replay.NewNATSRevalidator(b.nc, "rev41.revalidate", 2*time.Second))
		_, err = w.RunOnce(ctx)
		require.NoError(t, err, "the record is refused by PostgreSQL")
		j := b.job(t, req.ID, id)
		assert.Equal(t, "blocked", j.State, j.Result)
		assert.Contains(t, j.Result, "revalidation denied: revoked\uFFFD at \u00ff")
	})

	for name, answer := range map[string]func(a *jetstream.PubAck) (*jetstream.PubAck, error){
		"BrokerRefusal": func(*jetstream.PubAck) (*jetstream.PubAck, error) {
			return nil, &jetstream.APIError{Code: 400, ErrorCode: 10999, Description: "refused\x00 \xff"}
		},
		"PubAckStream": func(a *jetstream.PubAck) (*jetstream.PubAck, error) {
			forged := *a
			forged.Stream = "AP\x00P"
			return &forged, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			id := b.seedItem(t, "search.index_update", "rev41-"+name, nil, `{"n":1}`)
			req := b.request(t, []int64{id}, replay.SubmitInput{})
			w := b.worker(t, replay.WorkerConfig{Batch: 1})
			w.OnAck(func(_ int64, a *jetstream.PubAck, err error) (*jetstream.PubAck, error) {
				if err != nil || a == nil {
					return a, err
				}
				return answer(a)
			})
			_, err := w.RunOnce(ctx)
			require.NoError(t, err, "the record is refused by PostgreSQL")
			j := b.job(t, req.ID, id)
			assert.NotEqual(t, "claimed", j.State, j.Result)
			assert.NotContains(t, j.Result, "\x00")
			assert.Contains(t, j.Result, "\uFFFD", "the bad bytes are shown as replacement characters")
		})
	}
}
