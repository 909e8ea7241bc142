package dlq

import (
	"bytes"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevIngest10LostRaceRecordNeverIsolated: a batch whose insert lost a
// lock race (LostRace: 40P01, 40001) is tried again without bound
// (storeBatch's LostRace branch: at once, then 10 ms doubling to 5 s, for
// ever); it is never probed or bisected, so a record that loses every time
// (a trigger standing for whatever keeps taking its locks in a circle
// with it) keeps its batchmates unstored and unacked for good, the batch
// held in progress indefinitely. The retry has no bound: after some
// attempts the batch should be narrowed down like a busy one, the
// batchmates stored and the loser deferred.
func TestRevIngest10LostRaceRecordNeverIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.failInsertOf(t, "test_always_loses", string(bytes.Repeat([]byte("L"), 500)), "40P01", "deadlock detected")
	cfg := IngestConfig{Workers: 1, MaxWait: 200 * time.Millisecond, RetryUnstorable: time.Minute}
	b.start(t, cfg, nil).stop() // makes the stream; the three dead letters then come in one batch

	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("one")})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: bytes.Repeat([]byte("L"), 500)})
	publish(t, b.js, &nats.Msg{Subject: "dlq.acme.search.index_update", Data: []byte("two")})
	r := b.start(t, cfg, nil)

	wait.Until(t, "the batch lost its race many times", time.Minute, func() bool {
		return sumCounterVec(t, r.metrics.StoreConflicts) >= 10
	})
	wait.Until(t, "the two dead letters that lose no race stored", 30*time.Second, func() bool {
		return countRows(t, b.db.Pool, "payload IN ('one'::bytea, 'two'::bytea)") == 2
	})
}
