package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ingest faults of issue 6: 20,000 dead letters published at a steady rate
// (so ingest is still running when the fault hits), a fault once a tenth
// of them are rows, and then invariants 1 and 2: the DLQ stream holds each
// message once and the database exactly one row per message; the audit
// chain verifies.
const (
	faultLoadCount = 20000
	faultLoadRate  = 4000 // per second: publishing lasts about 5 s
	faultAt        = faultLoadCount / 10
)

func faultLoad() loadSpec {
	return loadSpec{Tenant: "acme", ItemType: "search.index_update", Count: faultLoadCount, Rate: faultLoadRate}
}

// TestIngestSurvivesPostgresRestart restarts PostgreSQL (a private cluster,
// fast shutdown: every connection cut, open transactions rolled back)
// while the console ingests; the ingester retries the failed batches and
// acks only what committed.
func TestIngestSurvivesPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := startPrivatePostgres(t)
	s := newStack(t, stackConfig{DatabaseURL: pg.URL})
	ctx := testContext(t, 5*time.Minute)
	_, js := connectNATS(t, s.NATSURL, "e2e-check")

	l := startLoad(t, s.NATSURL, faultLoad())
	before := waitRows(t, s.DB, l.RunID, faultAt, time.Minute, s.Console.proc)
	pg.Restart(t)
	requireDuringIngest(t, before, l)

	l.Wait(t, 2*time.Minute)
	waitRows(t, s.DB, l.RunID, faultLoadCount, 2*time.Minute, s.Console.proc)
	requireExactlyOnce(t, ctx, s.DB, js, l)
	s.Console.AuditVerify(t) // every fault ends with an intact audit chain
	assert.Positive(t, s.Console.Metric(t, "quarantine_ingest_store_errors_total"),
		"the restart hit the ingester: some batch failed and was retried")
}

// TestIngestSurvivesNATSRestart stops the nats-server process (graceful,
// file storage kept) while the console ingests and the producer publishes,
// and starts it again on the same port and store. Producer retries carry
// the same message id, so JetStream stores each message once.
func TestIngestSurvivesNATSRestart(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	ctx := testContext(t, 5*time.Minute)
	_, js := connectNATS(t, s.NATSURL, "e2e-check")

	l := startLoad(t, s.NATSURL, faultLoad())
	before := waitRows(t, s.DB, l.RunID, faultAt, time.Minute, s.Console.proc)
	s.NATS.Restart(t)
	requireDuringIngest(t, before, l)

	l.Wait(t, 2*time.Minute)
	waitRows(t, s.DB, l.RunID, faultLoadCount, 2*time.Minute, s.Console.proc)
	requireExactlyOnce(t, ctx, s.DB, js, l)
	s.Console.AuditVerify(t) // every fault ends with an intact audit chain
	s.Console.waitReady(t)   // still serving, reconnected
}

// TestIngestSurvivesConsoleKill kills the console with SIGKILL while it
// ingests (batches in flight, some stored and not acked, some received
// and not stored) and starts it again on the same database and NATS.
// Unacked messages come back after the consumer's ack wait (1 minute), and
// the ones already stored do not make a second row.
func TestIngestSurvivesConsoleKill(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{Env: []string{"INGEST_ACK_WAIT=5s"}}) // what the killed console held comes back in 5 s
	ctx := testContext(t, 5*time.Minute)
	_, js := connectNATS(t, s.NATSURL, "e2e-check")

	l := startLoad(t, s.NATSURL, faultLoad())
	before := waitRows(t, s.DB, l.RunID, faultAt, time.Minute, s.Console.proc)
	s.Console.Kill(t)
	requireDuringIngest(t, before, l)
	s.Console.Start(t)

	l.Wait(t, 2*time.Minute)
	waitRows(t, s.DB, l.RunID, faultLoadCount, 3*time.Minute, s.Console.proc)
	requireExactlyOnce(t, ctx, s.DB, js, l)
	s.Console.AuditVerify(t) // every fault ends with an intact audit chain
}

// requireDuringIngest fails the test when the fault came too late to
// prove anything: everything was already stored.
func requireDuringIngest(t *testing.T, before dlqRows, l *load) {
	t.Helper()
	require.Less(t, before.Rows, int64(faultLoadCount), "the fault must hit while ingest is running")
	t.Logf("fault after %d rows, %d of %d published", before.Rows, l.Published(), faultLoadCount)
}
