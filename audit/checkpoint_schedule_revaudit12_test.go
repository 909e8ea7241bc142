package audit_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/testfactory/wait"
)

// TestRevAudit12ForgedFutureCheckpointStopsTheSchedule: anyone with the
// runtime role's credentials may insert a checkpoint (the trigger of
// migration 0025 checks its seq and hash, not its signature nor its at).
// One at the head with a garbage signature dated in the year 2999 is
// what the scheduler reads as "the newest checkpoint"
// (selectCheckpointState, checkpointDue): the head is "signed", and
// afterwards "now - last.at >= Interval" is never true, so no interval
// checkpoint is signed again; entries stay unsigned until Every (1000 by
// default) of them have piled up. TestForgedCheckpointRefused closed the
// same hole for a seq past the head; the date is the same lever. The
// audit page shows the forgery as "Last signed checkpoint … signed
// 2999-01-01" (audit.LatestCheckpoint does not check the signature).
func TestRevAudit12ForgedFutureCheckpointStopsTheSchedule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	entries := appendAll(t, b, event("one"), event("two"))
	head := entries[len(entries)-1]
	// Migration 0054 now refuses a checkpoint dated ahead of the clock
	// (TestFixAudit12FutureCheckpointRefused); one inserted before it is
	// still there, and the schedule must not stop at it either.
	b.db.ExecWithoutTrigger(t, audit.CheckpointLockKey, "audit_checkpoints", "audit_checkpoints_not_ahead", `INSERT INTO audit_checkpoints (seq, hash, at, reason, key_id, public_key, signature)
        VALUES ($1, $2, '2999-01-01T00:00:00Z', 'interval', 'forged', sha256('p'), sha512('s'))`, head.Seq, head.Hash)

	signer := newSigner(t)
	cp := audit.NewCheckpointer(b.db.Pool, signer, audit.CheckpointConfig{Every: 1000, Interval: 50 * time.Millisecond, Poll: 10 * time.Millisecond},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, stop := context.WithCancel(b.ctx)
	done := make(chan struct{})
	go func() { cp.Run(ctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	three := appendAll(t, b, event("three"))[0]
	keys := audit.NewKeySet(signer.PublicKey())
	wait.For(t, fmt.Sprintf("a checkpoint of this console's at seq %d or later (Interval 50 ms)", three.Seq), 10*time.Second, func() error {
		var found bool
		err := b.db.Pool.QueryRow(b.ctx, `SELECT EXISTS (SELECT 1 FROM audit_checkpoints WHERE seq >= $1 AND key_id = $2)`,
			three.Seq, signer.KeyID()).Scan(&found)
		if err != nil {
			return wait.Stop(err)
		}
		if !found {
			latest, _, _ := audit.LatestCheckpoint(b.ctx, b.db.Pool)
			return fmt.Errorf("%w: the newest checkpoint is the forged one at seq %d dated %s", wait.ErrNotYet, latest.Seq, latest.At)
		}
		return nil
	})
	res, err := audit.Verify(b.ctx, b.db.Pool, audit.VerifyOptions{Keys: keys})
	require.NoError(t, err)
	assert.True(t, res.OK(), res.String())
}
