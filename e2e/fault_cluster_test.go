package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestIngestOnThreeNodeClusterSurvivesNodeRestart runs two console
// replicas on one database against a three-node JetStream cluster (three
// nats-server processes on loopback) with DLQ_REPLICAS=3; both pull from
// the one durable ingest consumer. While dead letters flow in, the node
// leading the DLQ stream is stopped; ingest goes on with the other two (a
// new leader is elected), the node is started again on its store and
// catches up, and every message is in the stream once and in the database
// as one row.
func TestIngestOnThreeNodeClusterSurvivesNodeRestart(t *testing.T) {
	t.Parallel()
	const count = 10000
	c := startNATSCluster(t, 3)
	s := newStack(t, stackConfig{NATSURL: c.URLs(), Env: []string{"DLQ_REPLICAS=3"}, Replicas: 2})
	consoles := []*proc{s.Consoles[0].proc, s.Consoles[1].proc}
	ctx := testContext(t, 5*time.Minute)
	_, js := connectNATS(t, c.URLs(), "e2e-check")

	info, err := streamInfo(ctx, js, "DLQ")
	require.NoError(t, err)
	require.Equal(t, 3, info.Config.Replicas, "the console created the DLQ stream with 3 replicas")
	require.NotNil(t, info.Cluster)
	require.Len(t, info.Cluster.Replicas, 2, "a leader and two followers")

	l := startLoad(t, c.URLs(), loadSpec{Tenant: "globex", ItemType: "analytics.event", Count: count, Rate: 1500})
	before := waitRows(t, s.DB, l.RunID, count/10, time.Minute, consoles...)
	info, err = streamInfo(ctx, js, "DLQ")
	require.NoError(t, err)
	leader := c.Node(t, info.Cluster.Leader)
	leader.Stop(t)
	require.Less(t, before.Rows, int64(count), "the node must stop while ingest is running")
	t.Logf("stopped %s (DLQ leader) after %d rows, %d of %d published", leader.Name, before.Rows, l.Published(), count)

	// Ingest goes on with two of three nodes.
	during := waitRows(t, s.DB, l.RunID, before.Rows+count/10, 2*time.Minute, consoles...)
	require.Less(t, during.Rows, int64(count), "ingest made progress while the node was down, and was not finished yet")
	t.Logf("%d rows with %s down", during.Rows, leader.Name)

	leader.Start(t)
	c.waitMetaLeader(t)
	l.Wait(t, 2*time.Minute)
	waitRows(t, s.DB, l.RunID, count, 3*time.Minute, consoles...)
	requireExactlyOnce(t, ctx, s.DB, js, l)
	s.Console.AuditVerify(t) // every fault ends with an intact audit chain
	for _, cons := range s.Consoles {
		t.Logf("%s stored %.0f rows", cons.proc.name, cons.Metric(t, "quarantine_ingested_total"))
	}

	// The restarted node caught up: all three replicas current again.
	wait.For(t, "three current DLQ replicas", time.Minute, func() error {
		info, err := streamInfo(ctx, js, "DLQ")
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
			return fmt.Errorf("cluster %+v: %w", info.Cluster, wait.ErrNotYet)
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline {
				return fmt.Errorf("replica %s current=%v offline=%v: %w", r.Name, r.Current, r.Offline, wait.ErrNotYet)
			}
		}
		return nil
	})
}
