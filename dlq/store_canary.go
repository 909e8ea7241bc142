package dlq

import (
	"context"
	"errors"
	"math/rand/v2"
)

// canaryStream is the source stream of the canary dead letter; no NATS
// stream is named so by the console.
const canaryStream = "quarantine-canary"

// errCanaryRolledBack ends the canary's transaction so that nothing of it
// stays.
var errCanaryRolledBack = errors.New("the canary dead letter is never kept")

// Canary stores a dead letter of its own (one tiny record, today's, a
// source key drawn at random so that two replicas' canaries never wait for
// each other) the way Insert stores a batch (the ids, the COPY, the
// counters' deltas), in a transaction it then rolls back, and returns the
// error that stopped it, if any: whether PostgreSQL takes a dead letter at
// all just now. A batch that keeps failing for a reason not its data (Busy)
// asks it (storeBatch): when even the canary fails Busy or Unreachable,
// PostgreSQL is busy for everyone (a lock on dead_letters, memory, a
// statement timeout every insert meets) and the batch is retried whole;
// when it works, something in the batch is what fails, and the batch is
// narrowed down to it. It meets the locks, the triggers and the limits an
// insert meets, which a plain ping would not (a table locked by someone
// else answers a SELECT 1 at once), and no record of the batch, which may
// be the one failing: nothing of it is kept, counted or announced.
func (s *Store) Canary(ctx context.Context) error {
	rec := ParseDLQ(canaryStream, Received{Subject: canaryStream + ".canary.canary", Stream: canaryStream,
		Seq: rand.Uint64N(1 << 62), Time: s.clock(), Data: []byte("canary")})
	err := s.inTx(ctx, func(tx boundedTx) error {
		if _, _, err := copyTx(ctx, tx, copyRows([]Record{rec}, s.clock()), false); err != nil {
			return err
		}
		return errCanaryRolledBack
	})
	if errors.Is(err, errCanaryRolledBack) {
		return nil
	}
	return err
}
