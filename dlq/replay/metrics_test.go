package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestReplayMetricsSayWhatWaits: the replay series count, from the
// database, the open requests by status, the jobs due that no worker
// holds (here no worker runs), and the items that wait for a person.
func TestReplayMetricsSayWhatWaits(t *testing.T) {
	b := setupReplay(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	reg.MustRegister(replay.NewMetricsCollector(b.db.Pool, b.log))
	expect := func(running, waiting, unsettled int) {
		t.Helper()
		want := fmt.Sprintf(`
# HELP quarantine_replay_requests_open Replay requests not yet ended, by status (draft, pending_approval, approved, running).
# TYPE quarantine_replay_requests_open gauge
quarantine_replay_requests_open{status="approved"} %d
quarantine_replay_requests_open{status="draft"} 0
quarantine_replay_requests_open{status="pending_approval"} 0
quarantine_replay_requests_open{status="running"} %d
`, 1-running, running)
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "quarantine_replay_requests_open"))
		require.Equal(t, float64(waiting), gauge(t, reg, "quarantine_replay_jobs_waiting"))
		require.Equal(t, float64(unsettled), gauge(t, reg, "quarantine_replay_items_needing_reconciliation"))
	}

	letters := make([]testfactory.Letter, 3)
	for i := range letters {
		letters[i] = testfactory.Letter{Tenant: "acme", ItemType: "search.index_update", MsgID: fmt.Sprintf("metric-%d", i)}
	}
	ids := testfactory.DeadLetters(t, b.db.Pool, letters...)
	batch, _ := testfactory.Draft(t, b.replays, oncall, ids...)
	reqs, err := b.replays.Submit(ctx, batch, oncall, replay.SubmitInput{Reason: "reindex"}, quarantine.RequestMeta{})
	require.NoError(t, err)
	require.Len(t, reqs, 1)
	expect(0, 3, 0) // rebuildable: approved at submit, its 3 jobs due and nobody takes them

	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_requests SET status = 'running' WHERE id = $1`, reqs[0].ID)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'claimed', lease_until = now() + interval '1 minute'
        WHERE id = (SELECT min(id) FROM replay_jobs WHERE request_id = $1)`, reqs[0].ID)
	require.NoError(t, err)
	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET state = 'needs_reconciliation'
        WHERE id = (SELECT max(id) FROM replay_jobs WHERE request_id = $1)`, reqs[0].ID)
	require.NoError(t, err)
	expect(1, 1, 1) // one held under a live lease, one waiting for a person

	_, err = b.db.Pool.Exec(ctx, `UPDATE replay_jobs SET lease_until = now() - interval '1 second' WHERE request_id = $1 AND state = 'claimed'`, reqs[0].ID)
	require.NoError(t, err)
	expect(1, 2, 1) // a lease that ran out: nobody holds it any more
}

// gauge is the value of the one unlabelled gauge name reg gathers.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			require.Len(t, mf.GetMetric(), 1)
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s not gathered", name)
	return 0
}
